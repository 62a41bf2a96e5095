package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestComparisonRules breaks one rule of the comparison report per case, on a valid document of
// its corpus, and expects a semantic violation at the pointer (and no other kind of violation).
func TestComparisonRules(t *testing.T) {
	load := func(t *testing.T, name string) map[string]any {
		data, err := os.ReadFile(filepath.Join("testdata", contract.Comparison, "valid", name))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		return doc
	}
	const ok, failed, refused, evidence = "declared-ab-variants-ok.json", "same-environment-rule-failed.json", "reversed-pair-refused.json", "evidence-errors-changed-records.json"
	for _, tc := range []struct {
		name, base, pointer string
		mutate              func(t *testing.T, d map[string]any)
	}{
		{"compatible without a mode", ok, "/compatible", func(t *testing.T, d map[string]any) {
			set(t, d, "/mode", nil)
			set(t, d, "/ok", false)
			set(t, d, "/evaluations", []any{})
		}},
		{"compatible with a rejected difference", ok, "/compatible", func(t *testing.T, d map[string]any) {
			refusedDoc := load(t, refused)
			set(t, d, "/rejected_differences", refusedDoc["rejected_differences"])
		}},
		{"incompatible though nothing was rejected", ok, "/compatible", func(t *testing.T, d map[string]any) {
			set(t, d, "/compatible", false)
			set(t, d, "/ok", false)
			set(t, d, "/evaluations", []any{})
		}},
		{"ok with a failed rule", failed, "/ok", func(t *testing.T, d map[string]any) {
			set(t, d, "/ok", true)
		}},
		{"ok with evidence errors", evidence, "/ok", func(t *testing.T, d map[string]any) {
			set(t, d, "/ok", true)
		}},
		{"ok though refused", refused, "/ok", func(t *testing.T, d map[string]any) {
			set(t, d, "/ok", true)
		}},
		{"rules evaluated on refused receipts", refused, "/evaluations", func(t *testing.T, d map[string]any) {
			set(t, d, "/evaluations", load(t, ok)["evaluations"])
		}},
		{"a failure without a code", failed, "/evaluations/5/code", func(t *testing.T, d map[string]any) {
			// Evaluation 5 is the first failed one (a degraded_row refusal of row c2-r0).
			evals := d["evaluations"].([]any)
			for i, e := range evals {
				if e.(map[string]any)["status"] == "failed" {
					if i != 5 {
						t.Fatalf("the first failed evaluation is %d, not 5", i)
					}
					break
				}
			}
			set(t, d, "/evaluations/5/code", nil)
		}},
		{"a pass with a code", ok, "/evaluations/0/code", func(t *testing.T, d map[string]any) {
			set(t, d, "/evaluations/0/code", "rule_failed")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := load(t, tc.base)
			tc.mutate(t, doc)
			out, err := CheckDocument(roundTrip(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range out.Violations {
				if !errors.Is(v, ErrSemantic) {
					t.Errorf("unexpected non-semantic violation %v", v)
				}
				if v.Pointer == tc.pointer {
					found = true
				}
			}
			if !found {
				t.Errorf("want a semantic violation at %s, got %v", tc.pointer, out.Violations)
			}
		})
	}
	files, _ := filepath.Glob(filepath.Join("testdata", contract.Comparison, "valid", "*.json"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := CheckDocument(data); err != nil || !out.Valid() || out.Contract.Name != contract.Comparison {
			t.Errorf("%s: %v %v", f, err, out.Violations)
		}
	}
}
