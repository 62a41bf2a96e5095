package verify

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestServerRatiosResealed: a row's server counter ratio (server_prefix_cache_hit_rate) is
// recomputed from the row's own family deltas: the frozen row given vLLM's prefix-cache deltas
// and their ratio, re-bound and re-signed, verifies; the ratio edited, a ratio without its
// denominator, and a missing ratio are rejected (metric_mismatch). On 38f126b an edited ratio
// verified.
func TestServerRatiosResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	k := newTestKey(t)
	delta := func(name string, v float64) map[string]any {
		return map[string]any{"name": name, "value": v, "unit": "count", "aggregation": "sum", "direction": "none", "formula": "telemetry_delta.v1", "samples": json.Number("1"), "diagnostic": true}
	}
	ratio := func(v float64) map[string]any {
		return map[string]any{"name": "server_prefix_cache_hit_rate", "value": v, "unit": "fraction", "aggregation": "exact", "direction": "none", "formula": "server_prefix_cache_hit_rate.v1", "samples": json.Number("1"), "diagnostic": true}
	}
	cases := []struct {
		name    string
		metrics []map[string]any
		text    string // "" when it verifies
	}{
		{"the runner's ratio", []map[string]any{delta("server.vllm_prefix_cache_hits_total.delta", 30), delta("server.vllm_prefix_cache_queries_total.delta", 120), ratio(0.25)}, ""},
		{"the ratio edited", []map[string]any{delta("server.vllm_prefix_cache_hits_total.delta", 30), delta("server.vllm_prefix_cache_queries_total.delta", 120), ratio(0.5)}, "the row's server deltas give 30 / 120 = 0.25"},
		{"a ratio without its denominator", []map[string]any{delta("server.vllm_prefix_cache_hits_total.delta", 30), ratio(0.25)}, "no denominator family"},
		{"the ratio left out", []map[string]any{delta("server.vllm_prefix_cache_hits_total.delta", 30), delta("server.vllm_prefix_cache_queries_total.delta", 120)}, "server_prefix_cache_hit_rate is missing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			run := runDirOf(t, root, receipt)
			editJSON(t, filepath.Join(root, run, "cases/000-chat-stream-r000/case-result.json"), func(cr map[string]any) {
				row := cr["rows"].([]any)[0].(map[string]any)
				ms := row["metrics"].([]any)
				for _, m := range tc.metrics {
					ms = append(ms, m)
				}
				row["metrics"] = ms
			})
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if tc.text == "" {
				if res.Verdict != Verified {
					t.Fatalf("the runner's ratio refused:%s", findingsOf(res))
				}
				return
			}
			if !hasFinding(res, CheckTolerances, ErrMetricMismatch, tc.text) {
				t.Fatalf("not rejected (metric_mismatch %q):%s", tc.text, findingsOf(res))
			}
		})
	}
}
