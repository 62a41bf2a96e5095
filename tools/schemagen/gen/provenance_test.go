package gen

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// provModule writes a CUE module with one package holding src and returns its directory.
func provModule(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{
		"cue.mod/module.cue": "module: \"qualkit.dev/contracts@v0\"\nlanguage: {\n\tversion: \"v0.17.1\"\n}\n",
		"thing/v1/thing.cue": src,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func provTables(t *testing.T, cueDir string) ([]ContractProvenance, error) {
	t.Helper()
	schemas, err := Generate(cueDir)
	if err != nil {
		t.Fatal(err)
	}
	return BuildProvenance(schemas)
}

const provSrc = `package thing

import "list"

#Thing: {
	schema!: "qualkit.thing.v1" @prov(bound, "the contract name")
	ref!: #Ref | null @prov(bound, "the input (x_mismatch)")
	items!: [...#Item] & list.MinItems(1) & list.MaxItems(8) @prov(derived, "one per input")
	byName!: {[=~"^[a-z]+$"]: #Item} @prov(derived, "keyed by name")
	labels!: {[=~"^[a-z]+$"]: string} @prov(descriptive)
	inline!: {
		a!: int @prov(observed, "a >= 0 (a_implausible)", gap="not bounded above")
		b?: string
	} @prov(observed, "the inline block")
} @jsonschema(id="https://qualkit.dev/schemas/thing.v1.schema.json") @evidence()

#Ref: {
	digest!: string @prov(derived, "sha256 of the file")
}

#Item: {
	value!: number @prov(observed, "value <= 10")
}

#Input: {
	x!: int
} @jsonschema(id="https://qualkit.dev/schemas/input.v1.schema.json")
`

// TestBuildProvenance: the paths of an evidence contract's fields (through a nullable
// definition, a constrained list, a map of objects; a map of scalars is a leaf), their kinds,
// rules and gaps; a field without @prov has an empty kind; a definition without @evidence() has
// no table.
func TestBuildProvenance(t *testing.T) {
	tables, err := provTables(t, provModule(t, provSrc))
	if err != nil {
		t.Fatal(err)
	}
	if len(tables) != 1 || tables[0].Name != "thing.v1" {
		t.Fatalf("tables %+v, want thing.v1 only", tables)
	}
	var got []string
	for _, f := range tables[0].Fields {
		got = append(got, f.Path+" "+f.Kind+" "+f.Rule+" | "+f.Gap)
	}
	want := []string{
		"/schema bound the contract name | ",
		"/ref bound the input (x_mismatch) | ",
		"/ref/digest derived sha256 of the file | ",
		"/items derived one per input | ",
		"/items/*/value observed value <= 10 | ",
		"/byName derived keyed by name | ",
		"/byName/*/value observed value <= 10 | ",
		"/labels descriptive  | ",
		"/inline observed the inline block | ",
		"/inline/a observed a >= 0 (a_implausible) | not bounded above",
		"/inline/b   | ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("fields:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := tables[0].Fields[0].Where; !strings.HasPrefix(w, "thing/v1/thing.cue:6:") && !strings.Contains(w, "thing.cue:6:") {
		t.Errorf("where %q, want thing.cue line 6", w)
	}
}

// TestBuildProvenanceRefusesBadAttributes: an unknown key, a third positional argument or no kind.
func TestBuildProvenanceRefusesBadAttributes(t *testing.T) {
	for _, attr := range []string{`@prov(observed, "x", why="y")`, `@prov(observed, "x", "y")`, `@prov(gap="y")`} {
		src := "package thing\n\n#Thing: {\n\ta!: int " + attr + "\n} @jsonschema(id=\"https://qualkit.dev/schemas/thing.v1.schema.json\") @evidence()\n"
		if _, err := provTables(t, provModule(t, src)); err == nil || !strings.Contains(err.Error(), "/a") {
			t.Errorf("%s: err %v, want an error naming /a", attr, err)
		}
	}
}

// TestProvenanceDocs: the section replaces the one between the markers, is appended to a page
// without markers, and a page with one marker or none at all is an error.
func TestProvenanceDocs(t *testing.T) {
	tables := []ContractProvenance{{Name: "thing.v1", Fields: []FieldProvenance{
		{Path: "/a", Kind: "observed", Rule: "a | b", Gap: "not bounded"},
		{Path: "/b"},
	}}}
	section := ProvenanceMarkdown(tables[0])
	for _, want := range []string{"| `/a` | observed | a \\| b | not bounded |", "| `/b` | **none** |  |  |", "2 fields, 1 with a gap."} {
		if !strings.Contains(section, want) {
			t.Errorf("section lacks %q:\n%s", want, section)
		}
	}
	for _, tc := range []struct {
		page, want string
		err        bool
	}{
		{"# Thing\n\ntext\n", "# Thing\n\ntext\n\n" + section, false},
		{"# Thing\n\n" + ProvenanceBegin + "\nold\n" + ProvenanceEnd + "\n\n## After\n", "# Thing\n\n" + section + "\n## After\n", false},
		{"# Thing\n\n" + ProvenanceBegin + "\nold\n", "", true},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "thing.v1.md"), []byte(tc.page), 0o644); err != nil {
			t.Fatal(err)
		}
		docs, err := ProvenanceDocs(tables, dir)
		if tc.err {
			if err == nil {
				t.Errorf("page %q: no error", tc.page)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(docs[0].Source) != tc.want {
			t.Errorf("page %q:\n%s\nwant:\n%s", tc.page, docs[0].Source, tc.want)
		}
		if stale, err := StaleDocs(docs, dir); err != nil || len(stale) != 1 {
			t.Errorf("stale %v %v, want the page", stale, err)
		}
		if err := WriteDocs(docs, dir); err != nil {
			t.Fatal(err)
		}
		if stale, err := StaleDocs(docs, dir); err != nil || len(stale) != 0 {
			t.Errorf("after writing: stale %v %v", stale, err)
		}
	}
	if _, err := ProvenanceDocs(tables, t.TempDir()); !errors.Is(err, ErrNoPage) {
		t.Errorf("no page: %v, want ErrNoPage", err)
	}
}

// TestProvenanceDocsUpToDate fails when a contract page's provenance section differs from what the
// CUE source generates.
func TestProvenanceDocsUpToDate(t *testing.T) {
	schemas, err := Generate(filepath.Join(root, "cue"))
	if err != nil {
		t.Fatal(err)
	}
	tables, err := BuildProvenance(schemas)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "docs", "contracts")
	docs, err := ProvenanceDocs(tables, dir)
	if err != nil {
		t.Fatal(err)
	}
	stale, err := StaleDocs(docs, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Errorf("%s is stale; run: make generate", s)
	}
}

const provUnionSrc = `package thing

import "list"

Body: {
	items!: #Items @prov(bound, "the items")
}

#Items: [...#Item] & list.MinItems(1) & list.MaxItems(4)

#Item: {
	v!: int @prov(observed, "v >= 0")
}

#A: {
	kind!: "a" @prov(bound, "the discriminator")
	a!:    int @prov(observed, "a measurement")
}

#B: {
	kind!: "b" @prov(bound, "the discriminator")
	body!: {Body} @prov(bound, "the body")
}

#Union: {kind!: "a" | "b", ...} & matchIf({kind!: "a"}, #A, #B) @jsonschema(id="https://qualkit.dev/schemas/union.v1.schema.json") @evidence()

#Embeds: {
	schema!: "qualkit.embeds.v1" @prov(bound, "the contract name")
	Body
} @jsonschema(id="https://qualkit.dev/schemas/embeds.v1.schema.json") @evidence()
`

// TestBuildProvenanceUnionsAndEmbeddings: a discriminated union lists the fields of every
// alternative once (the shared discriminator takes an alternative's attribute), and an embedded
// section's fields, through a reference to a constrained list, are the embedding contract's.
func TestBuildProvenanceUnionsAndEmbeddings(t *testing.T) {
	tables, err := provTables(t, provModule(t, provUnionSrc))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, tb := range tables {
		for _, f := range tb.Fields {
			got[tb.Name] = append(got[tb.Name], f.Path+" "+f.Kind+" "+f.Rule)
		}
	}
	want := map[string][]string{
		"embeds.v1": {"/items bound the items", "/items/*/v observed v >= 0", "/schema bound the contract name"}, // CUE's field order: the embedded section first
		"union.v1":  {"/kind bound the discriminator", "/a observed a measurement", "/body bound the body", "/body/items bound the items", "/body/items/*/v observed v >= 0"},
	}
	for name, w := range want {
		if strings.Join(got[name], "\n") != strings.Join(w, "\n") {
			t.Errorf("%s:\n%s\nwant:\n%s", name, strings.Join(got[name], "\n"), strings.Join(w, "\n"))
		}
	}
}
