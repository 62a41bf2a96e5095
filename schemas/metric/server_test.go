package metric

import (
	"fmt"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

const pageBefore = `# HELP gen_tokens_total Generated tokens.
# TYPE gen_tokens_total counter
gen_tokens_total 100
# HELP reqs_total Requests.
# TYPE reqs_total counter
reqs_total{code="200",endpoint="/v1/chat"} 5
reqs_total{code="500",endpoint="/v1/chat"} 1
# HELP resets_total Resets.
# TYPE resets_total counter
resets_total 9
# HELP gone_total Gone.
# TYPE gone_total counter
gone_total 1
# HELP wait_seconds Queue wait.
# TYPE wait_seconds histogram
wait_seconds_bucket{le="0.1"} 1
wait_seconds_bucket{le="+Inf"} 2
wait_seconds_sum 0.5
wait_seconds_count 2
# HELP running Running.
# TYPE running gauge
running 3
`

const pageAfter = `# TYPE gen_tokens_total counter
gen_tokens_total 164
# TYPE reqs_total counter
reqs_total{endpoint="/v1/chat",code="200"} 13
reqs_total{code="500",endpoint="/v1/chat"} 1
reqs_total{code="429",endpoint="/v1/chat"} 2
# TYPE resets_total counter
resets_total 2
# TYPE wait_seconds histogram
wait_seconds_bucket{le="0.1"} 3
wait_seconds_bucket{le="+Inf"} 6
wait_seconds_sum 1.75
wait_seconds_count 6
# TYPE running gauge
running 0
`

func TestServerTelemetry(t *testing.T) {
	ms, series, warns, err := ServerTelemetry([]byte(pageBefore), []byte(pageAfter))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		if !m.Diagnostic || m.Formula != "telemetry_delta.v1" || m.Aggregation != "sum" {
			t.Errorf("%+v not a diagnostic delta", m)
		}
		got[m.Name] = m.Value
	}
	want := map[string]float64{
		"server.gen_tokens_total.delta":   64,
		"server.reqs_total.delta":         10, // 8 + 0 + 2 (a new series counts from zero)
		"server.wait_seconds_count.delta": 4,
		"server.wait_seconds_sum.delta":   1.25,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("metrics %v", got)
	}
	var labels []string
	for _, s := range series {
		if s.Name == "reqs_total" {
			labels = append(labels, s.Labels)
		}
	}
	if strings.Join(labels, " ") != `{code="200",endpoint="/v1/chat"} {code="429",endpoint="/v1/chat"} {code="500",endpoint="/v1/chat"}` {
		t.Errorf("labels %q", labels)
	}
	if len(warns) != 2 || !strings.Contains(warns[0], "gone_total vanished") || !strings.Contains(warns[1], "resets_total decreased") {
		t.Errorf("warnings %q", warns)
	}
	if _, _, _, err := ServerTelemetry([]byte("not a page {"), []byte(pageAfter)); err == nil {
		t.Error("a malformed page parsed")
	}
}

// TestServerTelemetryVLLMNames: vLLM's namespaced families ("vllm:prefix_cache_hits") become
// metrics with '_' for ':' (docs/caching.md); a family that then collides with another keeps
// only its series.
func TestServerTelemetryVLLMNames(t *testing.T) {
	before := "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"m\"} 100\n" +
		"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"m\"} 40\n" +
		"# TYPE vllm_prefix_cache_hits_total counter\nvllm_prefix_cache_hits_total 1\n"
	after := "# TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{model_name=\"m\"} 160\n" +
		"# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{model_name=\"m\"} 88\n" +
		"# TYPE vllm_prefix_cache_hits_total counter\nvllm_prefix_cache_hits_total 2\n"
	ms, series, warns, err := ServerTelemetry([]byte(before), []byte(after))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, m := range ms {
		got[m.Name] = m.Value
	}
	// vLLM's prefix-cache families also give the row's hit rate, 48 of 60 queried tokens (the
	// colliding vllm_ family is not vLLM's).
	if got["server.vllm_prefix_cache_queries_total.delta"] != 60 || got["server_prefix_cache_hit_rate"] != 0.8 || len(got) != 3 {
		t.Errorf("metrics %v", got)
	}
	// "vllm:prefix_cache_hits_total" sorts before "vllm_prefix_cache_hits_total": it keeps the name.
	if got["server.vllm_prefix_cache_hits_total.delta"] != 48 {
		t.Errorf("hits delta %v, want 48", got["server.vllm_prefix_cache_hits_total.delta"])
	}
	if len(series) != 3 || len(warns) != 1 || !strings.Contains(warns[0], "vllm_prefix_cache_hits_total: its metric name") {
		t.Errorf("series %d, warnings %q", len(series), warns)
	}
}

// TestServerRatioMetrics: qualsim's speculative-decoding counters give the acceptance rate (accepted over
// draft tokens between the scrapes); a denominator that did not move gives no ratio.
func TestServerRatioMetrics(t *testing.T) {
	page := func(draft, accepted int) string {
		return fmt.Sprintf("# TYPE qualsim_spec_decode_num_draft_tokens_total counter\nqualsim_spec_decode_num_draft_tokens_total %d\n"+
			"# TYPE qualsim_spec_decode_num_accepted_tokens_total counter\nqualsim_spec_decode_num_accepted_tokens_total %d\n", draft, accepted)
	}
	ms, _, _, err := ServerTelemetry([]byte(page(30, 10)), []byte(page(90, 52)))
	if err != nil {
		t.Fatal(err)
	}
	var rate *contract.Metric
	for i := range ms {
		if ms[i].Name == "server_spec_decode_acceptance_rate" {
			rate = &ms[i]
		}
	}
	if rate == nil || rate.Value != 0.7 || !rate.Diagnostic || rate.Formula != "server_spec_decode_acceptance_rate.v1" {
		t.Fatalf("acceptance rate %+v; want 42/60 = 0.7, diagnostic", rate)
	}
	ms, _, _, _ = ServerTelemetry([]byte(page(30, 10)), []byte(page(30, 10)))
	for _, m := range ms {
		if m.Name == "server_spec_decode_acceptance_rate" {
			t.Fatalf("a ratio over an unmoved denominator: %+v", m)
		}
	}
}
