package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestCheckRowEnd: a row's ended is checked against its records and workload case: the cut
// count, a cut outside a duration row, a duration row below its minimum, a claimed stop its
// records do not fire, a stop in a passed result without stop.measurement; the honest rows pass.
func TestCheckRowEnd(t *testing.T) {
	ok := func(cls int64) *record.Record { return &record.Record{Close: cls, HasClose: true} }
	bad := func(cls int64, class string) *record.Record {
		return &record.Record{Close: cls, HasClose: true, Failed: true, ErrClass: class}
	}
	// late is a success closed at cls ms and sent lag ms after its schedule.
	late := func(cls, lag int64) *record.Record {
		return &record.Record{Sched: cls * 1e6, Send: (cls + lag) * 1e6, HasSend: true, Close: (cls + lag + 1) * 1e6, HasClose: true}
	}
	two, yes := int64(2), true
	satCase := &contract.Case{Kind: contract.CaseKindServing, Stop: &contract.StopRules{Saturation: &contract.SaturationRule{LagMs: 20, Consecutive: 3}}}
	durCase := &contract.Case{Kind: contract.CaseKindServing, Duration: &contract.RowDuration{Seconds: 1, MinRequests: 3, GraceSeconds: 0.5}}
	stopCase := &contract.Case{Kind: contract.CaseKindServing, Stop: &contract.StopRules{ConsecutiveFailures: &two}}
	probe := &contract.Case{Kind: contract.CaseKindServing, Stop: &contract.StopRules{ConsecutiveFailures: &two, Measurement: &yes}}
	ended := func(reason contract.RowEndReason, cut int64) contract.Row {
		return contract.Row{Concurrency: 2, Ended: &contract.RowEnd{Reason: reason, AfterSeconds: 1, Cut: cut}}
	}
	streak := []*record.Record{ok(1), bad(2, "http_status"), ok(3), bad(4, "http_status"), bad(5, "http_status")}
	cases := []struct {
		name   string
		row    contract.Row
		wc     *contract.Case
		recs   []*record.Record
		passed bool
		want   *Reason
		also   string
	}{
		{"duration with its cut", ended(contract.RowEndReasonDuration, 1), durCase, []*record.Record{ok(1), ok(2), bad(3, rowcheck.ErrClassCut)}, true, nil, ""},
		{"cut count edited", ended(contract.RowEndReasonDuration, 0), durCase, []*record.Record{ok(1), ok(2), bad(3, rowcheck.ErrClassCut)}, true, ErrRowMismatch, "cut 0, the records hold 1"},
		{"duration below its minimum", ended(contract.RowEndReasonDuration, 0), durCase, []*record.Record{ok(1), ok(2)}, false, ErrLoadNotReached, "below its min_requests 3"},
		{"cut without ended", contract.Row{Concurrency: 2}, durCase, []*record.Record{bad(3, rowcheck.ErrClassCut)}, false, ErrRowMismatch, "no ended"},
		{"stop its records fire", ended(contract.RowEndReasonConsecutiveFailures, 0), stopCase, streak, false, nil, ""},
		{"stop its records do not fire", ended(contract.RowEndReasonConsecutiveFailures, 0), stopCase, streak[:4], false, ErrRowMismatch, `fire ""`},
		{"stop in a passed result", ended(contract.RowEndReasonConsecutiveFailures, 0), stopCase, streak, true, ErrVerdictMismatch, "stop.measurement"},
		{"stop as the measurement", ended(contract.RowEndReasonConsecutiveFailures, 0), probe, streak, true, nil, ""},
		{"duration ended before its duration", contract.Row{Concurrency: 2, Ended: &contract.RowEnd{Reason: contract.RowEndReasonDuration, AfterSeconds: 0.5}}, durCase, []*record.Record{ok(1), ok(2), ok(3)}, false, ErrRowMismatch, "before its duration 1 s"},
		{"sent after it stopped", contract.Row{Concurrency: 2, Ended: &contract.RowEnd{Reason: contract.RowEndReasonDuration, AfterSeconds: 1}}, durCase, []*record.Record{ok(1), ok(2), {Sched: 2e9, Close: 3e9, HasClose: true}}, false, ErrRowMismatch, "schedule one 2 s after it"},
		{"saturation its records fire", ended(contract.RowEndReasonSaturation, 0), satCase, []*record.Record{late(1, 30), late(2, 30), late(3, 30)}, false, nil, ""},
		{"saturation its records do not fire", ended(contract.RowEndReasonSaturation, 0), satCase, []*record.Record{late(1, 30), late(2, 1), late(3, 30)}, false, ErrRowMismatch, `fire ""`},
		{"stop without rules", ended(contract.RowEndReasonErrorFraction, 0), durCase, streak, false, ErrRowMismatch, "declares no stop rules"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.RowEnd(c, "cr.json", 0, tc.row, tc.wc, tc.recs, tc.passed)
			res := c.Result()
			if tc.want == nil {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if errors.Is(f, tc.want) && strings.Contains(f.Error(), tc.also) {
					return
				}
			}
			t.Fatalf("no %s mentioning %q: %v", tc.want.Code(), tc.also, res.Findings)
		})
	}
	if !rowcheck.ExcusedFailure(ended(contract.RowEndReasonConsecutiveFailures, 0), probe, bad(1, "http_status")) || rowcheck.ExcusedFailure(ended(contract.RowEndReasonConsecutiveFailures, 0), stopCase, bad(1, "http_status")) {
		t.Error("a stopped row's failures are excused exactly when the case declares the stop as its measurement")
	}
}
