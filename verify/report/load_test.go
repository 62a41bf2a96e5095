package report

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestLoadDrawsSeries: a row with a per-second series, stages, a trace replay and an ended
// stop gets the two per-second charts (one path per line, the undefined latency bin a break in
// the line), the stage table and the ended and replay lines; the case's stop shows on its first
// row; a row without a load shape draws nothing.
func TestLoadDrawsSeries(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	row := contract.Row{
		Ended:  &contract.RowEnd{Reason: contract.RowEndReasonSaturation, AfterSeconds: 1.5},
		Stages: []contract.RowStage{{Kind: contract.RowStageKindRamp, Seconds: 1, OfferedRate: f(50), AchievedRate: 49, Scheduled: 50, Requests: 50, Failures: 2}},
		Replay: &contract.RowReplay{TraceDigest: "sha256:" + strings.Repeat("a", 64), TimeScale: 0.5, LengthUnit: contract.RowReplayLengthUnitWordsPerToken, WordsPerToken: 0.75, Entries: 40, SendErrorP99Ms: 0.4},
		Series: &contract.RowSeries{Formula: contract.RowSeriesFormula, Bins: []contract.SeriesBin{
			{Second: 0, Scheduled: 20, Sent: 20, Completed: 19, InFlightMean: 1.2, E2EP50Ms: f(10), E2EP99Ms: f(20)},
			{Second: 1, Scheduled: 40, Sent: 39, Completed: 0, InFlightMean: 2.5},
			{Second: 2, Scheduled: 60, Sent: 60, Completed: 60, InFlightMean: 3, E2EP50Ms: f(12), E2EP99Ms: f(30)},
		}},
	}
	v := &View{load: map[distKey]contract.Row{{0, 0, 0, ""}: row}, stopped: map[distKey]*contract.Stopped{{0, 0, -1, ""}: {Reason: contract.StoppedReasonTimeout, AfterSeconds: 9}}}
	p := pageData{View: v}
	got := string(p.Load(0, 0, 0))
	for _, want := range []string{`data-chart="series-rate"`, `data-chart="series-latency"`, "Row ended", "saturation", "Trace replay: 40 entries", "words_per_token", "<td>ramp</td>", "The case stopped before its end: timeout after 9 s"} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q", want)
		}
	}
	if strings.Contains(got, "style=") || strings.Contains(got, "<script") {
		t.Error("the charts carry a style attribute or a script")
	}
	// The latency chart: the p50 line breaks at the empty second (two M commands).
	lat := got[strings.Index(got, `data-chart="series-latency"`):]
	_, after, _ := strings.Cut(lat, `<path d="`)
	d, _, _ := strings.Cut(after, `"`)
	if strings.Count(d, "M") != 2 || strings.Count(d, "L") != 0 {
		t.Errorf("the E2E p50 line %q does not break at the empty second", d)
	}
	if s := string(p.Load(0, 0, 1)); s != "" {
		t.Errorf("a row without a load shape draws %q", s)
	}
}
