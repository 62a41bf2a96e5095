package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCapacitySearchRules: the semantic rules of a serving case's capacity_search and pareto,
// each broken once on the valid capacity workload of the corpus.
func TestCapacitySearchRules(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "workload.v1", "valid", "serving-capacity-search.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(c map[string]any)
		want string // "" = valid
	}{
		{"as committed", func(map[string]any) {}, ""},
		{"two first probes", func(c map[string]any) { c["concurrency"] = []any{2, 4} }, "/concurrency: a capacity search declares one concurrency"},
		{"first probe above max", func(c map[string]any) { c["concurrency"] = []any{64} }, "/concurrency/0: the first probe 64 is above capacity_search.max 32"},
		{"repetitions", func(c map[string]any) { c["repetitions"] = 2 }, "/repetitions: a capacity search runs each probe once"},
		{"open loop", func(c map[string]any) {
			c["rate"] = map[string]any{"mode": "constant", "requests_per_second": 10}
		}, "/rate: a capacity search probes closed-loop concurrency"},
		{"no SLO gate", func(c map[string]any) { c["slo"] = map[string]any{} }, "/slo: a capacity search needs an SLO gate"},
		{"resolution not below max", func(c map[string]any) {
			c["capacity_search"].(map[string]any)["resolution"] = 32
		}, "/capacity_search/resolution: resolution 32 is not below max 32"},
		{"pareto latency not a percentile", func(c map[string]any) {
			c["pareto"].(map[string]any)["latency"] = "ttft_ms.mean"
		}, `/pareto/latency: "ttft_ms.mean" is not a percentile`},
		{"pareto latency higher is better", func(c map[string]any) {
			c["pareto"].(map[string]any)["latency"] = "decode_rate.p50"
		}, `/pareto/latency: "decode_rate.p50" is not a percentile`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d map[string]any
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatal(err)
			}
			tc.edit(d["variants"].([]any)[0].(map[string]any)["cases"].([]any)[0].(map[string]any))
			b, _ := json.Marshal(d)
			out, err := CheckDocument(b)
			if err != nil {
				t.Fatal(err)
			}
			var msgs []string
			for _, v := range out.Violations {
				msgs = append(msgs, v.Pointer+": "+v.Err.Error())
				if !errors.Is(v.Err, ErrSemantic) {
					t.Errorf("%s is not a semantic violation: %v", v.Pointer, v.Err)
				}
			}
			got := strings.Join(msgs, "; ")
			ptr, text, _ := strings.Cut(tc.want, ": ")
			if (tc.want == "") != (got == "") || (tc.want != "" && (!strings.Contains(got, "/variants/0/cases/0"+ptr+": ") || !strings.Contains(got, text))) {
				t.Fatalf("violations %q, want %q", got, tc.want)
			}
		})
	}
}
