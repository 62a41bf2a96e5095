package report

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify"
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
		parts = append(parts, capacitySVG(f.capacity))
	}
	if f.pareto != nil {
		parts = append(parts, paretoSVG(f.pareto, f.points))
	}
	if len(f.intervals) > 0 {
		parts = append(parts, intervalsSVG("Intervals across repetitions", f.intervals))
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
	return template.HTML(intervalsSVG("Median across receipts (distribution-free 95% interval)", ivs))
}

// capacitySVG draws a capacity search: each probe's good fraction against its concurrency (in
// order of concurrency), passing probes filled, failing hollow, the SLO line at min_good_fraction
// dashed, the capacity marked.
func capacitySVG(c *contract.Capacity) string {
	const w, h = 440.0, 250.0
	const left, right, top, bottom = 58.0, 16.0, 40.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	s := &svgWriter{}
	title := "Capacity search: SLO good fraction"
	s.open("capacity", title+" vs concurrency", w, h)
	s.text(left, 14, "start", colInk, "600", title)
	probes := slices.Clone(c.Probes)
	slices.SortFunc(probes, func(a, b contract.CapacityProbe) int { return int(a.Concurrency - b.Concurrency) })
	xmax := 1.0
	for _, p := range probes {
		xmax = math.Max(xmax, float64(p.Concurrency))
	}
	xt := niceTicks(0, xmax, 5)
	xhi := xt[len(xt)-1]
	x := func(v float64) float64 { return left + v/xhi*pw }
	y := func(v float64) float64 { return top + (1-v)*ph }
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		s.line(left, y(t), left+pw, y(t), colGrid, 1, "")
		s.text(left-5, y(t)+4, "end", colAxis, "", tickLabel(t, 0.25))
	}
	for _, t := range xt {
		s.line(x(t), top+ph, x(t), top+ph+4, colAxis, 1, "")
		s.text(x(t), top+ph+15, "middle", colAxis, "", tickLabel(t, xt[1]-xt[0]))
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.text(left+pw/2, h-4, "middle", colAxis, "", "concurrency")
	s.line(left, y(c.MinGoodFraction), left+pw, y(c.MinGoodFraction), colP99, 1.4, "5 4")
	s.text(left+pw, y(c.MinGoodFraction)-4, "end", colP99, "", "SLO: good fraction ≥ "+num(c.MinGoodFraction))
	var d strings.Builder
	for i, p := range probes {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(float64(p.Concurrency))), fx(y(p.GoodFraction)))
	}
	s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.6"/>`, d.String(), colCurve)
	for _, p := range probes {
		fill, verdict := colGreen, "pass"
		if !p.Passed {
			fill, verdict = "#fff", "fail"
		}
		s.f(`<circle cx="%s" cy="%s" r="3.6" fill="%s" stroke="%s" stroke-width="1.4"><title>%s</title></circle>`, fx(x(float64(p.Concurrency))), fx(y(p.GoodFraction)), fill, colGreen,
			esc(fmt.Sprintf("concurrency %d: good fraction %s, %s", p.Concurrency, num(p.GoodFraction), verdict)))
	}
	label := "no passing probe"
	if c.Capacity != nil {
		cx := x(float64(*c.Capacity))
		s.line(cx, top, cx, top+ph, colP50, 1.2, "2 3")
		label = "capacity " + strconv.FormatInt(*c.Capacity, 10)
		if c.FirstFailing != nil {
			label += " (first failing " + strconv.FormatInt(*c.FirstFailing, 10) + ")"
		}
	}
	s.text(left, 30, "start", colP50, "", label+", ended: "+string(c.Ended))
	return s.close()
}

// paretoSVG draws every row's (throughput, latency) and the front through its points.
func paretoSVG(p *contract.Pareto, all []contract.ParetoPoint) string {
	const w, h = 440.0, 250.0
	const left, right, top, bottom = 58.0, 16.0, 40.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	s := &svgWriter{}
	title := "Pareto front: " + string(p.Throughput) + " vs " + p.Latency
	s.open("pareto", title, w, h)
	s.text(left, 14, "start", colInk, "600", title)
	if len(all) == 0 {
		s.text(w/2, h/2, "middle", colAxis, "", "no rows with both metrics")
		return s.close()
	}
	xmax, ymax := 0.0, 0.0
	for _, q := range all {
		xmax, ymax = math.Max(xmax, q.Throughput), math.Max(ymax, q.Latency)
	}
	xt, yt := niceTicks(0, math.Max(xmax, 1e-9), 4), niceTicks(0, math.Max(ymax, 1e-9), 4)
	xhi, yhi := xt[len(xt)-1], yt[len(yt)-1]
	x := func(v float64) float64 { return left + v/xhi*pw }
	y := func(v float64) float64 { return top + (1-v/yhi)*ph }
	for _, t := range yt {
		s.line(left, y(t), left+pw, y(t), colGrid, 1, "")
		s.text(left-5, y(t)+4, "end", colAxis, "", tickLabel(t, yt[1]-yt[0]))
	}
	for _, t := range xt {
		s.line(x(t), top+ph, x(t), top+ph+4, colAxis, 1, "")
		s.text(x(t), top+ph+15, "middle", colAxis, "", tickLabel(t, xt[1]-xt[0]))
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.text(left+pw/2, h-4, "middle", colAxis, "", string(p.Throughput)+" (higher is better)")
	s.f(`<text x="12" y="%s" text-anchor="middle" fill="%s" transform="rotate(-90 12 %s)">%s</text>`, fx(top+ph/2), colAxis, fx(top+ph/2), esc(p.Latency+" (lower is better)"))
	for _, q := range all {
		s.f(`<circle cx="%s" cy="%s" r="3" fill="#fff" stroke="%s" stroke-width="1.2"><title>%s</title></circle>`, fx(x(q.Throughput)), fx(y(q.Latency)), colAxis,
			esc(fmt.Sprintf("row c%d-r%d: %s, %s", q.Concurrency, q.Repetition, num(q.Throughput), num(q.Latency))))
	}
	var d strings.Builder
	for i, q := range p.Front {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(q.Throughput)), fx(y(q.Latency)))
	}
	s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.8"/>`, d.String(), colP99)
	for _, q := range p.Front {
		s.f(`<circle cx="%s" cy="%s" r="3.6" fill="%s"><title>%s</title></circle>`, fx(x(q.Throughput)), fx(y(q.Latency)), colP99,
			esc(fmt.Sprintf("front: row c%d-r%d, %s, %s", q.Concurrency, q.Repetition, num(q.Throughput), num(q.Latency))))
	}
	s.text(left, 30, "start", colP99, "", fmt.Sprintf("%d of %d rows on the front", len(p.Front), len(all)))
	return s.close()
}

// intervalsSVG draws intervals as whiskers, one line each, on a scale per line (estimate dot,
// low-high whisker); an interval over too few samples shows its estimate and says so.
func intervalsSVG(title string, ivs []contract.Interval) string {
	const w = 440.0
	const left, right, top, rowH = 170.0, 16.0, 30.0, 18.0
	n := min(len(ivs), 40)
	h := top + rowH*float64(n) + 10
	pw := w - left - right
	s := &svgWriter{}
	s.open("intervals", title, w, h)
	s.text(8, 14, "start", colInk, "600", title)
	for k, iv := range ivs[:n] {
		cy := top + rowH*float64(k) + rowH/2
		label := iv.Metric
		if iv.Concurrency > 0 {
			label = "c" + strconv.FormatInt(iv.Concurrency, 10) + " " + label
		}
		s.text(left-6, cy+4, "end", colInk, "", label)
		lo, hi := iv.Estimate, iv.Estimate
		if iv.Low != nil && iv.High != nil {
			lo, hi = *iv.Low, *iv.High
		}
		span := math.Max(hi-lo, math.Abs(iv.Estimate)*0.1)
		if span == 0 {
			span = 1
		}
		a, b := math.Min(lo, iv.Estimate)-span*0.25, math.Max(hi, iv.Estimate)+span*0.25
		x := func(v float64) float64 { return left + (v-a)/(b-a)*(pw-90) }
		if iv.TooFewSamples || iv.Low == nil {
			s.f(`<circle cx="%s" cy="%s" r="3" fill="#fff" stroke="%s"><title>%s</title></circle>`, fx(x(iv.Estimate)), fx(cy), colAxis, esc(fmt.Sprintf("%s %s: too few samples (%d) for an interval", label, num(iv.Estimate), iv.Samples)))
			s.text(left+pw-88, cy+4, "start", colAxis, "", fmt.Sprintf("%s, n %d: too few", num(iv.Estimate), iv.Samples))
			continue
		}
		s.line(x(lo), cy, x(hi), cy, colP50, 1.6, "")
		s.line(x(lo), cy-4, x(lo), cy+4, colP50, 1.6, "")
		s.line(x(hi), cy-4, x(hi), cy+4, colP50, 1.6, "")
		s.f(`<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s</title></circle>`, fx(x(iv.Estimate)), fx(cy), colP50, esc(fmt.Sprintf("%s %s [%s, %s], n %d", label, num(iv.Estimate), num(lo), num(hi), iv.Samples)))
		s.text(left+pw-88, cy+4, "start", colAxis, "", fmt.Sprintf("[%s, %s] n %d", num(lo), num(hi), iv.Samples))
	}
	return s.close()
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
			probes = append(probes, fmt.Sprintf("c%d %s %s", pr.Concurrency, num(pr.GoodFraction), v))
		}
		p.wrap("capacity", fmt.Sprintf("%s (last passing %s, first failing %s, ended %s) at good fraction >= %s; probes: %s",
			ptrString(c.Capacity), ptrString(c.LastPassing), ptrString(c.FirstFailing), c.Ended, num(c.MinGoodFraction), strings.Join(probes, ", ")))
	}
	if pr := f.pareto; pr != nil {
		var pts []string
		for _, q := range pr.Front {
			pts = append(pts, fmt.Sprintf("c%d-r%d (%s, %s)", q.Concurrency, q.Repetition, num(q.Throughput), num(q.Latency)))
		}
		p.wrap("pareto", fmt.Sprintf("%s vs %s: %s", pr.Throughput, pr.Latency, strings.Join(pts, ", ")))
	}
	for _, iv := range f.intervals {
		p.wrap("interval", intervalText(iv))
	}
}

func intervalText(iv contract.Interval) string {
	head := fmt.Sprintf("c%d %s over %d repetitions: %s", iv.Concurrency, iv.Metric, iv.Repetitions, num(iv.Estimate))
	if iv.TooFewSamples || iv.Low == nil || iv.High == nil {
		return fmt.Sprintf("%s, too few samples for an interval (%d < %d)", head, iv.Samples, iv.MinSamples)
	}
	return fmt.Sprintf("%s [%s, %s] at %s, n %d (%s)", head, num(*iv.Low), num(*iv.High), num(iv.Confidence), iv.Samples, iv.Method)
}

// acrossText lists the intervals across receipts.
func (p *textPrinter) acrossText(as []Across) {
	if len(as) == 0 {
		return
	}
	p.line("")
	p.line("across receipts: the median of each receipt's row metric with its distribution-free 95%")
	p.line("  interval (order statistics, benchstat's method)")
	for _, a := range as {
		vals := make([]string, len(a.Values))
		for i, x := range a.Values {
			vals[i] = num(x)
		}
		if !a.OK {
			p.wrap(a.Case+" "+a.Row, fmt.Sprintf("%s median %s over %d receipts: too few for an interval at 0.95 (need 6)", a.Metric, num(a.Interval.Estimate), len(a.Values)))
			continue
		}
		p.wrap(a.Case+" "+a.Row, fmt.Sprintf("%s median %s [%s, %s] over %d receipts", a.Metric, num(a.Interval.Estimate), num(a.Interval.Low), num(a.Interval.High), len(a.Values)))
	}
}

func ptrString(p *int64) string {
	if p == nil {
		return "none" // not a contract value: the text of an absent value
	}
	return strconv.FormatInt(*p, 10)
}
