package verify

import (
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
)

// capacityFixture is the corpus's capacity search case result and workload case (a real run of
// run_capacity_search_slots8, its metrics trimmed).
func capacityFixture(t *testing.T) (*contract.CaseResultDoc, *contract.Case) {
	t.Helper()
	var cr contract.CaseResultDoc
	var wl contract.WorkloadDoc
	for p, v := range map[string]any{"../schemas/testdata/case-result.v1/valid/serving-capacity-search.json": &cr, "../schemas/testdata/workload.v1/valid/serving-capacity-search.json": &wl} {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatal(err)
		}
	}
	return &cr, &wl.Variants[0].Cases[0]
}

// TestCheckCapacity: the replay accepts the search as run and rejects each edit of a decision, an
// outcome, a probe or a row's good fraction (capacity_mismatch), and a front that is not the
// rows' (pareto_mismatch).
func TestCheckCapacity(t *testing.T) {
	tol := DefaultPolicy().Recompute
	for _, tc := range []struct {
		name   string
		edit   func(cr *contract.CaseResultDoc, wc *contract.Case)
		reason *Reason
	}{
		{"as run", func(*contract.CaseResultDoc, *contract.Case) {}, nil},
		{"capacity edited", func(cr *contract.CaseResultDoc, _ *contract.Case) { v := int64(9); cr.Capacity.Capacity = &v }, ErrCapacityMismatch},
		{"first failing edited", func(cr *contract.CaseResultDoc, _ *contract.Case) { v := int64(10); cr.Capacity.FirstFailing = &v }, ErrCapacityMismatch},
		{"ended edited", func(cr *contract.CaseResultDoc, _ *contract.Case) { cr.Capacity.Ended = contract.CapacityEndedMaxSteps }, ErrCapacityMismatch},
		{"decision flipped", func(cr *contract.CaseResultDoc, _ *contract.Case) { cr.Capacity.Probes[6].Passed = true }, ErrCapacityMismatch},
		{"good fraction edited", func(cr *contract.CaseResultDoc, _ *contract.Case) { cr.Capacity.Probes[6].GoodFraction = 0.96 }, ErrCapacityMismatch},
		// The records of the c=9 row say 0.96: the search would then have probed 10 next, not stopped.
		{"a row's records pass", func(cr *contract.CaseResultDoc, _ *contract.Case) { setGood(&cr.Rows[6], 0.96) }, ErrCapacityMismatch},
		{"a probe row dropped", func(cr *contract.CaseResultDoc, _ *contract.Case) {
			cr.Rows = cr.Rows[:6]
			cr.Capacity.Probes = cr.Capacity.Probes[:6]
		}, ErrCapacityMismatch},
		{"another threshold", func(cr *contract.CaseResultDoc, _ *contract.Case) { cr.Capacity.MinGoodFraction = 0.5 }, ErrCapacityMismatch},
		{"no search declared", func(_ *contract.CaseResultDoc, wc *contract.Case) { wc.CapacitySearch = nil }, ErrCapacityMismatch},
		{"passed without an outcome", func(cr *contract.CaseResultDoc, _ *contract.Case) { cr.Capacity = nil }, ErrCapacityMismatch},
		{"front point dropped", func(cr *contract.CaseResultDoc, _ *contract.Case) { cr.Pareto.Front = cr.Pareto.Front[1:] }, ErrParetoMismatch},
		{"dominated row on the front", func(cr *contract.CaseResultDoc, _ *contract.Case) {
			cr.Pareto.Front = append([]contract.ParetoPoint{{Concurrency: 2, Throughput: 18.83163910575399, Latency: 24.817054090000003}}, cr.Pareto.Front...)
		}, ErrParetoMismatch},
		{"no front declared", func(_ *contract.CaseResultDoc, wc *contract.Case) { wc.Pareto = nil }, ErrParetoMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cr, wc := capacityFixture(t)
			tc.edit(cr, wc)
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.Capacity(c, "cr.json", cr, wc, cr.Rows, tol)
			rowcheck.Pareto(c, "cr.json", cr, wc, cr.Rows, tol)
			if tc.reason == nil {
				if len(c.Out) > 0 {
					t.Fatalf("findings %v", c.Out)
				}
				return
			}
			if len(c.Out) == 0 {
				t.Fatal("no finding")
			}
			found := false
			for _, f := range c.Out {
				found = found || errors.Is(f.Err, tc.reason)
			}
			if !found {
				t.Errorf("findings %v, want one of %s", c.Out, tc.reason.Code())
			}
		})
	}
}

func setGood(r *contract.Row, v float64) {
	for i := range r.Metrics {
		if r.Metrics[i].Name == "slo_good_fraction" {
			r.Metrics[i].Value = v
		}
	}
}

// TestCheckIntervals: intervals recomputed from the per-request samples match as written and an
// edited bound, sample count or too-few flag is rejected (interval_mismatch); a case result
// without intervals (evidence before them) is noted.
func TestCheckIntervals(t *testing.T) {
	tol := DefaultPolicy().Recompute
	var a, b metric.Samples
	for i := range 40 {
		a.TTFTMs = append(a.TTFTMs, 20+float64(i%7))
		b.TTFTMs = append(b.TTFTMs, 21+float64(i%5))
	}
	fig := &rowcheck.Figures{Samples: []metric.Samples{a, b}, OK: []bool{true, true}, Metrics: make([][]contract.Metric, 2)}
	wc := &contract.Case{Repetitions: 2, Concurrency: []int64{4}}
	rows := []contract.Row{{Concurrency: 4, Repetition: 0}, {Concurrency: 4, Repetition: 1}}
	written := metric.Intervals([]metric.IntervalGroup{{Concurrency: 4, Repetitions: []metric.Samples{a, b}}})
	if len(written) != 2 || written[0].Low == nil || !written[1].TooFewSamples {
		t.Fatalf("intervals %+v", written)
	}
	for _, tc := range []struct {
		name  string
		edit  func([]contract.Interval) []contract.Interval
		finds bool
		notes bool
	}{
		{"as written", func(x []contract.Interval) []contract.Interval { return x }, false, false},
		{"low edited", func(x []contract.Interval) []contract.Interval { v := *x[0].Low - 1; x[0].Low = &v; return x }, true, false},
		{"samples edited", func(x []contract.Interval) []contract.Interval { x[0].Samples = 100; return x }, true, false},
		{"p99 claimed", func(x []contract.Interval) []contract.Interval {
			x[1].TooFewSamples = false
			lo, hi := 1.0, 2.0
			x[1].Low, x[1].High = &lo, &hi
			return x
		}, true, false},
		{"one dropped", func(x []contract.Interval) []contract.Interval { return x[:1] }, true, false},
		{"none (older evidence)", func([]contract.Interval) []contract.Interval { return nil }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := make([]contract.Interval, len(written))
			for i, iv := range written {
				got[i] = iv
				if iv.Low != nil {
					lo, hi := *iv.Low, *iv.High
					got[i].Low, got[i].High = &lo, &hi
				}
			}
			cr := &contract.CaseResultDoc{CaseID: "x", Rows: rows, Intervals: tc.edit(got)}
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.Intervals(c, "cr.json", cr, wc, fig, tol)
			if (len(c.Out) > 0) != tc.finds || (len(c.Notes) > 0) != tc.notes {
				t.Fatalf("findings %v notes %v", c.Out, c.Notes)
			}
			for _, f := range c.Out {
				if !errors.Is(f.Err, ErrIntervalMismatch) {
					t.Errorf("finding %v", f.Err)
				}
			}
		})
	}
}
