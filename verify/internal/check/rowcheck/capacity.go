package rowcheck

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// figures are what a serving case's derived figures (capacity, Pareto front, intervals) are
// recomputed from: each row's metrics as verify recomputed them from its records and its
// per-request samples (ok false for a row whose records were unreadable).
type Figures struct {
	Metrics [][]contract.Metric
	Samples []metric.Samples
	OK      []bool
}

func NewFigures(n int) *Figures {
	return &Figures{Metrics: make([][]contract.Metric, n), Samples: make([]metric.Samples, n), OK: make([]bool, n)}
}

func (f *Figures) Add(j int, ms []contract.Metric, recs []*record.Record) {
	reqs, _ := record.MeasuredRequests(recs)
	f.Metrics[j], f.Samples[j], f.OK[j] = ms, metric.SamplesOf(reqs), true
}

// CapacityFigures recomputes a serving case's capacity outcome, Pareto front and confidence
// intervals from its rows (docs/verification.md "Capacity, Pareto front and intervals").
func CapacityFigures(s *load.Snapshot, c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case, fig *Figures, tol policy.Tolerance) {
	if wc == nil {
		if cr.Capacity != nil || cr.Pareto != nil || len(cr.Intervals) > 0 {
			c.Note("case %s: no workload case: its capacity, Pareto front and intervals were not recomputed", cr.CaseID)
		}
		return
	}
	for j, ok := range fig.OK {
		if !ok {
			c.Note("case %s: row %d unreadable: its capacity, Pareto front and intervals were not recomputed", cr.CaseID, j)
			return
		}
	}
	// Recomputed rows: the recorded rows with the metrics the records give.
	rows := make([]contract.Row, len(cr.Rows))
	for j, row := range cr.Rows {
		rows[j] = row
		rows[j].Metrics = fig.Metrics[j]
	}
	Capacity(c, path, cr, wc, rows, tol)
	Pareto(c, path, cr, wc, rows, tol)
	Intervals(c, path, cr, wc, fig, tol)
}

// Capacity replays a capacity search (metric.Capacity) from the rows' recomputed
// slo_good_fraction: the rows are the probes in order, each probe the one the search would run
// next, each decision and the outcome (capacity, last passing, first failing, ended) what the
// replay gives.
func Capacity(c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case, rows []contract.Row, tol policy.Tolerance) {
	got := cr.Capacity
	if wc.CapacitySearch == nil {
		if got != nil {
			c.Add(path, "/capacity", reason.ErrCapacityMismatch, "a capacity outcome for case %s, which declares no capacity_search", cr.CaseID)
		}
		return
	}
	if got == nil {
		if cr.Status == contract.StatusPassed {
			c.Add(path, "/capacity", reason.ErrCapacityMismatch, "case %s is a capacity search and passed without a capacity outcome", cr.CaseID)
		}
		return
	}
	spec := *wc.CapacitySearch
	if got.MinGoodFraction != spec.MinGoodFraction {
		c.Add(path, "/capacity/min_good_fraction", reason.ErrCapacityMismatch, "min_good_fraction %s, the workload declares %s", record.FmtFloat(got.MinGoodFraction), record.FmtFloat(spec.MinGoodFraction))
	}
	if len(got.Probes) != len(rows) {
		c.Add(path, "/capacity/probes", reason.ErrCapacityMismatch, "%d probes for %d rows: every probe is a row", len(got.Probes), len(rows))
		return
	}
	probes := make([]metric.CapacityProbe, len(rows))
	for j, row := range rows {
		if row.Repetition != 0 || row.Concurrency != got.Probes[j].Concurrency {
			c.Add(path, finding.Pointer("rows", j), reason.ErrCapacityMismatch, "row c%d r%d is not probe %d (concurrency %d, repetition 0)", row.Concurrency, row.Repetition, j, got.Probes[j].Concurrency)
			return
		}
		probes[j] = metric.CapacityProbe{Concurrency: row.Concurrency, GoodFraction: metric.GoodFractionOf(row.Metrics)}
	}
	if len(wc.Concurrency) != 1 {
		c.Add(path, "/capacity", reason.ErrCapacityMismatch, "the workload case declares %d first probes", len(wc.Concurrency))
		return
	}
	want, err := metric.Capacity(spec, wc.Concurrency[0], probes)
	if err != nil {
		c.Add(path, "/capacity/probes", reason.ErrCapacityMismatch, "the rows are not the search's probes: %v", err)
		return
	}
	for j, p := range got.Probes {
		w := want.Probes[j]
		if !record.Within(p.GoodFraction, w.GoodFraction, tol) {
			c.Add(path, finding.Pointer("capacity", "probes", j, "good_fraction"), reason.ErrCapacityMismatch, "probe c%d good fraction %s, its records say %s", p.Concurrency, record.FmtFloat(p.GoodFraction), record.FmtFloat(w.GoodFraction))
		}
		if p.Passed != w.Passed {
			c.Add(path, finding.Pointer("capacity", "probes", j), reason.ErrCapacityMismatch, "probe c%d says passed %v, its good fraction %s against %s decides %v", p.Concurrency, p.Passed, record.FmtFloat(w.GoodFraction), record.FmtFloat(spec.MinGoodFraction), w.Passed)
		}
	}
	for _, x := range []struct {
		field     string
		got, want *int64
	}{{"capacity", got.Capacity, want.Capacity}, {"last_passing", got.LastPassing, want.LastPassing}, {"first_failing", got.FirstFailing, want.FirstFailing}} {
		if !EqualInt(x.got, x.want) {
			c.Add(path, finding.Pointer("capacity", x.field), reason.ErrCapacityMismatch, "%s %s, the replayed search gives %s", x.field, fmtIntPtr(x.got), fmtIntPtr(x.want))
		}
	}
	if got.Ended != want.Ended {
		c.Add(path, "/capacity/ended", reason.ErrCapacityMismatch, "ended %s, the replayed search ends %s", got.Ended, want.Ended)
	}
}

// Pareto recomputes the Pareto front (metric.ParetoFront) from the recomputed row metrics.
func Pareto(c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case, rows []contract.Row, tol policy.Tolerance) {
	got := cr.Pareto
	switch {
	case wc.Pareto == nil && got == nil:
		return
	case wc.Pareto == nil:
		c.Add(path, "/pareto", reason.ErrParetoMismatch, "a Pareto front for case %s, which declares none", cr.CaseID)
		return
	case got == nil:
		c.Add(path, "/pareto", reason.ErrParetoMismatch, "case %s declares a Pareto front, its result has none", cr.CaseID)
		return
	}
	want := metric.ParetoFront(*wc.Pareto, rows)
	if string(got.Throughput) != string(want.Throughput) || got.Latency != want.Latency {
		c.Add(path, "/pareto", reason.ErrParetoMismatch, "front of %s against %s, the workload declares %s against %s", got.Throughput, got.Latency, want.Throughput, want.Latency)
		return
	}
	if len(got.Front) != len(want.Front) {
		c.Add(path, "/pareto/front", reason.ErrParetoMismatch, "%d points on the front, the recomputed rows give %d (%s)", len(got.Front), len(want.Front), frontString(want.Front))
		return
	}
	for k, p := range got.Front {
		w := want.Front[k]
		if p.Concurrency != w.Concurrency || p.Repetition != w.Repetition || !record.Within(p.Throughput, w.Throughput, tol) || !record.Within(p.Latency, w.Latency, tol) {
			c.Add(path, finding.Pointer("pareto", "front", k), reason.ErrParetoMismatch, "point c%d r%d (%s, %s), recomputed c%d r%d (%s, %s)", p.Concurrency, p.Repetition, record.FmtFloat(p.Throughput), record.FmtFloat(p.Latency), w.Concurrency, w.Repetition, record.FmtFloat(w.Throughput), record.FmtFloat(w.Latency))
		}
	}
}

func frontString(ps []contract.ParetoPoint) string {
	s := ""
	for i, p := range ps {
		if i > 0 {
			s += ", "
		}
		s += "c" + record.Itoa(p.Concurrency) + " r" + record.Itoa(p.Repetition)
	}
	return s
}

// Intervals recomputes the confidence intervals across repetitions (metric.Intervals) from
// the records of each concurrency's rows. A case result without intervals is evidence written
// before they existed: noted, not a finding.
func Intervals(c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case, fig *Figures, tol policy.Tolerance) {
	var groups []metric.IntervalGroup
	if wc.Repetitions >= 2 && wc.CapacitySearch == nil {
		at := map[int64]int{}
		for j, row := range cr.Rows {
			k, ok := at[row.Concurrency]
			if !ok {
				k = len(groups)
				at[row.Concurrency] = k
				groups = append(groups, metric.IntervalGroup{Concurrency: row.Concurrency})
			}
			groups[k].Repetitions = append(groups[k].Repetitions, fig.Samples[j])
		}
	}
	want := metric.Intervals(groups)
	got := cr.Intervals
	if got == nil && len(want) > 0 {
		c.Note("case %s states no confidence intervals (evidence written before they existed)", cr.CaseID)
		return
	}
	if len(got) != len(want) {
		c.Add(path, "/intervals", reason.ErrIntervalMismatch, "%d intervals, the records give %d", len(got), len(want))
		return
	}
	for k, g := range got {
		w := want[k]
		same := g.Concurrency == w.Concurrency && g.Metric == w.Metric && g.Method == w.Method && g.Repetitions == w.Repetitions &&
			g.Samples == w.Samples && g.Confidence == w.Confidence && g.MinSamples == w.MinSamples && g.TooFewSamples == w.TooFewSamples &&
			record.Within(g.Estimate, w.Estimate, tol) && withinPtr(g.Low, w.Low, tol) && withinPtr(g.High, w.High, tol)
		if !same {
			c.Add(path, finding.Pointer("intervals", k), reason.ErrIntervalMismatch, "c%d %s: %s [%s, %s] over %d samples (too few: %v), the records give %s [%s, %s] over %d (too few: %v)",
				g.Concurrency, g.Metric, record.FmtFloat(g.Estimate), fmtFloatPtr(g.Low), fmtFloatPtr(g.High), g.Samples, g.TooFewSamples,
				record.FmtFloat(w.Estimate), fmtFloatPtr(w.Low), fmtFloatPtr(w.High), w.Samples, w.TooFewSamples)
		}
	}
}

func withinPtr(a, b *float64, tol policy.Tolerance) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && record.Within(*a, *b, tol))
}
