package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// req is a measured request sent at send and closed at cls (milliseconds).
func req(sched, send, cls int64) *record {
	ms := int64(1e6)
	return &record{sched: sched * ms, send: send * ms, end: cls * ms, cls: cls * ms, hasSend: true, hasEnd: true, hasClose: true}
}

func ptr[T any](v T) *T { return &v }

// TestCheckLoad: the achieved concurrency is recomputed from the records; a closed-loop row that
// never had its concurrency in flight did not measure it; an open-loop row ran its declared rate;
// evidence without the fields is not checked, and the note says so.
func TestCheckLoad(t *testing.T) {
	sequential := []*record{req(0, 0, 10), req(10, 10, 20), req(20, 20, 30)} // one at a time
	overlapping := []*record{req(0, 0, 20), req(0, 0, 10), req(10, 10, 20)}  // two at a time
	row := func(loop string, c, n int64, peak *int64, mean *float64) contract.Row {
		return contract.Row{Loop: contract.RowLoop(loop), Concurrency: c, Requests: n, Fidelity: contract.Fidelity{InFlightPeak: peak, InFlightMean: mean}}
	}
	serving := &contract.Case{Kind: "serving", Rate: &contract.Rate{Mode: "poisson", RequestsPerSecond: 20}}
	tol := Tolerance{1e-9, 1e-9}
	cases := []struct {
		name string
		row  contract.Row
		wc   *contract.Case
		recs []*record
		want *Reason
		also string
	}{
		{"reached", row("closed", 2, 3, ptr[int64](2), ptr(2.0)), nil, overlapping, nil, ""},
		{"never reached its concurrency", row("closed", 2, 3, ptr[int64](1), ptr(1.0)), nil, sequential, ErrLoadNotReached, "never had 2 requests in flight (at most 1)"},
		{"peak edited", row("closed", 2, 3, ptr[int64](2), ptr(1.0)), nil, sequential, ErrRowMismatch, "in_flight_peak 2, the records say 1"},
		{"mean edited", row("closed", 2, 3, ptr[int64](2), ptr(1.5)), nil, overlapping, ErrRowMismatch, "in_flight_mean 1.5, the records say 2"},
		{"fewer requests than the concurrency", row("closed", 4, 3, ptr[int64](2), ptr(2.0)), nil, overlapping, nil, ""},
		{"open loop at another rate", contract.Row{Loop: "open", Concurrency: 2, Requests: 3, Fidelity: contract.Fidelity{InFlightPeak: ptr[int64](2), InFlightMean: ptr(2.0), OfferedRate: ptr(10.0)}}, serving, overlapping, ErrLoadNotReached, "offered rate 10, the workload's case declares 20"},
		{"open loop at its rate", contract.Row{Loop: "open", Concurrency: 2, Requests: 3, Fidelity: contract.Fidelity{InFlightPeak: ptr[int64](2), InFlightMean: ptr(2.0), OfferedRate: ptr(20.0)}}, serving, overlapping, nil, ""},
		{"evidence before the fields", row("closed", 2, 3, nil, nil), nil, sequential, nil, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{check: CheckTolerances}
			checked := checkLoad(c, "cr.json", 0, tc.row, tc.wc, tc.recs, tol)
			res := c.result()
			if tc.want == nil {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				if checked != (tc.row.Fidelity.InFlightPeak != nil) {
					t.Errorf("checked %v for in_flight_peak %v", checked, tc.row.Fidelity.InFlightPeak)
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
}

// TestCheckCaseTimeout: a serving case's records fit its timeout_seconds (with a grace for the
// requests cancelled at the timeout); a stopped case is never passed.
func TestCheckCaseTimeout(t *testing.T) {
	wc := &contract.Case{Kind: "serving", TimeoutSeconds: 5}
	within := []*record{req(0, 0, 3000), req(3000, 3000, 5900)}
	beyond := []*record{req(0, 0, 3000), req(3000, 3000, 7000)}
	cases := []struct {
		name string
		cr   contract.CaseResultDoc
		recs []*record
		want *Reason
	}{
		{"within", contract.CaseResultDoc{Status: "passed"}, within, nil},
		{"beyond", contract.CaseResultDoc{Status: "passed"}, beyond, ErrTimeoutExceeded},
		{"stopped and passed", contract.CaseResultDoc{Status: "passed", Stopped: &contract.Stopped{Reason: "timeout", AfterSeconds: 5.01}}, within, ErrVerdictMismatch},
		{"stopped by its timeout early", contract.CaseResultDoc{Status: "failed", Stopped: &contract.Stopped{Reason: "timeout", AfterSeconds: 2}}, within, ErrTimeoutExceeded},
		{"stopped, failed", contract.CaseResultDoc{Status: "failed", Stopped: &contract.Stopped{Reason: "timeout", AfterSeconds: 5.01}}, within, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{check: CheckTolerances}
			checkCaseTimeout(c, "cr.json", &tc.cr, wc, tc.recs)
			switch {
			case tc.want == nil && len(c.out) > 0:
				t.Fatalf("findings %v", c.out)
			case tc.want != nil && (len(c.out) == 0 || !errors.Is(c.out[0], tc.want)):
				t.Fatalf("findings %v, want %s", c.out, tc.want.Code())
			}
		})
	}
}
