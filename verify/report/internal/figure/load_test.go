package figure

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// An open-loop case's throughput charts are drawn against the offered rate, with the achieved
// send rate beside the completed requests; a closed-loop case's against concurrency.
func TestThroughputAgainstOfferedRate(t *testing.T) {
	rps := func(v float64) *float64 { return &v }
	row := func(loop contract.RowLoop, c int64, offered *float64, done float64) contract.ViewRow {
		r := contract.ViewRow{Concurrency: c, Loop: loop}
		r.Fidelity.OfferedRate, r.Fidelity.AchievedRate = offered, done
		r.Throughput.RequestsPerSecond = rps(done)
		return r
	}
	open := contract.ViewCase{Rows: []contract.ViewRow{row(contract.RowLoopOpen, 64, rps(100), 99.5), row(contract.RowLoopOpen, 64, rps(400), 390)}}
	svg := Rate(open)
	for _, want := range []string{"vs offered rate (requests/s)", "achieved send rate", ">400<", "requests/s at offered rate (requests/s) 400: 390 requests/s"} {
		if !strings.Contains(svg, want) {
			t.Errorf("open-loop chart lacks %q:\n%s", want, svg)
		}
	}
	closed := contract.ViewCase{Rows: []contract.ViewRow{row(contract.RowLoopClosed, 1, nil, 10), row(contract.RowLoopClosed, 8, nil, 70)}}
	svg = Throughput(closed) + Rate(closed)
	if !strings.Contains(svg, "vs concurrency") || strings.Contains(svg, "offered rate") || strings.Contains(svg, "achieved send rate") {
		t.Errorf("closed-loop charts:\n%s", svg)
	}
}
