package schemas_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// contractValueTypes selects the generated enums whose values are contract vocabulary no code may
// spell as a bare string: statuses, verdicts and kinds. (Other enums, such as units or
// aggregations, share their values with ordinary words and flags; their fields are typed, so the
// compiler already stops a stray string there.)
var contractValueTypes = regexp.MustCompile(`(Status|Verdict|Kind)$`)

// schemaName matches a contract name or schema id constant's value.
var schemaName = regexp.MustCompile(`^(qualkit\.)?[a-z][a-z0-9-]*\.v[0-9]+$`)

// foreignMarker, in a comment on the literal's line, says the literal spells a word of another
// format (the OpenAI wire protocol, Kiln's records, an in-toto link) that happens to equal a
// contract value; the comment says which format: `"usage" // not a contract value: OpenAI key`.
const foreignMarker = "not a contract value:"

// forbiddenLiterals reads the generated enums and contract names of package contract: value ->
// the constants that hold it.
func forbiddenLiterals(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	names, err := filepath.Glob(filepath.Join("contract", "zz_generated_*.go"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no generated code in contract/: %v", err)
	}
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	out := map[string][]string{}
	for _, f := range files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, s := range gd.Specs {
				vs := s.(*ast.ValueSpec)
				typ := ""
				if id, ok := vs.Type.(*ast.Ident); ok {
					typ = id.Name
				}
				for i, n := range vs.Names {
					if i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					v, _ := strconv.Unquote(lit.Value)
					if v != "" && (contractValueTypes.MatchString(typ) || (typ == "" && schemaName.MatchString(v))) {
						out[v] = append(out[v], "contract."+n.Name)
					}
				}
			}
		}
	}
	if len(out) < 50 {
		t.Fatalf("found only %d contract values in the generated code; the scan is broken", len(out))
	}
	return out
}

// TestNoContractLiterals: outside generated code and tests, no Go file of the workspace spells a
// contract status, verdict, kind, contract name or schema id as a bare string literal; it uses the
// generated constant, so a contract change is a compile error, not a silent mismatch.
func TestNoContractLiterals(t *testing.T) {
	forbidden := forbiddenLiterals(t)
	var found []string
	for _, mod := range []string{"schemas", "runner", "attest", "verify", "tools"} {
		root := filepath.Join("..", mod)
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() {
				if n := d.Name(); n == "testdata" || strings.HasPrefix(n, ".") || n == "node_modules" {
					return filepath.SkipDir
				}
				// The generator writes the constants from cue/: it cannot use them (it must build
				// while the generated code is stale or broken), and the words it spells are
				// those of Go names and CUE, not values it emits as evidence.
				if filepath.ToSlash(p) == "../tools/schemagen" {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel := filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))
			hits, err := scanSource(rel, src, forbidden)
			if err != nil {
				return err
			}
			found = append(found, hits...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	sort.Strings(found)
	if len(found) > 0 {
		t.Errorf("%d contract literals outside generated code:\n%s", len(found), strings.Join(found, "\n"))
	}
}

// scanSource lists the contract literals in one Go file (none for generated code).
func scanSource(rel string, src []byte, forbidden map[string][]string) ([]string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	if ast.IsGenerated(f) {
		return nil, nil
	}
	foreign := map[int]bool{}
	for _, cg := range f.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, foreignMarker) {
				foreign[fset.Position(c.Pos()).Line] = true
			}
		}
	}
	var found []string
	skip := map[*ast.BasicLit]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field:
			if n.Tag != nil {
				skip[n.Tag] = true
			}
		case *ast.ImportSpec:
			skip[n.Path] = true
		case *ast.CallExpr:
			// A JSON pointer's segments (the arguments of ptr(...), as schemas/rules builds
			// pointers) are member names of a document, never its values.
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "ptr" {
				for _, a := range n.Args {
					if lit, ok := a.(*ast.BasicLit); ok {
						skip[lit] = true
					}
				}
			}
		case *ast.BasicLit:
			if n.Kind != token.STRING || skip[n] {
				return true
			}
			v, err := strconv.Unquote(n.Value)
			if err != nil || foreign[fset.Position(n.Pos()).Line] {
				return true
			}
			if cs, ok := forbidden[v]; ok {
				found = append(found, fmt.Sprintf("%s: %q: use %s", fset.Position(n.Pos()), v, strings.Join(cs, " or ")))
			}
		}
		return true
	})
	return found, nil
}

// TestScanFindsContractLiterals: the scan can fail: it finds a status, a kind and a schema id in
// code (also as a call's argument), and passes generated code, struct tags, imports, marked foreign
// words and JSON pointer segments.
func TestScanFindsContractLiterals(t *testing.T) {
	forbidden := forbiddenLiterals(t)
	src := []byte("package x\n\nimport _ \"passed\"\n\ntype T struct{ A string `json:\"passed\"` }\n\nvar a, b, c = \"passed\", \"case_result\", \"qualkit.receipt.v1\"\nvar d = \"passed with notes\"\nvar e = \"usage\" // not a contract value: OpenAI key\nvar f = ptr(\"environment\", 0, \"driver\")\nvar g = fmt.Sprint(\"environment\")\n")
	hits, err := scanSource("x.go", src, forbidden)
	if err != nil {
		t.Fatal(err)
	}
	if len(hits) != 4 {
		t.Fatalf("found %d literals, want 4 (a, b, c, g):\n%s", len(hits), strings.Join(hits, "\n"))
	}
	gen := append([]byte("// Code generated by schemagen from cue/; DO NOT EDIT.\n\n"), src...)
	if hits, _ := scanSource("x.go", gen, forbidden); len(hits) != 0 {
		t.Fatalf("generated code flagged: %v", hits)
	}
}
