package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"cuelang.org/go/cue"
)

// GoType is one generated Go struct (or named map) type of a contract.
type GoType struct {
	Name   string
	Doc    string
	Where  string
	Fields []GoField
	// Map, when not "", makes the type a named map (e.g. "map[string]any").
	Map string
}

// GoField is one field of a generated struct.
type GoField struct {
	Name, Type, JSON, Doc string
	OmitEmpty             bool
	omitSet               bool // @go(omitempty=...) decides
}

type typeBuilder struct {
	enumByPos map[string]string // enum Go name by the CUE position of its values
	types     map[string]*GoType
	order     []string
	byPos     map[string]string // struct Go name by CUE position of the definition
	prefixes  map[string]string // @go(prefix=...) by package directory
	cueDir    string            // absolute
	err       []string
}

func (b *typeBuilder) fail(format string, args ...any) {
	b.err = append(b.err, fmt.Sprintf(format, args...))
}

// BuildGoTypes derives the Go struct types of every exported contract, starting from each
// contract's definition (Go name: the contract name's Go name + "Doc", or its @go(Name)).
func BuildGoTypes(cueDir string, schemas []Schema, m *GoModel) ([]GoType, error) {
	abs, err := filepath.Abs(cueDir)
	if err != nil {
		return nil, err
	}
	b := &typeBuilder{enumByPos: map[string]string{}, types: map[string]*GoType{}, byPos: map[string]string{}, prefixes: map[string]string{}, cueDir: abs}
	for k, n := range m.enumAt {
		b.enumByPos[k] = n
	}
	for _, s := range schemas {
		b.types[goContractName(s.Name)] = &GoType{Where: "a contract name constant"}
		b.types[goContractName(s.Name)+"Schema"] = &GoType{Where: "a schema id constant"}
	}
	for _, e := range m.Enums {
		b.types[e.Name] = &GoType{Where: "an enum " + e.Where}
	}
	for _, s := range schemas {
		name := goContractName(s.Name) + "Doc"
		if n, ok := goAttr(s.Value); ok {
			name = n
		}
		if name == "handwritten" {
			continue // @go(handwritten): the contract's Go types are written by hand in schemas/contract
		}
		b.declare(s.Value, name, s.Package+" "+s.Definition)
	}
	if len(b.err) > 0 {
		return nil, fmt.Errorf("go types: %s", strings.Join(b.err, "; "))
	}
	out := make([]GoType, 0, len(b.order))
	for _, n := range b.order {
		out = append(out, *b.types[n])
	}
	return out, nil
}

// declare makes the struct type name for the value v (a definition or an anonymous struct).
func (b *typeBuilder) declare(v cue.Value, name, where string) string {
	if prev, ok := b.types[name]; ok {
		if prev.Where == where {
			return name
		}
		if prev.Fields != nil {
			// the same name for another definition: one type when the two are field for field equal
			probe := &typeBuilder{enumByPos: b.enumByPos, types: map[string]*GoType{}, byPos: maps.Clone(b.byPos), prefixes: b.prefixes, cueDir: b.cueDir}
			probe.declare(v, name, where)
			if t := probe.types[name]; t != nil && len(probe.err) == 0 && sameFields(t.Fields, prev.Fields) {
				maps.Copy(b.byPos, probe.byPos)
				for n, t := range probe.types {
					if _, have := b.types[n]; !have {
						b.types[n] = t
						b.order = append(b.order, n)
					}
				}
				return name
			}
		}
		b.fail("Go type %s declared at %s and %s; name one with @go(Name)", name, prev.Where, where)
		for i := 2; ; i++ {
			if _, taken := b.types[fmt.Sprintf("%s_%d", name, i)]; !taken {
				name = fmt.Sprintf("%s_%d", name, i)
				break
			}
		}
	}
	t := &GoType{Name: name, Doc: docOf(v), Where: where}
	b.types[name] = t
	b.order = append(b.order, name)
	seen := map[string]int{}
	var structs []cue.Value
	alternatives := 0
	isAlt := map[int]bool{}
	if v.IncompleteKind() == cue.StructKind {
		structs = []cue.Value{v}
	} else if op, args := v.Expr(); op == cue.AndOp {
		// A discriminated union {kind!: ..., ...} & matchIf({kind!: "a"}, #A, matchIf(..., #B, #C)):
		// one struct holding every alternative's fields, those not in all alternatives omitempty.
		for _, a := range args {
			if a.IncompleteKind() == cue.StructKind {
				structs = append(structs, a)
			} else {
				alts := matchIfAlternatives(a)
				alternatives = len(alts)
				for range alts {
					isAlt[len(structs)] = true
					structs = append(structs, alts[len(isAlt)-1])
				}
			}
		}
	}
	count := map[string]int{}
	for si, s := range structs {
		it, err := s.Fields(cue.Optional(true))
		if err != nil {
			b.fail("%s: %v", where, err)
			return name
		}
		for it.Next() {
			f := it.Selector().Unquoted()
			fv := it.Value()
			if isAlt[si] {
				count[f]++
			}
			if i, dup := seen[f]; dup {
				if t.Fields[i].Doc == "" {
					t.Fields[i].Doc = docOf(fv)
				}
				if it.IsOptional() {
					t.Fields[i].OmitEmpty = true
				}
				continue
			}
			gf := GoField{Name: goName(f), JSON: f, Doc: docOf(fv), OmitEmpty: it.IsOptional()}
			if n, ok := goFieldAttr(fv, "field"); ok {
				gf.Name = n
			}
			if v, ok := goFieldAttr(fv, "omitempty"); ok {
				gf.OmitEmpty, gf.omitSet = v == "true", true
			}
			if ty, ok := goFieldAttr(fv, "type"); ok {
				gf.Type = ty // @go(type=...): a hand-written or a different Go type
			} else {
				gf.Type = b.goType(fv, name+goName(f), where+"."+f, it.IsOptional())
			}
			seen[f] = len(t.Fields)
			t.Fields = append(t.Fields, gf)
		}
	}
	if alternatives > 0 {
		for i := range t.Fields {
			if count[t.Fields[i].JSON] < alternatives && !t.Fields[i].omitSet {
				t.Fields[i].OmitEmpty = true
				if ty, ok := b.types[t.Fields[i].Type]; ok && ty.Map == "" && len(ty.Fields) > 0 {
					t.Fields[i].Type = "*" + t.Fields[i].Type // a struct of some alternatives only
				}
			}
		}
	}
	if pat := v.LookupPath(cue.MakePath(cue.AnyString)); pat.Exists() && len(t.Fields) == 0 {
		t.Map = "map[string]" + b.goType(pat, name+"Value", where+".[string]", false)
	}
	return name
}

// cueWhere names a definition by its package directory, as the enums do: "receipt/v1 #Source".
func (b *typeBuilder) cueWhere(file, def string) string {
	rel, err := filepath.Rel(b.cueDir, filepath.Dir(file))
	if err != nil {
		rel = filepath.Base(filepath.Dir(file))
	}
	return filepath.ToSlash(rel) + " " + def
}

func (b *typeBuilder) isEnum(name string) bool {
	for _, n := range b.enumByPos {
		if n == name {
			return true
		}
	}
	return false
}

func flattenAnd(v cue.Value) []cue.Value {
	op, args := v.Expr()
	if op != cue.AndOp {
		return []cue.Value{v}
	}
	var out []cue.Value
	for _, a := range args {
		out = append(out, flattenAnd(a)...)
	}
	return out
}

// isUnion reports a discriminated union: {discriminator, ...} & matchIf(...).
func isUnion(v cue.Value) bool {
	op, args := v.Expr()
	if op != cue.AndOp {
		return false
	}
	for _, a := range args {
		if len(matchIfAlternatives(a)) > 0 {
			return true
		}
	}
	return false
}

func sameFields(a, b []GoField) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Type != b[i].Type || a[i].JSON != b[i].JSON || a[i].OmitEmpty != b[i].OmitEmpty {
			return false
		}
	}
	return true
}

// matchIfAlternatives lists the structs of matchIf({..}, #A, matchIf({..}, #B, #C)).
func matchIfAlternatives(v cue.Value) []cue.Value {
	op, args := v.Expr()
	if op != cue.CallOp || len(args) != 4 {
		return nil
	}
	out := []cue.Value{args[2]}
	if more := matchIfAlternatives(args[3]); more != nil {
		return append(out, more...)
	}
	return append(out, args[3])
}

// goFieldAttr reads an argument of the field's @go attribute: "name" (the first positional
// argument: the Go name of the field's enum or nested struct type), or a keyed one: field="Name"
// (the Go field name), type="GoType" (the Go type, e.g. "*int64"), omitempty=true|false.
func goFieldAttr(v cue.Value, key string) (string, bool) {
	a := v.Attribute("go")
	if a.Err() != nil {
		return "", false
	}
	if key == "name" {
		s, err := a.String(0)
		if err != nil || s == "" || strings.Contains(s, "=") {
			return "", false
		}
		return s, true
	}
	s, found, err := a.Lookup(0, key)
	if err != nil || !found {
		return "", false
	}
	return s, true
}

func (b *typeBuilder) goType(v cue.Value, nested, where string, optional bool) string {
	if root, path := v.ReferencePath(); len(path.Selectors()) > 0 {
		def := root.LookupPath(path)
		return b.refType(root, def, path, v, optional)
	}
	op, args := v.Expr()
	if n, ok := b.enumByPos[v.Pos().String()]; ok {
		if op == cue.OrOp && !optional {
			for _, a := range args {
				if a.IncompleteKind() == cue.NullKind {
					return "*" + n
				}
			}
		}
		return n
	}
	if op == cue.OrOp {
		var rest []cue.Value
		nullable := false
		for _, a := range args {
			if a.IncompleteKind() == cue.NullKind {
				nullable = true
				continue
			}
			rest = append(rest, a)
		}
		var types []string
		for _, a := range rest {
			types = append(types, b.goType(a, nested, where, false))
		}
		t := "any"
		if len(types) > 0 {
			t = types[0]
			for _, o := range types[1:] {
				if o != t {
					t = "any"
				}
			}
		}
		if t == "any" && len(types) > 0 {
			// an enum or other strings ("#Mode | \"\""): a plain string
			strs := true
			for _, o := range types {
				strs = strs && (o == "string" || b.isEnum(o))
			}
			if strs {
				t = "string"
			}
		}
		if nullable && !optional && t != "any" && !strings.HasPrefix(t, "[]") && !strings.HasPrefix(t, "map[") {
			return "*" + t
		}
		return t
	}
	switch k := v.IncompleteKind(); k {
	case cue.StringKind:
		return "string"
	case cue.IntKind:
		return "int64"
	case cue.FloatKind, cue.NumberKind:
		return "float64"
	case cue.BoolKind:
		return "bool"
	case cue.ListKind:
		return "[]" + b.goType(v.LookupPath(cue.MakePath(cue.AnyIndex)), nested, where+".[]", false)
	case cue.StructKind:
		it, _ := v.Fields(cue.Optional(true))
		if !it.Next() {
			if pat := v.LookupPath(cue.MakePath(cue.AnyString)); pat.Exists() {
				return "map[string]" + b.goType(pat, nested+"Value", where+".[string]", false)
			}
			return "map[string]any"
		}
		name := nested
		if n, ok := goFieldAttr(v, "name"); ok {
			name = n
		}
		n := b.declare(v, name, where)
		if optional {
			return "*" + n
		}
		return n
	default:
		if op == cue.AndOp {
			if isUnion(v) {
				return b.declare(v, nested, where)
			}
			// constraints and validators: the first operand of a known kind that is not a
			// validator call gives the type
			for _, a := range flattenAnd(v) {
				if op, _ := a.Expr(); op == cue.CallOp {
					continue
				}
				if k := a.IncompleteKind(); k == cue.TopKind || k == cue.BottomKind {
					continue
				}
				return b.goType(a, nested, where, optional)
			}
		}
		return "any"
	}
}

var prefixAttr = regexp.MustCompile(`(?m)^@go\(prefix="([A-Z][A-Za-z0-9]*)"\)$`)

// pkgPrefix reads the @go(prefix="P") file attribute of the package holding the definition at
// pos: the Go names of that package's definitions' struct types start with P (report-view's
// #Case is ViewCase). (cue v0.17.1's Value.Attributes does not report file-level attributes, so
// the files are read.)
func (b *typeBuilder) pkgPrefix(pos string) string {
	dir := filepath.Dir(pos[:strings.IndexByte(pos+":", ':')])
	if p, ok := b.prefixes[dir]; ok {
		return p
	}
	p := ""
	files, _ := filepath.Glob(filepath.Join(dir, "*.cue"))
	for _, f := range files {
		if src, err := os.ReadFile(f); err == nil {
			if m := prefixAttr.FindSubmatch(src); m != nil {
				p = string(m[1])
			}
		}
	}
	b.prefixes[dir] = p
	return p
}

func (b *typeBuilder) refType(root, def cue.Value, path cue.Path, v cue.Value, optional bool) string {
	sels := path.Selectors()
	last := sels[len(sels)-1].String()
	if n, ok := b.enumByPos[def.Pos().String()]; ok {
		return n
	}
	if _, ok, _ := stringEnum(def); ok {
		if n, ok := goAttr(def); ok {
			return n
		}
		return strings.TrimPrefix(last, "#")
	}
	k := def.IncompleteKind()
	if k == cue.StructKind || (k != cue.StructKind && isUnion(def)) {
		it, _ := def.Fields(cue.Optional(true))
		if k == cue.StructKind && !it.Next() {
			// an open map: a named map type where the definition has @go(Name) (#Config), else
			// an unnamed map
			elem := "any"
			for _, x := range []cue.Value{def, v} {
				if pat := x.LookupPath(cue.MakePath(cue.AnyString)); pat.Exists() && elem == "any" {
					elem = b.goType(pat, strings.TrimPrefix(last, "#")+"Value", last+".[string]", false)
				}
			}
			name, ok := goAttr(def)
			if !ok {
				return "map[string]" + elem
			}
			if _, ok := b.types[name]; !ok {
				t := &GoType{Name: name, Doc: docOf(def), Where: b.cueWhere(def.Pos().Filename(), last), Map: "map[string]" + elem}
				b.types[name] = t
				b.order = append(b.order, name)
			}
			return name
		}
		name := b.pkgPrefix(def.Pos().String()) + strings.TrimPrefix(last, "#")
		if n, ok := goAttr(def); ok {
			name = n
		}
		if prev, ok := b.byPos[def.Pos().String()]; ok {
			name = prev
		} else {
			name = b.declare(def, name, b.cueWhere(def.Pos().Filename(), last))
			b.byPos[def.Pos().String()] = name
		}
		if optional {
			return "*" + name
		}
		return name
	}
	return b.goType(def, strings.TrimPrefix(last, "#"), last, optional)
}

// RenderGoTypes renders the struct types as zz_generated_types.go.
func RenderGoTypes(types []GoType) (GoFile, error) {
	var b bytes.Buffer
	b.WriteString(GoHeader + "\npackage contract\n")
	for _, t := range types {
		b.WriteString("\n")
		doc := docFor(t.Doc, lastPart(t.Where), t.Name)
		if doc == "" {
			doc = t.Name + " is " + t.Where + "."
		} else {
			doc += "\n\nCUE: " + t.Where + "."
		}
		comment(&b, doc, "")
		if t.Map != "" {
			fmt.Fprintf(&b, "type %s %s\n", t.Name, t.Map)
			continue
		}
		fmt.Fprintf(&b, "type %s struct {\n", t.Name)
		for _, f := range t.Fields {
			comment(&b, docFor(f.Doc, f.JSON, f.Name), "\t")
			tag := f.JSON
			if f.OmitEmpty {
				tag += ",omitempty"
			}
			fmt.Fprintf(&b, "\t%s %s `json:%q`\n", f.Name, f.Type, tag)
		}
		b.WriteString("}\n")
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return GoFile{}, fmt.Errorf("gofmt zz_generated_types.go: %w", err)
	}
	return GoFile{Name: "zz_generated_types.go", Source: src}, nil
}
