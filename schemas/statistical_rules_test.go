package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestStatisticalRuleRules: not_worse_significantly needs a confidence, a performance rule of
// scope row, a per-request distribution formula and a direction; the exact operators take no
// confidence. Each case breaks one rule of the statistical ttft_ms.p50 rule (metric_rules/1 of
// testdata/rules/workload-serving.json turned statistical) and expects a semantic violation at
// its pointer; the unbroken statistical rule passes.
func TestStatisticalRuleRules(t *testing.T) {
	base := func(t *testing.T) map[string]any {
		data, err := os.ReadFile(filepath.Join("testdata", "rules", "workload-serving.json"))
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatal(err)
		}
		set(t, doc, "/comparison_policy/metric_rules/1/operator", "not_worse_significantly")
		set(t, doc, "/comparison_policy/metric_rules/1/confidence", 0.95)
		return doc
	}
	t.Run("valid", func(t *testing.T) {
		out, err := CheckDocument(roundTrip(t, base(t)))
		if err != nil {
			t.Fatal(err)
		}
		if !out.Valid() {
			t.Fatalf("a statistical ttft rule is refused: %v", out.Violations)
		}
	})
	const r = "/comparison_policy/metric_rules/1/"
	for _, tc := range []struct {
		name, pointer string
		mutate        func(t *testing.T, d map[string]any)
	}{
		{"statistical rule without confidence", r + "confidence", func(t *testing.T, d map[string]any) {
			delete(d["comparison_policy"].(map[string]any)["metric_rules"].([]any)[1].(map[string]any), "confidence")
		}},
		{"statistical correctness rule", r + "metric_class", func(t *testing.T, d map[string]any) {
			set(t, d, r+"metric_class", "correctness")
		}},
		{"statistical rule of scope result", r + "scope", func(t *testing.T, d map[string]any) {
			set(t, d, r+"scope", "result")
		}},
		{"statistical rule on a throughput", r + "formula", func(t *testing.T, d map[string]any) {
			set(t, d, r+"metric", "request_throughput")
			set(t, d, r+"unit", "requests/s")
			set(t, d, r+"aggregation", "rate")
			set(t, d, r+"direction", "higher_is_better")
			set(t, d, r+"formula", "request_throughput.v1")
		}},
		{"statistical rule without direction", r + "direction", func(t *testing.T, d map[string]any) {
			set(t, d, r+"direction", "none")
		}},
		{"exact rule with a confidence", "/comparison_policy/metric_rules/0/confidence", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparison_policy/metric_rules/0/confidence", 0.95)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := base(t)
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
}
