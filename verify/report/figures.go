package report

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/figure"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// The derived figures of a serving case (docs/metrics.md): its capacity search, Pareto front and
// confidence intervals across repetitions, as its case result states them (the tolerances check
// recomputed each from the records), and the intervals of a row metric across the receipts of a
// report. They are drawn on the page, listed in the text report, and carried by the view's JSON
// document (its cases' capacity, pareto, pareto_points and intervals, and across) and the CSV.

// caseFigures are one case's figures, for the page and the text report.
type caseFigures struct {
	capacity  *contract.Capacity
	pareto    *contract.Pareto
	intervals []contract.Interval
	// points are every row's (throughput, latency) of the Pareto front's metrics.
	points []contract.ParetoPoint
}

// AcrossMetrics are the row metrics a report of several receipts states an interval of.
var AcrossMetrics = []string{"ttft_ms.p50", "ttft_ms.p99", "e2e_ms.p99", "request_throughput"}

// Across is the interval of one row metric over the receipts of a report that have that row:
// metric.MedianInterval of the per-receipt values (benchstat's distribution-free interval of the
// median). OK is false with fewer values than the confidence needs (6 at 0.95).
type Across struct {
	Case, Row, Metric string
	Values            []float64
	Interval          metric.Interval
	OK                bool
}

// figuresOf reads a case's figures from its case result.
func figuresOf(ce verify.CaseEvidence) *caseFigures {
	cr := ce.CaseResult
	if cr == nil || (cr.Capacity == nil && cr.Pareto == nil && len(cr.Intervals) == 0) {
		return nil
	}
	f := &caseFigures{capacity: cr.Capacity, pareto: cr.Pareto, intervals: cr.Intervals}
	if cr.Pareto != nil {
		for _, r := range cr.Rows {
			t, okT := valueOf(r.Metrics, string(cr.Pareto.Throughput))
			l, okL := valueOf(r.Metrics, cr.Pareto.Latency)
			if okT && okL {
				f.points = append(f.points, contract.ParetoPoint{Concurrency: r.Concurrency, Repetition: r.Repetition, Throughput: t, Latency: l})
			}
		}
	}
	return f
}

// into puts the figures into the view's case, for the JSON view and the CSV.
func (f *caseFigures) into(c *Case) {
	c.Capacity, c.Pareto, c.Intervals = f.capacity, f.pareto, f.intervals
	if f.pareto != nil {
		c.ParetoPoints = nonNil(f.points)
	}
}

// view is the interval as the report view's across item.
func (a Across) view() contract.ViewAcross {
	out := contract.ViewAcross{Case: a.Case, Row: a.Row, Metric: a.Metric, Values: a.Values, Median: a.Interval.Estimate,
		Confidence: metric.IntervalConfidence, TooFewReceipts: !a.OK}
	if a.OK {
		lo, hi := a.Interval.Low, a.Interval.High
		out.Low, out.High = &lo, &hi
	}
	return out
}

func valueOf(ms []contract.Metric, name string) (float64, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}

// acrossOf are the intervals across receipts of every (case, row) two or more receipts have, in
// the first receipt's order, from the rows' metrics as verify recomputed them.
func acrossOf(v *View, states []receiptState) []Across {
	if len(states) < 2 {
		return nil
	}
	var out []Across
	seen := map[rowKey]bool{}
	for _, r := range v.Receipts {
		for _, c := range r.Cases {
			for _, row := range c.Rows {
				k := rowKey{c.ID, c.Repetition, row.Name}
				if seen[k] {
					continue
				}
				seen[k] = true
				for _, name := range AcrossMetrics {
					var xs []float64
					for _, st := range states {
						if x, ok := valueOf(st.metricsByRow[k], name); ok {
							xs = append(xs, x)
						}
					}
					if len(xs) < 2 {
						continue
					}
					iv, ok := metric.MedianInterval(xs, metric.IntervalConfidence)
					out = append(out, Across{Case: c.ID, Row: row.Name, Metric: name, Values: xs, Interval: iv, OK: ok})
				}
			}
		}
	}
	return out
}

// Figures draws case kase of receipt i's figures (nothing when it has none).
func (p pageData) Figures(i, kase int) template.HTML {
	f := p.figures[[2]int{i, kase}]
	if f == nil {
		return ""
	}
	var parts []string
	if f.capacity != nil {
		parts = append(parts, figure.Capacity(f.capacity))
	}
	if f.pareto != nil {
		parts = append(parts, figure.Pareto(f.pareto, f.points))
	}
	if len(f.intervals) > 0 {
		parts = append(parts, figure.Intervals("Intervals across repetitions", f.intervals))
	}
	return template.HTML(`<div class="pair">` + strings.Join(parts, "") + `</div>`)
}

// AcrossSVG draws the intervals across receipts as whiskers (nothing for a single receipt).
func (p pageData) AcrossSVG() template.HTML {
	if len(p.across) == 0 {
		return ""
	}
	var ivs []contract.Interval
	for _, a := range p.across {
		iv := contract.Interval{Metric: a.Case + " " + a.Row + " " + a.Metric, Samples: int64(len(a.Values)), Estimate: a.Interval.Estimate, TooFewSamples: !a.OK}
		if a.OK {
			lo, hi := a.Interval.Low, a.Interval.High
			iv.Low, iv.High = &lo, &hi
		}
		ivs = append(ivs, iv)
	}
	return template.HTML(figure.Intervals("Median across receipts (distribution-free 95% interval)", ivs))
}

// figuresText lists a case's figures in the text report.
func (p *textPrinter) figures(f *caseFigures) {
	if f == nil {
		return
	}
	if c := f.capacity; c != nil {
		var probes []string
		for _, pr := range c.Probes {
			v := "fail"
			if pr.Passed {
				v = "pass"
			}
			probes = append(probes, fmt.Sprintf("c%d %s %s", pr.Concurrency, format.Num(pr.GoodFraction), v))
		}
		p.Wrap("capacity", fmt.Sprintf("%s (last passing %s, first failing %s, ended %s) at good fraction >= %s; probes: %s",
			ptrString(c.Capacity), ptrString(c.LastPassing), ptrString(c.FirstFailing), c.Ended, format.Num(c.MinGoodFraction), strings.Join(probes, ", ")))
	}
	if pr := f.pareto; pr != nil {
		var pts []string
		for _, q := range pr.Front {
			pts = append(pts, fmt.Sprintf("c%d-r%d (%s, %s)", q.Concurrency, q.Repetition, format.Num(q.Throughput), format.Num(q.Latency)))
		}
		p.Wrap("pareto", fmt.Sprintf("%s vs %s: %s", pr.Throughput, pr.Latency, strings.Join(pts, ", ")))
	}
	for _, iv := range f.intervals {
		p.Wrap("interval", intervalText(iv))
	}
}

func intervalText(iv contract.Interval) string {
	head := fmt.Sprintf("c%d %s over %d repetitions: %s", iv.Concurrency, iv.Metric, iv.Repetitions, format.Num(iv.Estimate))
	if iv.TooFewSamples || iv.Low == nil || iv.High == nil {
		return fmt.Sprintf("%s, too few samples for an interval (%d < %d)", head, iv.Samples, iv.MinSamples)
	}
	return fmt.Sprintf("%s [%s, %s] at %s, n %d (%s)", head, format.Num(*iv.Low), format.Num(*iv.High), format.Num(iv.Confidence), iv.Samples, iv.Method)
}

// acrossText lists the intervals across receipts.
func (p *textPrinter) acrossText(as []Across) {
	if len(as) == 0 {
		return
	}
	p.Line("")
	p.Line("across receipts: the median of each receipt's row metric with its distribution-free 95%")
	p.Line("  interval (order statistics, benchstat's method)")
	for _, a := range as {
		vals := make([]string, len(a.Values))
		for i, x := range a.Values {
			vals[i] = format.Num(x)
		}
		if !a.OK {
			p.Wrap(a.Case+" "+a.Row, fmt.Sprintf("%s median %s over %d receipts: too few for an interval at 0.95 (need 6)", a.Metric, format.Num(a.Interval.Estimate), len(a.Values)))
			continue
		}
		p.Wrap(a.Case+" "+a.Row, fmt.Sprintf("%s median %s [%s, %s] over %d receipts", a.Metric, format.Num(a.Interval.Estimate), format.Num(a.Interval.Low), format.Num(a.Interval.High), len(a.Values)))
	}
}

func ptrString(p *int64) string {
	if p == nil {
		return "none" // not a contract value: the text of an absent value
	}
	return strconv.FormatInt(*p, 10)
}
