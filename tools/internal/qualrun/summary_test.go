package qualrun

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// An open-loop, degraded row without successes: offered and achieved rates, each reason on a line
// of its own, "-" (never 0) for the metrics it does not have, every line within 100 columns.
func TestRowSummaryOpenLoopDegraded(t *testing.T) {
	offered := 50.0
	row := contract.Row{Concurrency: 8, Repetition: 1, Loop: "open", Requests: 10, Successes: 0, Failures: 10,
		Metrics: []contract.Metric{{Name: "request_throughput", Value: 0}, {Name: "window_s", Value: 0.2}},
		Fidelity: contract.Fidelity{OfferedRate: &offered, AchievedRate: 12.3456, Degraded: true,
			Reasons: []string{"p99 schedule lag 12.000 ms exceeds 5.000 ms: the client, not the server, delayed requests"}}}
	got := rowSummary("chat", 0, row)
	want := []string{
		"chat rep 0  c=8 r=1 open-loop  requests 0 ok, 10 failed  fidelity DEGRADED",
		"  TTFT ms p50 - p99 - | TPOT ms p50 - p99 - | ICL ms p99 -",
		"  E2E ms p50 - p99 - | window 0.2 s",
		"  throughput 0 req/s, - output tok/s | goodput - req/s",
		"  offered rate 50 req/s, achieved rate 12.35 req/s",
		"  fidelity: p99 schedule lag 12.000 ms exceeds 5.000 ms: the client, not the server, delayed",
		"    requests",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if len(l) > summaryWidth {
			t.Errorf("%d columns: %s", len(l), l)
		}
	}
}

// A row of a case with a duration or stop rules says how it ended, under its load line.
func TestRowSummaryEnded(t *testing.T) {
	row := contract.Row{Concurrency: 2, Loop: "closed", Requests: 2, Failures: 2,
		Ended: &contract.RowEnd{Reason: contract.RowEndReasonDuration, AfterSeconds: 0.3009, Cut: 2}}
	got := rowSummary("chat", 0, row)
	if want := "  ended by duration after 0.3009 s, 2 cut at the grace deadline"; got[len(got)-1] != want {
		t.Errorf("last line %q, want %q", got[len(got)-1], want)
	}
	row.Ended = nil
	for _, l := range rowSummary("chat", 0, row) {
		if strings.Contains(l, "ended by") {
			t.Errorf("a row without ended prints %q", l)
		}
	}
}
