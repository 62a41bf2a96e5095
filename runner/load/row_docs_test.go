package load

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestDocumented: every formula id and metric name the package emits is defined in
// docs/metrics.md, and every formula the page's table defines is one the package emits.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(doc)
	rate := 10.0
	var emitted []contract.Metric
	cached := handRecords()
	for i := range cached {
		n := int64(i)
		cached[i].CachedPromptTokens = &n
	}
	// A session row: the records as two sessions' turns (docs/metrics.md "Sessions").
	sessions := handRecords()
	for i := range sessions {
		sessions[i].Session = &contract.SessionTurn{ID: []string{"session-a", "session-b"}[i%2], Turn: int64(i / 2), HistoryMessages: int64(1 + 2*(i/2)), ReplyDigests: []string{}}
	}
	// A reasoning row: each success's first token event is reasoning, its usage states 1
	// reasoning token (docs/metrics.md "Reasoning tokens").
	reasoning := handRecords()
	for i := range reasoning {
		if u := reasoning[i].Usage; u != nil {
			one := int64(1)
			u.ReasoningTokens = &one
		}
		for k := range reasoning[i].Events {
			if reasoning[i].Events[k].Kind == contract.EventKindContent {
				reasoning[i].Events[k].Kind = contract.EventKindReasoning
				break
			}
		}
	}
	// A tool-call row: each success's token events are tool-call deltas of one valid call
	// (docs/metrics.md "Tool calls").
	tools := handRecords()
	for i := range tools {
		for k := range tools[i].Events {
			if tools[i].Events[k].Kind == contract.EventKindContent {
				tools[i].Events[k].Kind = contract.EventKindToolCall
			}
		}
		if tools[i].Error == nil {
			tools[i].ToolCalls = []contract.ToolCall{{Name: "f", ArgumentsDigest: "sha256:" + strings.Repeat("0", 64), Valid: true}}
		}
	}
	rows := []contract.Row{
		Row(RowSpec{Concurrency: 2, Loop: "closed"}, tools),
		Row(RowSpec{Concurrency: 2, Loop: "closed"}, reasoning),
		Row(RowSpec{Concurrency: 2, Loop: "closed"}, sessions),
		Row(RowSpec{Concurrency: 2, Loop: "closed", SLO: contract.SLO{TTFTMs: 9.5}}, handRecords()),
		Row(RowSpec{Concurrency: 1, Loop: "open", OfferedRate: &rate}, handRecords()),
		Row(RowSpec{Concurrency: 2, Loop: "closed", CacheRegime: contract.CacheRegimeWarm}, cached),
	}
	for _, r := range rows {
		emitted = append(emitted, r.Metrics...)
	}
	emitted = append(emitted, metric.CaseMetrics(rows)...)
	tel, _, _, err := metric.ServerTelemetry([]byte("# TYPE gen_tokens_total counter\ngen_tokens_total 100\n"), []byte("# TYPE gen_tokens_total counter\ngen_tokens_total 164\n"))
	if err != nil {
		t.Fatal(err)
	}
	emitted = append(emitted, tel...)
	// The built-in server ratios (metric.ServerRatios), from qualsim's families.
	ratioPage := func(n int) string {
		var b strings.Builder
		for _, fam := range []string{"qualsim_prefix_cache_queries_total", "qualsim_prefix_cache_hits_total", "qualsim_spec_decode_num_draft_tokens_total", "qualsim_spec_decode_num_accepted_tokens_total"} {
			fmt.Fprintf(&b, "# TYPE %s counter\n%s %d\n", fam, fam, n)
		}
		return b.String()
	}
	ratios, _, _, err := metric.ServerTelemetry([]byte(ratioPage(1)), []byte(ratioPage(5)))
	if err != nil {
		t.Fatal(err)
	}
	emitted = append(emitted, ratios...)
	formulas := map[string]bool{}
	for _, m := range emitted {
		formulas[m.Formula] = true
		if !strings.Contains(page, "`"+m.Formula+"`") {
			t.Errorf("formula %s is not in docs/metrics.md", m.Formula)
		}
		base := m.Name
		switch {
		case strings.HasPrefix(base, "server."):
			base = "server.<family>.delta"
		case strings.HasPrefix(base, "request_failures.") && base != "request_failures.sum":
			base = "request_failures.<class>"
		case strings.HasPrefix(base, "ttft_p50_ms.turn"):
			base = "ttft_p50_ms.turn<k>"
		}
		for _, suffix := range []string{".worst_row", ".best_row", ".p50", ".p90", ".p95", ".p99.9", ".p99", ".min", ".max", ".mean"} {
			if strings.HasSuffix(base, suffix) && !strings.Contains(page, "`"+base+"`") {
				base = strings.TrimSuffix(base, suffix)
				break
			}
		}
		if !strings.Contains(page, "`"+base) {
			t.Errorf("metric %s (%s) is not in docs/metrics.md", m.Name, base)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z0-9_.-]+\\.v[0-9]+)` \\|").FindAllStringSubmatch(page, -1) {
		if !formulas[m[1]] {
			t.Errorf("docs/metrics.md defines %s, which nothing emits", m[1])
		}
	}
}
