package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// TestCheckDocumentRejections: each kind of bad input is rejected with its sentinel and the JSON
// pointer of the offending value.
func TestCheckDocumentRejections(t *testing.T) {
	recipe := func(edit func(string) string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "rules", "launch-recipe.json"))
		if err != nil {
			t.Fatal(err)
		}
		return edit(string(b))
	}
	for _, tc := range []struct {
		name, doc, pointer string
		want               error
	}{
		{"duplicate key", recipe(func(s string) string {
			return strings.Replace(s, `"model_id": "qualsim-tiny",`, `"model_id": "qualsim-tiny", "model_id": "other",`, 1)
		}), "/model_id", jsonstrict.ErrDuplicateKey},
		{"NaN", recipe(func(s string) string {
			return strings.Replace(s, `"startup_timeout_seconds": 10`, `"startup_timeout_seconds": NaN`, 1)
		}), "/startup_timeout_seconds", jsonstrict.ErrNonFinite},
		{"unknown field", recipe(func(s string) string {
			return strings.Replace(s, `"path": "/v1/models",`, `"path": "/v1/models", "retries": 3,`, 1)
		}), "/readiness", ErrSchema},
		{"trailing garbage", recipe(func(s string) string { return s + "}" }), "", jsonstrict.ErrTrailingData},
		{"missing required field", recipe(func(s string) string {
			return strings.Replace(s, `"model_id": "qualsim-tiny",`, ``, 1)
		}), "", ErrSchema},
		{"bad digest pattern", `{"schema":"qualkit.lifecycle-record.v1","recipe":{"id":"qualsim-local","digest":"sha256:ABC"},"launch":null,"port":{"host":"127.0.0.1","port":18080,"free_before_launch":false},"readiness":null,"listener":null,"shutdown":null,"residue":{"processes":[],"listeners":[],"killed":false},"unsupported":[],"failures":["port taken"],"verdict":"failed"}`,
			"/recipe/digest", ErrSchema},
		{"invalid UTF-8", recipe(func(s string) string {
			return strings.Replace(s, `"The built-in`, "\"The \xff built-in", 1)
		}), "/description", jsonstrict.ErrInvalidUTF8},
		{"unknown contract", `{"schema":"qualkit.nothing.v1"}`, "/schema", ErrUnknownContract},
		{"kiln schema_version document", `{"schema_version":1,"workload_id":"x"}`, "/schema_version", ErrUnknownContract},
		{"not an object", `[1,2]`, "", ErrUnknownContract},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := CheckDocument([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			if out.Valid() {
				t.Fatal("accepted")
			}
			for _, v := range out.Violations {
				if v.Pointer == tc.pointer && errors.Is(v, tc.want) {
					return
				}
			}
			t.Errorf("want %v at %q, got %v", tc.want, tc.pointer, out.Violations)
		})
	}
}

// TestKilnV1EvidenceRefused: the real Kiln v1 oracle result is refused, naming its temperature
// policy markers, while it still parses and its self-hash verifies.
func TestKilnV1EvidenceRefused(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kiln", "oracle-result-v1-rocm-hf-next-token-guarded-fingerprint.json"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := CheckDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, v := range out.Violations {
		if !errors.Is(v, ErrHistorical) {
			t.Errorf("non-historical violation %v", v)
		}
		got[v.Pointer] = v.Error()
	}
	for ptr, marker := range map[string]string{
		"/schema":                            "kiln.rocm-hf-next-token-oracle.v1",
		"/containment/service/schema":        "kiln.hf-thermal-containment.v1",
		"/model_fingerprint/thermal":         "thermal",
		"/implementation/supervisor_sha256":  "supervisor_sha256",
		"/containment/memory_max_gib":        "memory_max_gib",
		"/containment/swap_max_bytes":        "swap_max_bytes",
		"/containment/service/policy/schema": "kiln.host-thermal-policy.v1",
	} {
		if !strings.Contains(got[ptr], "marker "+marker) {
			t.Errorf("%s: want marker %s, got %q", ptr, marker, got[ptr])
		}
	}
	doc, err := jsonstrict.Parse(data)
	if err != nil {
		t.Fatalf("historical evidence must still parse for audit display: %v", err)
	}
	if err := jsonstrict.VerifyKilnSelfHash(doc, "result_sha256"); err != nil {
		t.Errorf("self-hash: %v", err)
	}
}

// TestRepositoryExamplesValid: every workload and launch recipe committed under workloads/ is valid.
func TestRepositoryExamplesValid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("..", "workloads", "*.json"))
	more, _ := filepath.Glob(filepath.Join("..", "workloads", "launch", "*.json"))
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("found only %d example files under workloads/", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := CheckDocument(data)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range out.Violations {
			t.Errorf("%s: %v", f, v)
		}
	}
}

// TestCorpusVerdicts: every corpus document under testdata/<contract>/valid passes the whole check
// (schema and semantic rules), every one under invalid/ fails it.
func TestCorpusVerdicts(t *testing.T) {
	for _, c := range Contracts() {
		for dir, want := range map[string]bool{"valid": true, "invalid": false} {
			files, _ := filepath.Glob(filepath.Join("testdata", c.Name, dir, "*.json"))
			for _, f := range files {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				out, err := CheckDocument(data)
				if err != nil {
					t.Fatal(err)
				}
				if out.Valid() != want {
					t.Errorf("%s: valid=%v, want %v: %v", f, out.Valid(), want, out.Violations)
				}
				if want && out.Contract.Name != c.Name {
					t.Errorf("%s: detected %q, want %q", f, out.Contract.Name, c.Name)
				}
			}
		}
	}
}
