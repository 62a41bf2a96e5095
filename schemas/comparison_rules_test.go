package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	const significant = "declared-ab-variants-significantly-worse.json"
	for _, tc := range []struct {
		name, base, pointer string
		mutate              func(t *testing.T, d map[string]any)
	}{
		{"significance on an exact rule", significant, "/evaluations/0/significance", func(t *testing.T, d map[string]any) {
			evs := d["evaluations"].([]any)
			evs[0].(map[string]any)["significance"] = evs[len(evs)-1].(map[string]any)["significance"]
		}},
		{"significant against its p-value", significant, "/evaluations/LAST/significance/significant", func(t *testing.T, d map[string]any) {
			lastSig(d)["p_value"] = 0.5
		}},
		{"failed without a significant change", significant, "/evaluations/LAST/status", func(t *testing.T, d map[string]any) {
			lastSig(d)["p_value"] = 0.5
			lastSig(d)["significant"] = false
		}},
		{"shift interval reversed", significant, "/evaluations/LAST/significance/shift_low", func(t *testing.T, d map[string]any) {
			lastSig(d)["shift_low"] = 99.0
		}},
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
			pointer := strings.Replace(tc.pointer, "LAST", strconv.Itoa(len(doc["evaluations"].([]any))-1), 1)
			out, err := CheckDocument(roundTrip(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range out.Violations {
				if !errors.Is(v, ErrSemantic) {
					t.Errorf("unexpected non-semantic violation %v", v)
				}
				if v.Pointer == pointer {
					found = true
				}
			}
			if !found {
				t.Errorf("want a semantic violation at %s, got %v", pointer, out.Violations)
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

// lastSig is the significance of the last evaluation of a comparison document.
func lastSig(d map[string]any) map[string]any {
	evs := d["evaluations"].([]any)
	return evs[len(evs)-1].(map[string]any)["significance"].(map[string]any)
}
