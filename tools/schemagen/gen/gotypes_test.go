package gen

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A small CUE module with the shapes of the driver contracts: a shared header and two bodies as
// regular fields (parts), a result embedding the header and a body (one member documented where it
// is embedded), and a discriminated union whose alternatives carry different bodies.
var sectionsModule = map[string]string{
	"cue.mod/module.cue": "module: \"example.dev/t@v0\"\nlanguage: version: \"v0.17.1\"\n",
	"common/common.cue":  "package common\n\n#ArtifactKinds: {\n\tlog: _ @kind()\n\ttrace: _ @kind()\n}\n\n#Artifact: kind!: or([for k, _ in #ArtifactKinds {k}])\n",
	"parts/parts.cue": `package parts

// Header holds what every result has.
Header: {
	// id names the result.
	id!:    string
	count!: int & >=1
} @go(ResultHeader)

// ABody is the a section.
ABody: {
	a!: int & >=0
} @go(ABody)

// BBody is the b section.
BBody: {
	b!:    =~"^x"
	flag!: bool
} @go(BBody)
`,
	"res/res.cue": `package res

import "example.dev/t/parts"

// #Result is a result.
#Result: {
	schema!: "t.result.v1"
	parts.Header
	parts.ABody

	// a is documented where it is embedded.
	a!:       _
	verdict!: "pass" | "fail"
} @jsonschema(id="https://qualkit.dev/schemas/result.v1.schema.json")
`,
	"out/out.cue": `package out

import "example.dev/t/parts"

// #Out is an output; kind chooses the body.
#Out: {kind!: "a" | "b", ...} & matchIf({kind!: "a"}, #AOut, #BOut) @jsonschema(id="https://qualkit.dev/schemas/out.v1.schema.json")

#AOut: {
	schema!: "t.out.v1"
	kind!:   "a"
	body!:   {parts.ABody} @go(type="Body")
}

#BOut: {
	schema!: "t.out.v1"
	kind!:   "b"
	body!:   {parts.BBody} @go(type="Body")
}
`,
}

func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestEmbeddedSectionsAndUnions generates the Go of the small module: the embedded sections are
// embedded Go structs in source order (the JSON key order), the union's differently typed body is
// one merged type (a member whose zero value is valid is a pointer) with an accessor per
// alternative testing the discriminator; the generated package compiles and its accessors behave;
// an edit of a section changes the merged type and the accessor; a member of an embedded section
// re-declared with a value is refused.
func TestEmbeddedSectionsAndUnions(t *testing.T) {
	cueDir := writeModule(t, sectionsModule)
	files := generateGo(t, cueDir)
	types := goFile(t, files, "zz_generated_types.go")
	for _, want := range []string{
		"type ResultDoc struct { Schema string `json:\"schema\"` ResultHeader ABody Verdict ResultVerdict `json:\"verdict\"` }",
		"type ResultHeader struct { // ID names the result. ID string `json:\"id\"` Count int64 `json:\"count\"` }",
		"type ABody struct { // A is documented where it is embedded. A int64 `json:\"a\"` }",
		"type OutDoc struct { Kind OutKind `json:\"kind\"` Schema string `json:\"schema\"` Body Body `json:\"body\"` }",
		"type Body struct { A *int64 `json:\"a,omitempty\"` B string `json:\"b,omitempty\"` Flag *bool `json:\"flag,omitempty\"` }",
		"func (d OutDoc) ABody() (ABody, bool) { var out ABody if d.Kind != OutKindA { return out, false } m := d.Body if m.A == nil { return out, false } out.A = *m.A return out, true }",
		"func (d OutDoc) BBody() (BBody, bool) { var out BBody if d.Kind != OutKindB { return out, false } m := d.Body if m.B == \"\" || m.Flag == nil { return out, false } out.B = m.B out.Flag = *m.Flag return out, true }",
	} {
		if !strings.Contains(types, want) {
			t.Errorf("the generated types lack\n%s\nin\n%s", want, types)
		}
	}
	if strings.Contains(types, "type BOut") || strings.Contains(types, "type AOut") {
		t.Errorf("the alternatives got types of their own:\n%s", types)
	}

	compileAndRun(t, files, `package contract

import (
	"encoding/json"
	"testing"
)

func TestAccessors(t *testing.T) {
	var a OutDoc
	if err := json.Unmarshal([]byte(`+"`"+`{"schema":"t.out.v1","kind":"a","body":{"a":0}}`+"`"+`), &a); err != nil {
		t.Fatal(err)
	}
	if body, ok := a.ABody(); !ok || body.A != 0 {
		t.Errorf("ABody() = %v, %v; want {0}, true", body, ok)
	}
	if _, ok := a.BBody(); ok {
		t.Error("BBody() of a kind a document is ok")
	}
	if out, _ := json.Marshal(a); string(out) != `+"`"+`{"kind":"a","schema":"t.out.v1","body":{"a":0}}`+"`"+` {
		t.Errorf("round trip %s", out)
	}
	b := OutDoc{Kind: OutKindB, Body: Body{B: "xy"}}
	if _, ok := b.BBody(); ok {
		t.Error("BBody() without flag is ok")
	}
	flag := false
	b.Body.Flag = &flag
	if body, ok := b.BBody(); !ok || body != (BBody{B: "xy"}) {
		t.Errorf("BBody() = %v, %v", body, ok)
	}
	r := ResultDoc{Schema: "t.result.v1", ResultHeader: ResultHeader{ID: "r", Count: 1}, ABody: ABody{A: 3}, Verdict: ResultVerdictPass}
	if out, _ := json.Marshal(r); string(out) != `+"`"+`{"schema":"t.result.v1","id":"r","count":1,"a":3,"verdict":"pass"}`+"`"+` {
		t.Errorf("result encodes as %s", out)
	}
}
`)

	parts := filepath.Join(cueDir, "parts", "parts.cue")
	editFile(t, parts, "\tflag!: bool\n", "\tflag!: bool\n\t// c is new.\n\tc?: =~\"^y\"\n\td!: =~\"^z\"\n")
	after := goFile(t, generateGo(t, cueDir), "zz_generated_types.go")
	for _, want := range []string{
		"Flag *bool `json:\"flag,omitempty\"` // C is new. C string `json:\"c,omitempty\"` D string `json:\"d,omitempty\"` }",
		"if m.B == \"\" || m.Flag == nil || m.D == \"\" { return out, false } out.B = m.B out.Flag = *m.Flag out.C = m.C out.D = m.D",
	} {
		if !strings.Contains(after, want) {
			t.Errorf("after the edit the generated types lack\n%s\nin\n%s", want, after)
		}
	}

	editFile(t, filepath.Join(cueDir, "res", "res.cue"), "a!:       _", "a!:       int")
	schemas, err := Generate(cueDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := GenerateGo(cueDir, schemas); err == nil || !strings.Contains(err.Error(), "may be re-declared only as _") {
		t.Errorf("a re-declared member of an embedded section: err = %v", err)
	}
}

// compileAndRun writes the generated files and a test into a module of their own and runs go test.
func compileAndRun(t *testing.T, files []GoFile, test string) {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to compile the generated package")
	}
	dir := t.TempDir()
	write := func(name, src string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.dev/contract\n\ngo 1.26\n")
	for _, f := range files {
		write(f.Name, string(f.Source))
	}
	write("accessors_test.go", test)
	cmd := exec.Command(goBin, "test", "-count=1", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the generated package fails to build or its test fails: %v\n%s", err, out)
	}
}
