package gen

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cuejson "cuelang.org/go/encoding/json"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The repository root, relative to this package.
const root = "../../.."

func generate(t *testing.T) []Schema {
	t.Helper()
	schemas, err := Generate(filepath.Join(root, "cue"))
	if err != nil {
		t.Fatal(err)
	}
	return schemas
}

// TestUpToDate fails when the committed JSON Schemas differ from what the CUE source exports.
func TestUpToDate(t *testing.T) {
	stale, err := Stale(generate(t), filepath.Join(root, "schemas", "json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stale {
		t.Errorf("%s is stale; run: make generate", s)
	}
}

// TestExportIsDeterministic exports twice and compares bytes.
func TestExportIsDeterministic(t *testing.T) {
	a, b := generate(t), generate(t)
	for i := range a {
		if !bytes.Equal(a[i].JSON, b[i].JSON) {
			t.Errorf("%s: two exports differ", a[i].Name)
		}
	}
}

// TestCorpusAgreement feeds every example document under schemas/testdata/<contract>/{valid,invalid}
// to CUE and to the exported JSON Schema and requires both verdicts to equal the expected one.
// This is the check that catches the losses of the export that no lint can see.
func TestCorpusAgreement(t *testing.T) {
	for _, s := range generate(t) {
		t.Run(s.Name, func(t *testing.T) {
			c := jsonschema.NewCompiler()
			c.DefaultDraft(jsonschema.Draft2020)
			c.AssertFormat()
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.JSON))
			if err != nil {
				t.Fatal(err)
			}
			if err := c.AddResource(s.ID, doc); err != nil {
				t.Fatal(err)
			}
			sch, err := c.Compile(s.ID)
			if err != nil {
				t.Fatal(err)
			}
			counts := map[bool]int{}
			for _, want := range []bool{true, false} {
				dir := "invalid"
				if want {
					dir = "valid"
				}
				files, _ := filepath.Glob(filepath.Join(root, "schemas", "testdata", s.Name, dir, "*.json"))
				for _, f := range files {
					counts[want]++
					data, err := os.ReadFile(f)
					if err != nil {
						t.Fatal(err)
					}
					cueErr := validateCUE(s.Value, f, data)
					inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
					if err != nil {
						t.Fatalf("%s: %v", f, err)
					}
					jsErr := sch.Validate(inst)
					if (cueErr == nil) != want || (jsErr == nil) != want {
						t.Errorf("%s/%s: want valid=%v\n  cue: %v\n  jsonschema: %v", dir, filepath.Base(f), want, cueErr, jsErr)
					}
				}
			}
			if counts[true] == 0 || counts[false] < 3 {
				t.Errorf("corpus too small: %d valid, %d invalid documents (need at least 1 and 3)", counts[true], counts[false])
			}
		})
	}
}

func validateCUE(def cue.Value, name string, data []byte) error {
	expr, err := cuejson.Extract(name, data)
	if err != nil {
		return err
	}
	return def.Unify(cuecontext.New().BuildExpr(expr)).Validate(cue.Concrete(true))
}

// TestLintCatchesKnownLosses proves the lint rejects each visible loss.
func TestLintCatchesKnownLosses(t *testing.T) {
	for name, schema := range map[string]string{
		"true subschema":  `{"type":"object","additionalProperties":false,"properties":{"a":true}}`,
		"const {}":        `{"type":"object","additionalProperties":false,"properties":{"a":{"const":{}}}}`,
		"open object":     `{"type":"object","properties":{"a":{"type":"string"}}}`,
		"re2-only regexp": `{"type":"string","pattern":"(?i)^abc$"}`,
	} {
		if err := Lint([]byte(schema)); !errors.Is(err, ErrLossy) {
			t.Errorf("%s: Lint = %v, want ErrLossy", name, err)
		}
	}
	ok := `{"type":"object","additionalProperties":false,"properties":{"a":{"type":"array","uniqueItems":true}},"if":{"properties":{"k":{"const":"x"}}}}`
	if err := Lint([]byte(ok)); err != nil {
		t.Errorf("clean schema: %v", err)
	}
}

// TestIDsAndFiles pins the naming rule: $id ends in the file name, and the file name carries the major version.
func TestIDsAndFiles(t *testing.T) {
	for _, s := range generate(t) {
		if !strings.HasSuffix(s.ID, "/"+s.File) {
			t.Errorf("%s: $id %s does not end in /%s", s.Name, s.ID, s.File)
		}
		if !bytes.Contains(s.JSON, []byte(`"$id": "`+s.ID+`"`)) {
			t.Errorf("%s: $id missing from the exported schema", s.Name)
		}
	}
}
