package qualrun

import (
	"slices"
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
	got := rowSummary("chat", 0, row, nil)
	want := []string{
		"chat rep 0  c=8 r=1 open-loop  requests 0 ok, 10 failed  fidelity DEGRADED",
		"  TTFT ms p50 - p99 - | TPOT ms p50 - p99 - | ICL ms p99 -",
		"  E2E ms p50 - p99 - | window 0.2 s from first send to last end",
		"  per window: throughput 0 req/s, - output tok/s | goodput - req/s",
		"  offered rate 50 req/s, achieved rate 12.35 req/s over first to last send",
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

// Throughput and the achieved rate of one row differ (here 22.56 and 39.39 req/s: four requests
// held the last 0.18 s of the window after the final send) and each line says over what it is
// taken: the throughput over the window from the first send to the last end, the achieved rate
// over the span from the first to the last send. The numbers are the docs' closed-loop example.
func TestRowSummaryNamesRateDenominators(t *testing.T) {
	peak, mean := int64(4), 3.991
	row := contract.Row{Concurrency: 4, Loop: "closed", Requests: 8, Successes: 8,
		Metrics: []contract.Metric{{Name: "request_throughput", Value: 22.56}, {Name: "output_throughput_window", Value: 722},
			{Name: "slo_goodput", Value: 22.56}, {Name: "window_s", Value: 0.3546}, {Name: "e2e_ms.p50", Value: 176.8}, {Name: "e2e_ms.p99", Value: 177.5}},
		Fidelity: contract.Fidelity{AchievedRate: 39.39, InFlightPeak: &peak, InFlightMean: &mean}}
	got := rowSummary("chat", 0, row, nil)
	for _, want := range []string{
		"  E2E ms p50 176.8 p99 177.5 | window 0.3546 s from first send to last end",
		"  per window: throughput 22.56 req/s, 722 output tok/s | goodput 22.56 req/s",
		"  in flight peak 4 mean 3.991, achieved rate 39.39 req/s over first to last send",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("no line %q in\n%s", want, strings.Join(got, "\n"))
		}
	}
}

// A row of a case with a duration or stop rules says how it ended, under its load line.
func TestRowSummaryEnded(t *testing.T) {
	row := contract.Row{Concurrency: 2, Loop: "closed", Requests: 2, Failures: 2,
		Ended: &contract.RowEnd{Reason: contract.RowEndReasonDuration, AfterSeconds: 0.3009, Cut: 2}}
	got := rowSummary("chat", 0, row, nil)
	if want := "  ended by duration after 0.3009 s, 2 cut at the grace deadline"; got[len(got)-1] != want {
		t.Errorf("last line %q, want %q", got[len(got)-1], want)
	}
	row.Ended = nil
	for _, l := range rowSummary("chat", 0, row, nil) {
		if strings.Contains(l, "ended by") {
			t.Errorf("a row without ended prints %q", l)
		}
	}
}

// The row: 16 seeded Poisson arrivals at 2/s that happened to span 4.09 s. The summary
// states the 95 % range of the achieved rate of 16 such arrivals, so 3.669 reads as a draw that
// lies (just) outside it, not as a bug; a degraded row's hint follows its measured cause, and
// only server saturation suggests measures_saturation.
func TestRowSummaryRateRangeAndHint(t *testing.T) {
	offered := 2.0
	rate := &contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: 2}
	row := contract.Row{Concurrency: 1, Loop: "open", Requests: 16, Successes: 16,
		Fidelity: contract.Fidelity{OfferedRate: &offered, AchievedRate: 3.669}}
	text := strings.Join(strings.Fields(strings.Join(rowSummary("chat", 0, row, rate), " ")), " ")
	if !strings.Contains(text, "achieved rate 3.669 req/s over first to last send (outside the 95 % range 1.277 to 3.573 req/s of 16 seeded poisson arrivals)") {
		t.Errorf("no rate range in\n%s", text)
	}
	row.Fidelity.AchievedRate = 2.5
	if text := strings.Join(rowSummary("chat", 0, row, rate), " "); !strings.Contains(text, "(within the 95 % range") {
		t.Errorf("2.5 req/s not within the range:\n%s", text)
	}
	for cause, want := range map[contract.FidelityJudgementCause]string{
		contract.FidelityJudgementCauseServerSaturation: "measures_saturation: true",
		contract.FidelityJudgementCauseStarvedClient:    "idle host",
		contract.FidelityJudgementCauseConnectionWait:   "connections",
	} {
		row.Fidelity.Degraded, row.Fidelity.Judgement = true, &contract.FidelityJudgement{Cause: cause}
		text := strings.Join(rowSummary("chat", 0, row, rate), " ")
		if !strings.Contains(text, "hint ("+strings.ReplaceAll(string(cause), "_", " ")+")") || !strings.Contains(text, want) {
			t.Errorf("%s: no fitting hint in\n%s", cause, text)
		}
		if cause != contract.FidelityJudgementCauseServerSaturation && strings.Contains(text, "measures_saturation") {
			t.Errorf("%s: suggests measures_saturation:\n%s", cause, text)
		}
	}
}
