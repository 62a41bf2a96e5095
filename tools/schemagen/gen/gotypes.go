package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	"cuelang.org/go/cue/token"
)

// GoType is one generated Go struct (or named map) type of a contract.
type GoType struct {
	Name   string
	Doc    string
	Where  string
	Fields []GoField
	// Map, when not "", makes the type a named map (e.g. "map[string]any").
	Map string
	// Accessors are the methods returning one alternative of a union's merged field.
	Accessors []Accessor
}

// GoField is one field of a generated struct.
type GoField struct {
	Name, Type, JSON, Doc string
	OmitEmpty             bool
	// Embedded: the field is an embedded struct (Name == Type, no tag); its members are promoted.
	Embedded bool
	omitSet  bool // @go(omitempty=...) decides
}

// Accessor is a generated method of a union type U: func (d U) Method() (Type, bool) returns the
// members of the merged field Field as the alternative's type when the discriminator
// Discriminator holds Value and every required member of the alternative is present.
type Accessor struct {
	Method, Type, Field, Discriminator, Value string
	// members and the merged field type are resolved once every type is declared.
	members []accessorMember
	pointer bool // the merged field is a pointer (it is absent from some alternatives)
}

type accessorMember struct {
	name, from string // Go field name, expression kind: "copy", "deref", "deref-optional"
	check      string // "" or the absence test, e.g. "== nil"
}

type typeBuilder struct {
	enumByPos  map[string]string   // enum Go name by the CUE position of its values
	enumValues map[string][]string // enum values by Go name
	types      map[string]*GoType
	order      []string
	byPos      map[string]string // struct Go name by CUE position of the definition
	prefixes   map[string]string // @go(prefix=...) by package directory
	cueDir     string            // absolute
	pending    []pendingAccessor
	err        []string
}

type pendingAccessor struct {
	union string
	acc   Accessor
	field string // the merged field's Go name in the union
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
	b := &typeBuilder{enumByPos: map[string]string{}, enumValues: map[string][]string{}, types: map[string]*GoType{}, byPos: map[string]string{}, prefixes: map[string]string{}, cueDir: abs}
	for k, n := range m.enumAt {
		b.enumByPos[k] = n
	}
	for _, s := range schemas {
		b.types[goContractName(s.Name)] = &GoType{Where: "a contract name constant"}
		b.types[goContractName(s.Name)+"Schema"] = &GoType{Where: "a schema id constant"}
	}
	for _, e := range m.Enums {
		b.types[e.Name] = &GoType{Where: "an enum " + e.Where}
		b.enumValues[e.Name] = e.Values
	}
	for _, s := range schemas {
		name := goContractName(s.Name) + "Doc"
		if n, ok := goAttr(s.Value); ok {
			name = n
		}
		if name == "handwritten" {
			b.fail("%s %s: @go(handwritten) is gone: every contract's Go is generated (docs/contracts/README.md)", s.Package, s.Definition)
			continue
		}
		b.declare(s.Value, name, s.Package+" "+s.Definition)
	}
	b.resolveAccessors()
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
	var embeds []embedding
	var lits []cue.Value
	if v.IncompleteKind() == cue.StructKind {
		embeds, lits = b.embeddings(v)
		if len(embeds) == 1 && !hasFields(lits) {
			return embeds[0].name // {driver.NextTokenBody}: the embedded type itself
		}
	}
	if prev, ok := b.types[name]; ok {
		if prev.Where == where {
			return name
		}
		if prev.Fields != nil {
			// the same name for another definition: one type when the two are field for field equal
			probe := &typeBuilder{enumByPos: b.enumByPos, enumValues: b.enumValues, types: map[string]*GoType{}, byPos: maps.Clone(b.byPos), prefixes: b.prefixes, cueDir: b.cueDir}
			probe.declare(v, name, where)
			if t := probe.types[name]; t != nil && len(probe.err) == 0 && sameFields(t.Fields, prev.Fields) {
				if prev.Doc == "" {
					prev.Doc = t.Doc // BinaryInfo: the first declaration has no doc comment
				}
				for i := range prev.Fields {
					if prev.Fields[i].Doc == "" {
						prev.Fields[i].Doc = t.Fields[i].Doc
					}
				}
				maps.Copy(b.byPos, probe.byPos)
				for n, t := range probe.types {
					if _, have := b.types[n]; !have {
						b.types[n] = t
						b.order = append(b.order, n)
					}
				}
				b.pending = append(b.pending, probe.pending...)
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
	if len(embeds) > 0 {
		b.embeddedFields(t, embeds, lits)
		return name
	}
	var parts []structPart
	discriminator := ""
	alternatives := 0
	if v.IncompleteKind() == cue.StructKind {
		parts = []structPart{{v: v, alt: -1}}
	} else if op, args := v.Expr(); op == cue.AndOp {
		// A discriminated union {kind!: ..., ...} & matchIf({kind!: "a"}, #A, matchIf(..., #B, #C)):
		// one struct holding every alternative's fields, those not in all alternatives omitempty.
		for _, a := range args {
			if a.IncompleteKind() == cue.StructKind {
				parts = append(parts, structPart{v: a, alt: -1})
				continue
			}
			if d := matchIfDiscriminator(a); d != "" {
				discriminator = d
			}
			for _, alt := range matchIfAlternatives(a) {
				parts = append(parts, structPart{v: alt, alt: alternatives})
				alternatives++
			}
		}
	}
	b.unionFields(t, parts, alternatives, discriminator, false)
	if pat := v.LookupPath(cue.MakePath(cue.AnyString)); pat.Exists() && len(t.Fields) == 0 {
		t.Map = "map[string]" + b.goType(pat, name+"Value", where+".[string]", false)
	}
	return name
}

// structPart is one of the structs a type is built from: a plain struct, a union's shared part
// (alt -1) or one of its alternatives (alt >= 0).
type structPart struct {
	v   cue.Value
	alt int
}

// occurrence is one declaration of a field in one struct part.
type occurrence struct {
	v        cue.Value
	optional bool
	part     int
}

// unionFields adds to t the fields of the parts, in order of first appearance. With alternatives,
// a field not in every alternative is omitempty (a struct of some alternatives only, a pointer). A
// field whose alternatives give it different struct types (a body, a list of assertions) gets a
// merged type (mergedField), and accessors when the union has a discriminator. merged marks a
// merged type itself: there a field of some alternatives only whose zero value is a valid value
// (0, "", false) is a pointer, so that omitempty never drops a value a document holds and the
// accessors can tell absence, and one field typed by two different enums is a plain string.
func (b *typeBuilder) unionFields(t *GoType, parts []structPart, alternatives int, discriminator string, merged bool) {
	var order []string
	occs := map[string][]occurrence{}
	for pi, p := range parts {
		it, err := p.v.Fields(cue.Optional(true))
		if err != nil {
			b.fail("%s: %v", t.Where, err)
			return
		}
		for it.Next() {
			f := it.Selector().Unquoted()
			if _, ok := occs[f]; !ok {
				order = append(order, f)
			}
			occs[f] = append(occs[f], occurrence{v: it.Value(), optional: it.IsOptional(), part: pi})
		}
	}
	count := map[string]int{}
	zeroValid := map[string]bool{}
	for _, f := range order {
		decls := occs[f]
		first := decls[0]
		gf := GoField{Name: goName(f), JSON: f, OmitEmpty: first.optional}
		for _, o := range decls {
			if gf.Doc == "" {
				gf.Doc = docOf(o.v)
			}
			if parts[o.part].alt >= 0 {
				count[f]++
			}
			if merged && zeroAdmitted(o.v) {
				zeroValid[f] = true
			}
		}
		if n, ok := goFieldAttr(first.v, "field"); ok {
			gf.Name = n
		}
		if v, ok := goFieldAttr(first.v, "omitempty"); ok {
			gf.OmitEmpty, gf.omitSet = v == "true", true
		}
		for _, o := range decls[1:] {
			if o.optional {
				gf.OmitEmpty = true
			}
		}
		ty, typed := goFieldAttr(first.v, "type")
		switch {
		case len(decls) > 1 && b.shapesDiffer(decls):
			gf.Type = b.mergedField(t, f, gf.Name, decls, parts, discriminator)
		case typed:
			gf.Type = ty // @go(type=...): a different Go type
		default:
			gf.Type = b.goType(first.v, t.Name+goName(f), t.Where+"."+f, first.optional)
			if merged && b.isEnum(gf.Type) {
				for _, o := range decls[1:] {
					if _, structish := b.shape(o.v); structish {
						continue
					}
					if other := b.goType(o.v, t.Name+goName(f), t.Where+"."+f, o.optional); other != gf.Type && b.isEnum(other) {
						gf.Type = "string" // "required" | "forbidden" of two alternatives: two enums
					}
				}
			}
		}
		t.Fields = append(t.Fields, gf)
	}
	if alternatives > 0 {
		for i := range t.Fields {
			if count[t.Fields[i].JSON] < alternatives && !t.Fields[i].omitSet {
				t.Fields[i].OmitEmpty = true
				if ty, ok := b.types[t.Fields[i].Type]; ok && ty.Map == "" && len(ty.Fields) > 0 {
					t.Fields[i].Type = "*" + t.Fields[i].Type // a struct of some alternatives only
				} else if merged && zeroValid[t.Fields[i].JSON] && isScalar(t.Fields[i].Type, b) {
					t.Fields[i].Type = "*" + t.Fields[i].Type
				}
			}
		}
	}
}

// isScalar reports a string, number, bool or enum Go type.
func isScalar(ty string, b *typeBuilder) bool {
	switch ty {
	case "string", "int64", "float64", "bool":
		return true
	}
	return b.isEnum(ty)
}

// zeroAdmitted reports whether the Go zero value of the field's kind ("", 0, false) satisfies v.
func zeroAdmitted(v cue.Value) bool {
	var zero any
	switch v.IncompleteKind() {
	case cue.StringKind:
		zero = ""
	case cue.IntKind, cue.NumberKind, cue.FloatKind:
		zero = 0
	case cue.BoolKind:
		zero = false
	default:
		return false
	}
	return v.Unify(zeroContext.Encode(zero)).Validate(cue.Concrete(true)) == nil
}

// zeroContext builds the zero values zeroAdmitted unifies with (values of different contexts
// combine).
var zeroContext = cuecontext.New()

// shape identifies the struct type a field value stands for: the definition or section a
// reference names ({driver.PathBody} evaluates to the reference), an anonymous struct's position,
// or the Go type its @go attribute names, with "[]" per list level. structish is false for scalars and open maps.
func (b *typeBuilder) shape(v cue.Value) (string, bool) {
	if root, path := refOf(v); len(path.Selectors()) > 0 {
		def := root.LookupPath(path)
		if def.IncompleteKind() == cue.ListKind {
			s, ok := b.shape(def.LookupPath(cue.MakePath(cue.AnyIndex)))
			return "[]" + s, ok
		}
		if isUnion(def) || hasFields([]cue.Value{def}) {
			return "ref " + def.Pos().String(), true
		}
		return "", false
	}
	switch {
	case v.IncompleteKind() == cue.ListKind:
		s, ok := b.shape(v.LookupPath(cue.MakePath(cue.AnyIndex)))
		return "[]" + s, ok
	case isUnion(v):
		return "union " + v.Pos().String(), true
	case v.IncompleteKind() == cue.StructKind && hasFields([]cue.Value{v}):
		if name, ok := goFieldAttr(v, "name"); ok {
			// Anonymous structs that name one Go type (@go(WordsRange)) are that type, wherever
			// they are written; the type table refuses two different ones of one name.
			return "named " + name, true
		}
		return "lit " + v.Pos().String(), true
	}
	return "", false
}

// shapesDiffer reports a field whose declarations in a union's parts are different struct types.
func (b *typeBuilder) shapesDiffer(decls []occurrence) bool {
	first, ok := b.shape(decls[0].v)
	if !ok {
		return false
	}
	for _, o := range decls[1:] {
		if s, ok := b.shape(o.v); ok && s != first {
			return true
		}
	}
	return false
}

// mergedField declares the merged type of a union's field f whose alternatives give it different
// struct types (or lists of them): one struct holding the members of every alternative type (a
// union among them contributes each of its alternatives), as the union itself does. The type is
// named by the alternatives' @go(type="T") or @go(type="[]T") (all the same), else
// <Union><Field>. With a discriminator, each alternative whose type is a named struct gets an
// accessor on the union.
func (b *typeBuilder) mergedField(u *GoType, f, fieldName string, decls []occurrence, parts []structPart, discriminator string) string {
	where := u.Where + "." + f
	list := false
	for i, o := range decls {
		isList := o.v.IncompleteKind() == cue.ListKind
		if i == 0 {
			list = isList
		} else if isList != list {
			b.fail("%s: a list in some alternatives and not in others", where)
			return "any"
		}
	}
	name := u.Name + goName(f)
	attr := ""
	for i, o := range decls {
		ty, ok := goFieldAttr(o.v, "type")
		if i > 0 && ty != attr {
			b.fail("%s: the alternatives name different Go types (@go(type=%q) and %q)", where, attr, ty)
			return "any"
		}
		if ok {
			attr = ty
		}
	}
	if attr != "" {
		name = strings.TrimLeft(attr, "[]*")
	}
	ty := name
	if list {
		ty = "[]" + name
	}
	if attr != "" && attr != ty {
		b.fail("%s: @go(type=%q) for a merged type %s", where, attr, ty)
	}
	if prev, ok := b.types[name]; ok {
		b.fail("Go type %s declared at %s and %s (merged); name one with @go(type=...)", name, prev.Where, where)
		return ty
	}
	var leaves []structPart
	var names []string
	alternatives := 0
	for _, o := range decls {
		v := o.v
		if list {
			v = v.LookupPath(cue.MakePath(cue.AnyIndex))
		}
		names = append(names, cueName(v))
		for _, p := range b.leafStructs(v) {
			if p.alt >= 0 {
				p.alt = alternatives
				alternatives++
			}
			leaves = append(leaves, p)
		}
	}
	t := &GoType{Name: name, Where: where,
		Doc: wrap(fmt.Sprintf("%s holds the %s of any alternative of %s (%s), merged: only the members of the document's alternative are set.", name, f, u.Where[strings.LastIndexByte(u.Where, ' ')+1:], strings.Join(names, ", ")))}
	b.types[name] = t
	b.order = append(b.order, name)
	b.unionFields(t, leaves, alternatives, "", true)
	if discriminator == "" || list {
		return ty
	}
	seen := map[string]bool{}
	for _, o := range decls {
		alt := parts[o.part].v
		value, ok := singleString(fieldOf(alt, discriminator))
		root, path := refOf(o.v)
		if !ok || len(path.Selectors()) == 0 || isUnion(root.LookupPath(path)) {
			continue // an anonymous or a union alternative type: no accessor
		}
		tn := b.goType(o.v, u.Name+goName(f), where, false)
		if _, named := b.types[tn]; !named || seen[tn] {
			continue
		}
		seen[tn] = true
		b.pending = append(b.pending, pendingAccessor{union: u.Name, field: fieldName, acc: Accessor{Method: tn, Type: tn, Field: fieldName, Discriminator: goName(discriminator), Value: value}})
	}
	return ty
}

// cueName is the CUE name of the definition or section v refers to ("#StreamAssertion",
// "NextTokenBody"), else "a struct".
func cueName(v cue.Value) string {
	if _, path := refOf(v); len(path.Selectors()) > 0 {
		sels := path.Selectors()
		return sels[len(sels)-1].String()
	}
	return "a struct"
}

// leafStructs expands a merged type's alternative into its structs: a reference to its definition
// or section, a union to its shared part and (each expanded) alternatives.
func (b *typeBuilder) leafStructs(v cue.Value) []structPart {
	if root, path := refOf(v); len(path.Selectors()) > 0 {
		return b.leafStructs(root.LookupPath(path))
	}
	if op, args := v.Expr(); op == cue.AndOp && isUnion(v) {
		var out []structPart
		for _, a := range args {
			if a.IncompleteKind() == cue.StructKind {
				out = append(out, structPart{v: a, alt: -1})
				continue
			}
			for _, alt := range matchIfAlternatives(a) {
				out = append(out, b.leafStructs(alt)...)
			}
		}
		return out
	}
	return []structPart{{v: v, alt: 0}}
}

// embedding is a section a struct embeds: a reference to a struct with fields (not a union).
type embedding struct {
	name   string // Go type
	def    cue.Value
	pos    token.Pos
	fields map[string]bool
}

// embeddings lists the sections v embeds and its own struct literals; none unless v is a
// conjunction of struct references and struct literals.
func (b *typeBuilder) embeddings(v cue.Value) ([]embedding, []cue.Value) {
	if op, _ := v.Expr(); op != cue.AndOp {
		return nil, nil
	}
	var embeds []embedding
	var lits []cue.Value
	for _, a := range flattenAnd(v) {
		root, path := refOf(a)
		if len(path.Selectors()) == 0 {
			if a.IncompleteKind() != cue.StructKind {
				return nil, nil
			}
			lits = append(lits, a)
			continue
		}
		def := root.LookupPath(path)
		if def.IncompleteKind() != cue.StructKind || isUnion(def) || !hasFields([]cue.Value{def}) {
			return nil, nil
		}
		e := embedding{name: b.refType(root, def, path, a, false), def: def, pos: a.Pos(), fields: map[string]bool{}}
		it, _ := def.Fields(cue.Optional(true))
		for it.Next() {
			e.fields[it.Selector().Unquoted()] = true
		}
		embeds = append(embeds, e)
	}
	if len(embeds) == 0 {
		return nil, nil
	}
	return embeds, lits
}

// fieldOf is the value of v's field f, required, optional or regular.
func fieldOf(v cue.Value, f string) cue.Value {
	it, err := v.Fields(cue.Optional(true))
	for err == nil && it.Next() {
		if it.Selector().Unquoted() == f {
			return it.Value()
		}
	}
	return cue.Value{}
}

func hasFields(vs []cue.Value) bool {
	for _, v := range vs {
		if it, err := v.Fields(cue.Optional(true)); err == nil && it.Next() {
			return true
		}
	}
	return false
}

// embeddedFields adds to t its embedded sections (as embedded Go structs) and its own fields, in
// source order (the order of the JSON encoding). A member of a section may be re-declared only as
// _ with a doc comment; the comment documents the section's field when it has none.
func (b *typeBuilder) embeddedFields(t *GoType, embeds []embedding, lits []cue.Value) {
	type item struct {
		pos token.Pos
		f   GoField
	}
	var items []item
	for _, e := range embeds {
		items = append(items, item{e.pos, GoField{Name: e.name, Type: e.name, Embedded: true}})
	}
	for _, l := range lits {
		it, err := l.Fields(cue.Optional(true))
		if err != nil {
			b.fail("%s: %v", t.Where, err)
			return
		}
		for it.Next() {
			f, fv := it.Selector().Unquoted(), it.Value()
			if e := embeddedIn(embeds, f); e != nil {
				if fv.IncompleteKind() != cue.TopKind {
					b.fail("%s.%s: a member of the embedded %s may be re-declared only as _ (to document it)", t.Where, f, e.name)
					continue
				}
				if et := b.types[e.name]; et != nil {
					for i := range et.Fields {
						if et.Fields[i].JSON == f && et.Fields[i].Doc == "" {
							et.Fields[i].Doc = docOf(fv)
						}
					}
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
				gf.Type = ty
			} else {
				gf.Type = b.goType(fv, t.Name+goName(f), t.Where+"."+f, it.IsOptional())
			}
			items = append(items, item{fv.Pos(), gf})
		}
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, c := items[i].pos, items[j].pos
		if a.Line() != c.Line() {
			return a.Line() < c.Line()
		}
		return a.Column() < c.Column()
	})
	for _, it := range items {
		t.Fields = append(t.Fields, it.f)
	}
}

func embeddedIn(embeds []embedding, f string) *embedding {
	for i := range embeds {
		if embeds[i].fields[f] {
			return &embeds[i]
		}
	}
	return nil
}

// resolveAccessors fills in the accessors' members once every type is declared.
func (b *typeBuilder) resolveAccessors() {
	for _, p := range b.pending {
		u := b.types[p.union]
		var field *GoField
		disc := ""
		for i := range u.Fields {
			if u.Fields[i].Name == p.field {
				field = &u.Fields[i]
			}
			if u.Fields[i].Name == p.acc.Discriminator {
				disc = u.Fields[i].Type
			}
			if u.Fields[i].Name == p.acc.Method {
				b.fail("%s: accessor %s collides with a field", u.Where, p.acc.Method)
			}
		}
		if field == nil || disc == "" {
			b.fail("%s: accessor %s: no field %s or discriminator %s", u.Where, p.acc.Method, p.field, p.acc.Discriminator)
			continue
		}
		acc := p.acc
		acc.pointer = strings.HasPrefix(field.Type, "*")
		if b.isEnum(disc) {
			if !slices.Contains(b.enumValues[disc], acc.Value) {
				b.fail("%s: discriminator value %q is no value of %s", u.Where, acc.Value, disc)
				continue
			}
			acc.Value = disc + goName(acc.Value)
		} else {
			acc.Value = strconv.Quote(acc.Value)
		}
		merged, alt := b.types[strings.TrimPrefix(field.Type, "*")], b.types[acc.Type]
		for _, af := range alt.Fields {
			var mf *GoField
			for i := range merged.Fields {
				if merged.Fields[i].JSON == af.JSON {
					mf = &merged.Fields[i]
				}
			}
			if af.Embedded || mf == nil {
				b.fail("%s: accessor %s: member %s is not in %s", u.Where, acc.Method, af.Name, merged.Name)
				continue
			}
			m := accessorMember{name: af.Name}
			switch {
			case mf.Type == "*"+af.Type && af.OmitEmpty:
				m.from = "deref-optional"
			case mf.Type == "*"+af.Type:
				m.from, m.check = "deref", "== nil"
			case mf.Type == af.Type:
				m.from = "copy"
				if !af.OmitEmpty && !strings.HasPrefix(af.Type, "*") {
					m.check = b.absence(af.Type)
				}
			default:
				b.fail("%s: accessor %s: member %s is %s in %s and %s in %s", u.Where, acc.Method, af.Name, mf.Type, merged.Name, af.Type, alt.Name)
				continue
			}
			acc.members = append(acc.members, m)
		}
		u.Accessors = append(u.Accessors, acc)
	}
}

// absence is the test telling a required member of type ty absent from a merged struct, "" when
// its zero value is a valid value (the merged type then holds a pointer, see unionFields).
func (b *typeBuilder) absence(ty string) string {
	switch {
	case strings.HasPrefix(ty, "[]"), strings.HasPrefix(ty, "map["), ty == "any":
		return "== nil"
	case ty == "string", b.isEnum(ty):
		return `== ""`
	case ty == "int64", ty == "float64":
		return "== 0"
	}
	return ""
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

// matchIfDiscriminator names the field the conditions of matchIf({kind!: "a"}, #A, ...) test.
func matchIfDiscriminator(v cue.Value) string {
	op, args := v.Expr()
	if op != cue.CallOp || len(args) != 4 {
		return ""
	}
	it, err := args[1].Fields(cue.Optional(true))
	if err != nil || !it.Next() {
		return ""
	}
	return it.Selector().Unquoted()
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

// refOf resolves a reference: to a definition (ReferencePath), or pkg.Name selecting a regular
// field of an imported package (driver.NextTokenBody, for which ReferencePath reports nothing).
func refOf(v cue.Value) (cue.Value, cue.Path) {
	if root, path := v.ReferencePath(); len(path.Selectors()) > 0 {
		return root, path
	}
	if op, args := v.Expr(); op == cue.SelectorOp && len(args) == 2 && args[0].IncompleteKind() == cue.StructKind {
		if name, err := args[1].String(); err == nil && !strings.HasPrefix(name, "#") && !strings.HasPrefix(name, "_") {
			return args[0], cue.MakePath(cue.Str(name))
		}
	}
	return cue.Value{}, cue.Path{}
}

func (b *typeBuilder) goType(v cue.Value, nested, where string, optional bool) string {
	if root, path := refOf(v); len(path.Selectors()) > 0 {
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
		if strings.HasPrefix(t.Doc, t.Name+" ") {
			doc = t.Doc // written for Go (a merged type)
		}
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
			if f.Embedded {
				fmt.Fprintf(&b, "\t%s\n", f.Name)
				continue
			}
			comment(&b, docFor(f.Doc, f.JSON, f.Name), "\t")
			tag := f.JSON
			if f.OmitEmpty {
				tag += ",omitempty"
			}
			fmt.Fprintf(&b, "\t%s %s `json:%q`\n", f.Name, f.Type, tag)
		}
		b.WriteString("}\n")
		for _, a := range t.Accessors {
			renderAccessor(&b, t, a)
		}
	}
	src, err := format.Source(b.Bytes())
	if err != nil {
		return GoFile{}, fmt.Errorf("gofmt zz_generated_types.go: %w", err)
	}
	return GoFile{Name: "zz_generated_types.go", Source: src}, nil
}

func renderAccessor(b *bytes.Buffer, t GoType, a Accessor) {
	b.WriteString("\n")
	comment(b, wrap(fmt.Sprintf("%s returns the %s of a document whose %s is %s, as a %s value; false for another %s or when a member the alternative requires is absent.", a.Method, a.Field, a.Discriminator, a.Value, a.Type, a.Discriminator)), "")
	fmt.Fprintf(b, "func (d %s) %s() (%s, bool) {\n\tvar out %s\n", t.Name, a.Method, a.Type, a.Type)
	if a.pointer {
		fmt.Fprintf(b, "\tif d.%s != %s || d.%s == nil {\n\t\treturn out, false\n\t}\n\tm := *d.%s\n", a.Discriminator, a.Value, a.Field, a.Field)
	} else {
		fmt.Fprintf(b, "\tif d.%s != %s {\n\t\treturn out, false\n\t}\n\tm := d.%s\n", a.Discriminator, a.Value, a.Field)
	}
	var absent []string
	for _, m := range a.members {
		if m.check != "" {
			absent = append(absent, "m."+m.name+" "+m.check)
		}
	}
	if len(absent) > 0 {
		fmt.Fprintf(b, "\tif %s {\n\t\treturn out, false\n\t}\n", strings.Join(absent, " || "))
	}
	for _, m := range a.members {
		switch m.from {
		case "copy":
			fmt.Fprintf(b, "\tout.%s = m.%s\n", m.name, m.name)
		case "deref":
			fmt.Fprintf(b, "\tout.%s = *m.%s\n", m.name, m.name)
		case "deref-optional":
			fmt.Fprintf(b, "\tif m.%s != nil {\n\t\tout.%s = *m.%s\n\t}\n", m.name, m.name, m.name)
		}
	}
	b.WriteString("\treturn out, true\n}\n")
}

// wrap breaks a generated doc comment into lines of at most 96 characters.
func wrap(s string) string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > 96 {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	return strings.Join(append(lines, line), "\n")
}
