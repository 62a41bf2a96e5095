package gen

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
)

// ProvenanceKinds are the four ways the verifier treats a field of an evidence contract
// (docs/verification.md "Provenance"), in the order the docs explain them.
var ProvenanceKinds = []string{"derived", "bound", "observed", "descriptive"}

// FieldProvenance is one field of an evidence contract with its @prov attribute.
type FieldProvenance struct {
	// Path is the field's JSON-pointer-like path from the document root, "*" for every item of
	// a list and every value of a map, e.g. "/results/*/metrics/*/value".
	Path string
	// Kind is the attribute's first argument ("" when the field has no @prov).
	Kind string
	// Rule is the attribute's second argument: the formula, input or plausibility rules.
	Rule string
	// Gap is the attribute's gap="..." argument: what the verifier does not check yet.
	Gap string
	// Where is the CUE position of the field's declaration.
	Where string
}

// ContractProvenance is the provenance table of one evidence contract.
type ContractProvenance struct {
	// Name is the contract name, e.g. "receipt.v1".
	Name string
	// Fields are in document order (depth first, CUE field order).
	Fields []FieldProvenance
}

// BuildProvenance walks every contract whose definition carries @evidence() and lists each of its
// fields (objects, lists and leaves; the items of a list and the values of a map are "*") with
// its @prov(KIND, "RULE", gap="...") attribute. A field without @prov is listed with an empty
// Kind: the completeness test in schemas (TestEvidenceProvenanceComplete) names it, so that a new
// field without provenance breaks a test, never the generator.
func BuildProvenance(schemas []Schema) ([]ContractProvenance, error) {
	var out []ContractProvenance
	for _, s := range schemas {
		if !hasAttr(s.Value, "evidence") {
			continue
		}
		w := &provWalker{at: map[string]int{}}
		if err := w.walk(s.Value, "", 0); err != nil {
			return nil, fmt.Errorf("provenance of %s: %w", s.Name, err)
		}
		out = append(out, ContractProvenance{Name: s.Name, Fields: w.rows})
	}
	return out, nil
}

func hasAttr(v cue.Value, name string) bool {
	a := v.Attribute(name)
	return a.Err() == nil
}

// provAlternatives returns the struct and list alternatives of v: v itself, or the non-null
// members of a disjunction (#Readiness | null).
func provAlternatives(v cue.Value) []cue.Value {
	k := v.IncompleteKind()
	if isUnion(v) {
		// a discriminated union {contract!: ..., ...} & matchIf(...): the shared part and every
		// alternative
		var out []cue.Value
		_, args := v.Expr()
		for _, a := range args {
			if alts := matchIfAlternatives(a); len(alts) > 0 {
				out = append(out, alts...)
			} else if a.IncompleteKind() == cue.StructKind {
				out = append(out, a)
			}
		}
		return out
	}
	if k == cue.BottomKind {
		// a list constraint a definition cannot meet by itself ([...#X] & list.MinItems(1)): its
		// operands
		var out []cue.Value
		if op, _ := v.Expr(); op != cue.AndOp {
			if sel, ok := selected(v); ok {
				return provAlternatives(sel)
			}
			return nil
		}
		for _, a := range flattenAnd(v) {
			if a.IncompleteKind() != cue.BottomKind {
				out = append(out, provAlternatives(a)...)
			} else if sel, ok := selected(a); ok {
				out = append(out, provAlternatives(sel)...)
			}
		}
		return out
	}
	if k&(cue.StructKind|cue.ListKind) == 0 {
		return nil
	}
	if k == cue.StructKind || k == cue.ListKind {
		return []cue.Value{v}
	}
	op, args := v.Expr()
	if op != cue.OrOp {
		return nil
	}
	var out []cue.Value
	for _, a := range args {
		out = append(out, provAlternatives(a)...)
	}
	return out
}

// provWalker collects the rows of one contract; a path met again (the same field in two
// alternatives of a union) is one row, whose attribute is the first one found.
type provWalker struct {
	rows []FieldProvenance
	at   map[string]int
}

func (w *provWalker) walk(v cue.Value, path string, depth int) error {
	if depth > 16 {
		return fmt.Errorf("%s: nesting deeper than 16", path)
	}
	for _, alt := range provAlternatives(v) {
		if alt.IncompleteKind() == cue.ListKind {
			if elem, ok := listElem(alt); ok {
				if err := w.walk(elem, path+"/*", depth+1); err != nil {
					return err
				}
			}
			continue
		}
		it, err := alt.Fields(cue.Optional(true), cue.Patterns(true))
		if err != nil {
			return fmt.Errorf("%s: list fields: %w", path, err)
		}
		for it.Next() {
			f := it.Value()
			if it.Selector().ConstraintType() == cue.PatternConstraint {
				// a map: its values' fields, when its values are objects with named fields (a
				// #Config tree or a map of scalars is a leaf: the field that holds it carries its
				// provenance)
				if hasNamedFields(f) {
					if err := w.walk(f, path+"/*", depth+1); err != nil {
						return err
					}
				}
				continue
			}
			p := path + "/" + pointerEscape(it.Selector().Unquoted())
			fp, err := readProv(f)
			if err != nil {
				return fmt.Errorf("%s (%s): %w", p, f.Pos(), err)
			}
			fp.Path = p
			fp.Where = shortPos(f.Pos().String())
			if i, ok := w.at[p]; !ok {
				w.at[p] = len(w.rows)
				w.rows = append(w.rows, fp)
			} else if w.rows[i].Kind == "" {
				w.rows[i] = fp
			}
			if err := w.walk(f, p, depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// selected resolves a selector expression whose value cannot be evaluated on its own
// (driver.PathBody.paths, a constrained list): the field it selects from its struct.
func selected(v cue.Value) (cue.Value, bool) {
	if root, path := v.ReferencePath(); len(path.Selectors()) > 0 {
		f := root.LookupPath(path)
		return f, f.Exists()
	}
	op, args := v.Expr()
	if op != cue.SelectorOp || len(args) != 2 {
		return cue.Value{}, false
	}
	name, err := args[1].String()
	if err != nil {
		return cue.Value{}, false
	}
	sel := cue.Str(name)
	if strings.HasPrefix(name, "#") {
		sel = cue.Def(name)
	}
	f := args[0].LookupPath(cue.MakePath(sel))
	return f, f.Exists()
}

// hasNamedFields reports a value with a struct alternative that has named fields.
func hasNamedFields(v cue.Value) bool {
	for _, alt := range provAlternatives(v) {
		if alt.IncompleteKind() != cue.StructKind {
			continue
		}
		if it, err := alt.Fields(cue.Optional(true)); err == nil && it.Next() {
			return true
		}
	}
	return false
}

// listElem is the item type of a list: [...#X], also when constrained ([...#X] & list.MinItems(1)).
func listElem(v cue.Value) (cue.Value, bool) {
	if elem := v.LookupPath(cue.MakePath(cue.AnyIndex)); elem.Exists() {
		return elem, true
	}
	for _, a := range flattenAnd(v) {
		if a.IncompleteKind() != cue.ListKind {
			continue
		}
		if elem := a.LookupPath(cue.MakePath(cue.AnyIndex)); elem.Exists() {
			return elem, true
		}
	}
	return cue.Value{}, false
}

// pointerEscape escapes a field name as an RFC 6901 reference token.
func pointerEscape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}

// shortPos trims a CUE position to the path from the module's directory of contracts.
func shortPos(pos string) string {
	if i := strings.Index(pos, "/cue/"); i >= 0 {
		return pos[i+1:]
	}
	return pos
}

// readProv reads @prov(KIND, "RULE", gap="...") of a field; a missing attribute gives an empty Kind.
func readProv(f cue.Value) (FieldProvenance, error) {
	a := f.Attribute("prov")
	if a.Err() != nil {
		return FieldProvenance{}, nil
	}
	var fp FieldProvenance
	i := 0
	for arg := range a.Args(0) {
		switch {
		case arg.Key == "gap":
			fp.Gap = arg.AsString()
		case arg.Key != "":
			return fp, fmt.Errorf("@prov: unknown argument %s=", arg.Key)
		case i == 0:
			fp.Kind = arg.AsString()
		case i == 1:
			fp.Rule = arg.AsString()
		default:
			return fp, fmt.Errorf("@prov: more than two positional arguments")
		}
		if arg.Key == "" {
			i++
		}
	}
	if fp.Kind == "" {
		return fp, errors.New("@prov: no kind (derived, bound, observed or descriptive)")
	}
	return fp, nil
}

// ProvenanceGoFile renders the provenance tables as zz_generated_provenance.go of package contract.
func ProvenanceGoFile(tables []ContractProvenance) (GoFile, error) {
	var b bytes.Buffer
	b.WriteString(GoHeader + "\npackage contract\n\n")
	b.WriteString(`// ProvenanceTreatment says how the verifier treats a field of an evidence contract
// (docs/verification.md "Provenance"). Its values are ordinary words ("observed" is also a word
// of the cache contract), so the type's name does not end in Kind: the literal check
// (TestNoContractLiterals) leaves them alone.
type ProvenanceTreatment string

const (
	// ProvenanceDerived: the verifier recomputes the field; Rule names the formula or check.
	ProvenanceDerived ProvenanceTreatment = "derived"
	// ProvenanceBound: the field must equal an input (the recipe, the workload, the commit's
	// blob, the plan); Rule names it.
	ProvenanceBound ProvenanceTreatment = "bound"
	// ProvenanceObserved: a raw measurement nothing can recompute; Rule names the plausibility
	// rules that bound it.
	ProvenanceObserved ProvenanceTreatment = "observed"
	// ProvenanceDescriptive: free text, never read by a verdict.
	ProvenanceDescriptive ProvenanceTreatment = "descriptive"
)

// FieldProvenance is one field of an evidence contract (the @prov attribute of its CUE field).
type FieldProvenance struct {
	// Path is the field's JSON-pointer-like path; "*" stands for every item of a list and every
	// value of a map.
	Path string
	// Kind is how the verifier treats the field; "" when the CUE field has no @prov.
	Kind ProvenanceTreatment
	// Rule names the formula, the input or the plausibility rules (empty for descriptive).
	Rule string
	// Gap says what the verifier does not check yet; "" when nothing is missing.
	Gap string
	// Where is the CUE file and line that declares the field.
	Where string
}

// Provenance maps every evidence contract (a definition with @evidence() in cue/) to its fields,
// in document order.
var Provenance = map[string][]FieldProvenance{
`)
	for _, t := range tables {
		fmt.Fprintf(&b, "\t%s: {\n", goContractName(t.Name))
		for _, f := range t.Fields {
			fmt.Fprintf(&b, "\t\t{Path: %s, Kind: %s, Rule: %s, Gap: %s, Where: %s},\n",
				strconv.Quote(f.Path), goProvKind(f.Kind), strconv.Quote(f.Rule), strconv.Quote(f.Gap), strconv.Quote(f.Where))
		}
		b.WriteString("\t},\n")
	}
	b.WriteString("}\n")
	src, err := format.Source(b.Bytes())
	if err != nil {
		return GoFile{}, fmt.Errorf("format zz_generated_provenance.go: %w", err)
	}
	return GoFile{Name: "zz_generated_provenance.go", Source: src}, nil
}

func goProvKind(k string) string {
	switch k {
	case "derived":
		return "ProvenanceDerived"
	case "bound":
		return "ProvenanceBound"
	case "observed":
		return "ProvenanceObserved"
	case "descriptive":
		return "ProvenanceDescriptive"
	}
	return "ProvenanceTreatment(" + strconv.Quote(k) + ")"
}

// Markers delimit the generated provenance section of a contract page.
const (
	ProvenanceBegin = "<!-- provenance: generated by schemagen from the @prov attributes in cue/; DO NOT EDIT -->"
	ProvenanceEnd   = "<!-- end provenance -->"
)

// ProvenanceMarkdown renders one contract's table for its docs page, markers included.
func ProvenanceMarkdown(t ContractProvenance) string {
	var b strings.Builder
	b.WriteString(ProvenanceBegin + "\n")
	b.WriteString("## Provenance\n\n")
	b.WriteString("How the verifier treats every field ([verification.md](../verification.md#provenance)):\n")
	b.WriteString("`derived` (recomputed), `bound` (must equal an input), `observed` (a raw measurement, bounded\n")
	b.WriteString("by plausibility rules), `descriptive` (never read by a verdict). `*` is every item of a list or\n")
	b.WriteString("value of a map. A gap is a check the verifier does not make yet.\n\n")
	b.WriteString("| field | kind | rule | gap |\n|---|---|---|---|\n")
	var gaps int
	for _, f := range t.Fields {
		kind := f.Kind
		if kind == "" {
			kind = "**none**"
		}
		if f.Gap != "" {
			gaps++
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", f.Path, kind, mdCell(f.Rule), mdCell(f.Gap))
	}
	fmt.Fprintf(&b, "\n%d fields, %d with a gap.\n", len(t.Fields), gaps)
	b.WriteString(ProvenanceEnd + "\n")
	return b.String()
}

func mdCell(s string) string {
	return strings.NewReplacer("|", "\\|", "\n", " ").Replace(s)
}

// DocFile is one contract page with its provenance section brought up to date.
type DocFile struct {
	// Name is the page's file name, e.g. "receipt.v1.md".
	Name string
	// Source is the page.
	Source []byte
}

// ErrNoPage reports an evidence contract without a page under docs/contracts.
var ErrNoPage = errors.New("no contract page")

// ProvenanceDocs reads each evidence contract's page NAME.md in dir and returns it with its
// provenance section replaced (between the markers) or, without markers, appended.
func ProvenanceDocs(tables []ContractProvenance, dir string) ([]DocFile, error) {
	var out []DocFile
	for _, t := range tables {
		name := t.Name + ".md"
		page, err := os.ReadFile(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s for evidence contract %s", ErrNoPage, filepath.Join(dir, name), t.Name)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
		section := ProvenanceMarkdown(t)
		s := string(page)
		i := strings.Index(s, ProvenanceBegin)
		j := strings.Index(s, ProvenanceEnd)
		switch {
		case i >= 0 && j > i:
			s = s[:i] + section + strings.TrimPrefix(s[j+len(ProvenanceEnd):], "\n")
		case i < 0 && j < 0:
			s = strings.TrimRight(s, "\n") + "\n\n" + section
		default:
			return nil, fmt.Errorf("%s: provenance markers out of order or one missing", name)
		}
		out = append(out, DocFile{Name: name, Source: []byte(s)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// WriteDocs writes the pages into dir.
func WriteDocs(files []DocFile, dir string) error {
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Source, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", f.Name, err)
		}
	}
	return nil
}

// StaleDocs lists the pages in dir whose provenance section differs from the generated one.
func StaleDocs(files []DocFile, dir string) ([]string, error) {
	var stale []string
	for _, f := range files {
		got, err := os.ReadFile(filepath.Join(dir, f.Name))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", f.Name, err)
		}
		if !bytes.Equal(got, f.Source) {
			stale = append(stale, filepath.Join(dir, f.Name))
		}
	}
	return stale, nil
}
