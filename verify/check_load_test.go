package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// req is a measured request sent at send and closed at cls (milliseconds).
func req(sched, send, cls int64) *record.Record {
	ms := int64(1e6)
	return &record.Record{Sched: sched * ms, Send: send * ms, End: cls * ms, Close: cls * ms, HasSend: true, HasEnd: true, HasClose: true}
}

func ptr[T any](v T) *T { return &v }

// TestCheckLoad: the achieved concurrency is recomputed from the records; a closed-loop row that
// never had its concurrency in flight did not measure it; an open-loop row ran its declared rate;
// evidence without the fields is not checked, and the note says so.
func TestCheckLoad(t *testing.T) {
	sequential := []*record.Record{req(0, 0, 10), req(10, 10, 20), req(20, 20, 30)} // one at a time
	overlapping := []*record.Record{req(0, 0, 20), req(0, 0, 10), req(10, 10, 20)}  // two at a time
	row := func(loop string, c, n int64, peak *int64, mean *float64) contract.Row {
		return contract.Row{Loop: contract.RowLoop(loop), Concurrency: c, Requests: n, Fidelity: contract.Fidelity{InFlightPeak: peak, InFlightMean: mean}}
	}
	serving := &contract.Case{Kind: "serving", Rate: &contract.Rate{Mode: "poisson", RequestsPerSecond: 20}}
	tol := Tolerance{Absolute: 1e-9, Relative: 1e-9}
	cases := []struct {
		name string
		row  contract.Row
		wc   *contract.Case
		recs []*record.Record
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
			c := &finding.Collector{Check: CheckTolerances}
			checked := rowcheck.Load(c, "cr.json", 0, tc.row, tc.wc, tc.recs, tol)
			res := c.Result()
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
	within := []*record.Record{req(0, 0, 3000), req(3000, 3000, 5900)}
	beyond := []*record.Record{req(0, 0, 3000), req(3000, 3000, 7000)}
	cases := []struct {
		name string
		cr   contract.CaseResultDoc
		recs []*record.Record
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
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.CaseTimeout(c, "cr.json", &tc.cr, wc, tc.recs)
			switch {
			case tc.want == nil && len(c.Out) > 0:
				t.Fatalf("findings %v", c.Out)
			case tc.want != nil && (len(c.Out) == 0 || !errors.Is(c.Out[0], tc.want)):
				t.Fatalf("findings %v, want %s", c.Out, tc.want.Code())
			}
		})
	}
}

// TestCheckSchedule: an open-loop row's t_sched times are recomputed from the workload seed
// (metric.Arrivals) for constant, Poisson and gamma rows: the runner's schedule passes, from any
// epoch; a record moved by 5 µs, a row run under another seed, and a gamma row recorded as
// Poisson are each a load_not_reached finding naming the request; a closed-loop row is not asked.
func TestCheckSchedule(t *testing.T) {
	const seed, warm = 20261202, 2
	k := 0.5
	rates := map[string]*contract.Rate{
		"constant": {Mode: contract.RateModeConstant, RequestsPerSecond: 500},
		"poisson":  {Mode: contract.RateModePoisson, RequestsPerSecond: 500},
		"gamma":    {Mode: contract.RateModeGamma, RequestsPerSecond: 500, Burstiness: &k},
	}
	row := contract.Row{Loop: contract.RowLoopOpen, Concurrency: 4, Repetition: 1, Records: contract.FileRef{Path: "r.jsonl"}}
	// records builds warmups then measured records scheduled by offs from epoch, one per line.
	records := func(offs []int64, epoch int64) []*record.Record {
		var out []*record.Record
		for i := range warm {
			out = append(out, &record.Record{Index: int64(i), Warmup: true, Line: i})
		}
		for i, o := range offs {
			out = append(out, &record.Record{Index: int64(warm + i), Sched: epoch + o, Line: warm + i})
		}
		return out
	}
	run := func(wc *contract.Case, recs []*record.Record, r contract.Row) []error {
		c := &finding.Collector{Check: CheckTolerances}
		rowcheck.Schedule(c, "cr.json", r, wc, seed, recs)
		var out []error
		for _, f := range c.Result().Findings {
			out = append(out, f)
		}
		return out
	}
	for name, rate := range rates {
		wc := &contract.Case{Kind: contract.CaseKindServing, WarmupRequests: warm, Rate: rate}
		offs := metric.Arrivals(rate, 64, seed, row.Concurrency, row.Repetition)
		if f := run(wc, records(offs, 123_456_789), row); len(f) != 0 {
			t.Errorf("%s: the runner's own schedule: %v", name, f)
		}
		moved := records(offs, 5e9)
		moved[warm+30].Sched += 5000
		if f := run(wc, moved, row); len(f) != 1 || !errors.Is(f[0], ErrLoadNotReached) || !strings.Contains(f[0].Error(), "request 32") {
			t.Errorf("%s: a record moved by 5 µs: %v", name, f)
		}
		if name != "constant" {
			other := metric.Arrivals(rate, 64, seed+1, row.Concurrency, row.Repetition)
			if f := run(wc, records(other, 0), row); len(f) != 1 || !errors.Is(f[0], ErrLoadNotReached) {
				t.Errorf("%s: a schedule of another seed: %v", name, f)
			}
		}
		closed := row
		closed.Loop = contract.RowLoopClosed
		if f := run(wc, records(offs[:5], 0), closed); len(f) != 0 {
			t.Errorf("%s: closed loop checked: %v", name, f)
		}
	}
	wc := &contract.Case{Kind: contract.CaseKindServing, WarmupRequests: warm, Rate: rates["poisson"]}
	if f := run(wc, records(metric.Arrivals(rates["gamma"], 64, seed, 4, 1), 0), row); len(f) != 1 {
		t.Errorf("a gamma schedule under a Poisson case: %v", f)
	}
}
