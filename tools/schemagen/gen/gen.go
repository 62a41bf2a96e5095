package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/encoding/jsonschema"
)

// Schema is one exported contract.
type Schema struct {
	// Package is the CUE package directory relative to the CUE module root, e.g. "workload/v1".
	Package string
	// Definition is the exported definition, e.g. "#Workload".
	Definition string
	// ID is the schema's $id.
	ID string
	// Name is the contract name with its major version, e.g. "workload.v1".
	Name string
	// File is the output file name, e.g. "workload.v1.schema.json".
	File string
	// JSON is the exported schema, indented, with a trailing newline.
	JSON []byte
	// Value is the CUE definition, for validating documents against CUE directly.
	Value cue.Value
}

var idPattern = regexp.MustCompile(`^https://qualkit\.dev/schemas/([a-z][a-z0-9-]*\.v[0-9]+)\.schema\.json$`)

// Generate loads every package of the CUE module at cueDir and exports each definition
// that carries a @jsonschema(id=...) attribute. The result is sorted by Name.
func Generate(cueDir string) ([]Schema, error) {
	pkgs, err := packageDirs(cueDir)
	if err != nil {
		return nil, err
	}
	ctx := cuecontext.New()
	var out []Schema
	seen := map[string]string{}
	for _, dir := range pkgs {
		insts := load.Instances([]string{"./" + dir}, &load.Config{Dir: cueDir})
		if len(insts) != 1 || insts[0].Err != nil {
			return nil, fmt.Errorf("load cue package %s: %v", dir, insts[0].Err)
		}
		pkg := ctx.BuildInstance(insts[0])
		if err := pkg.Err(); err != nil {
			return nil, fmt.Errorf("build cue package %s: %w", dir, err)
		}
		it, err := pkg.Fields(cue.Definitions(true))
		if err != nil {
			return nil, fmt.Errorf("list definitions of %s: %w", dir, err)
		}
		for it.Next() {
			attr := it.Value().Attribute("jsonschema")
			if attr.Err() != nil {
				continue
			}
			id, found, err := attr.Lookup(0, "id")
			if err != nil || !found {
				return nil, fmt.Errorf("%s %s: @jsonschema needs id=\"...\"", dir, it.Selector())
			}
			m := idPattern.FindStringSubmatch(id)
			if m == nil {
				return nil, fmt.Errorf("%s %s: $id %q does not match %s", dir, it.Selector(), id, idPattern)
			}
			if prev, dup := seen[m[1]]; dup {
				return nil, fmt.Errorf("%s %s: contract %s already exported by %s", dir, it.Selector(), m[1], prev)
			}
			seen[m[1]] = dir
			s := Schema{Package: dir, Definition: it.Selector().String(), ID: id, Name: m[1], File: m[1] + ".schema.json", Value: it.Value()}
			if s.JSON, err = export(it.Value(), id); err != nil {
				return nil, fmt.Errorf("export %s %s: %w", dir, s.Definition, err)
			}
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if len(out) == 0 {
		return nil, fmt.Errorf("no definition with @jsonschema(id=...) under %s", cueDir)
	}
	return out, nil
}

// packageDirs lists the directories under root (relative, slash-separated) that hold .cue files,
// skipping cue.mod.
func packageDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "cue.mod" {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(p) != ".cue" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if len(dirs) == 0 || dirs[len(dirs)-1] != rel {
			dirs = append(dirs, rel)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("scan cue module %s: %w", root, err)
	}
	return dirs, nil
}

func export(v cue.Value, id string) ([]byte, error) {
	expr, err := jsonschema.Generate(v, nil)
	if err != nil {
		return nil, err
	}
	raw, err := cuecontext.New().BuildExpr(expr).MarshalJSON()
	if err != nil {
		return nil, err
	}
	if err := Lint(raw); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return nil, err
	}
	// Insert $id right after $schema, keeping the generator's key order.
	const schemaLine = "{\n  \"$schema\": \"https://json-schema.org/draft/2020-12/schema\",\n"
	b := buf.Bytes()
	if !bytes.HasPrefix(b, []byte(schemaLine)) {
		return nil, errors.New("generated schema does not start with the draft 2020-12 $schema")
	}
	idLine, _ := json.Marshal(id)
	out := append([]byte(schemaLine+"  \"$id\": "), idLine...)
	out = append(out, ",\n"...)
	out = append(out, b[len(schemaLine):]...)
	return append(out, '\n'), nil
}

// ErrLossy reports an exported schema that lost a constraint of its CUE source.
var ErrLossy = errors.New("lossy translation")

// re2Only matches regular expression syntax that Go accepts but ECMA-262 (ajv) does not.
var re2Only = regexp.MustCompile(`\(\?[imsU-]+[):]|\\[zAQE]|\(\?P<`)

// Lint reports the losses of cue's JSON Schema export that are visible in the output.
func Lint(schemaJSON []byte) error {
	var doc any
	if err := json.Unmarshal(schemaJSON, &doc); err != nil {
		return fmt.Errorf("parse generated schema: %w", err)
	}
	var problems []string
	var walk func(n any, ptr string, inIf bool)
	walk = func(n any, ptr string, inIf bool) {
		switch n := n.(type) {
		case bool:
			parent := ptr[strings.LastIndex(ptr, "/")+1:]
			if n && parent != "additionalProperties" && parent != "uniqueItems" {
				problems = append(problems, ptr+": schema 'true' accepts anything")
			}
		case []any:
			for i, v := range n {
				walk(v, fmt.Sprintf("%s/%d", ptr, i), inIf)
			}
		case map[string]any:
			if c, ok := n["const"].(map[string]any); ok && len(c) == 0 {
				problems = append(problems, ptr+": const {} rejects every non-empty object")
			}
			if _, hasProps := n["properties"]; hasProps && !inIf {
				if _, closed := n["additionalProperties"]; !closed {
					problems = append(problems, ptr+": object with properties is not closed")
				}
			}
			if p, ok := n["pattern"].(string); ok && re2Only.MatchString(p) {
				problems = append(problems, ptr+": pattern uses RE2-only syntax: "+p)
			}
			keys := make([]string, 0, len(n))
			for k := range n {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if k == "const" || k == "enum" || k == "description" {
					continue
				}
				walk(n[k], ptr+"/"+k, inIf || k == "if")
			}
		}
	}
	walk(doc, "#", false)
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrLossy, strings.Join(problems, "; "))
	}
	return nil
}

// Write writes every schema into dir (created if needed), and removes *.schema.json files
// there that no contract produces any more.
func Write(schemas []Schema, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	want := map[string]bool{}
	for _, s := range schemas {
		want[s.File] = true
		if err := os.WriteFile(filepath.Join(dir, s.File), s.JSON, 0o644); err != nil {
			return fmt.Errorf("write schema %s: %w", s.File, err)
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	if err != nil {
		return err
	}
	for _, f := range old {
		if !want[filepath.Base(f)] {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("remove stale schema %s: %w", f, err)
			}
		}
	}
	return nil
}

// Stale lists the files in dir that differ from, lack, or are not among the generated schemas.
func Stale(schemas []Schema, dir string) ([]string, error) {
	var stale []string
	want := map[string]bool{}
	for _, s := range schemas {
		want[s.File] = true
		got, err := os.ReadFile(filepath.Join(dir, s.File))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("read schema %s: %w", s.File, err)
		}
		if !bytes.Equal(got, s.JSON) {
			stale = append(stale, filepath.Join(dir, s.File))
		}
	}
	old, err := filepath.Glob(filepath.Join(dir, "*.schema.json"))
	if err != nil {
		return nil, err
	}
	for _, f := range old {
		if !want[filepath.Base(f)] {
			stale = append(stale, f)
		}
	}
	return stale, nil
}
