package figure

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// The derived figures of a serving case: its capacity search, Pareto front and confidence
// intervals (docs/metrics.md).

// Capacity draws a capacity search: each probe's good fraction against its concurrency (in
// order of concurrency), passing probes filled, failing hollow, the SLO line at min_good_fraction
// dashed, the capacity marked.
func Capacity(c *contract.Capacity) string {
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
	s.text(left+pw, y(c.MinGoodFraction)-4, "end", colP99, "", "SLO: good fraction ≥ "+format.Num(c.MinGoodFraction))
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
			esc(fmt.Sprintf("concurrency %d: good fraction %s, %s", p.Concurrency, format.Num(p.GoodFraction), verdict)))
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

// Pareto draws every row's (throughput, latency) and the front through its points.
func Pareto(p *contract.Pareto, all []contract.ParetoPoint) string {
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
			esc(fmt.Sprintf("row c%d-r%d: %s, %s", q.Concurrency, q.Repetition, format.Num(q.Throughput), format.Num(q.Latency))))
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
			esc(fmt.Sprintf("front: row c%d-r%d, %s, %s", q.Concurrency, q.Repetition, format.Num(q.Throughput), format.Num(q.Latency))))
	}
	s.text(left, 30, "start", colP99, "", fmt.Sprintf("%d of %d rows on the front", len(p.Front), len(all)))
	return s.close()
}

// Intervals draws intervals as whiskers, one line each, on a scale per line (estimate dot,
// low-high whisker); an interval over too few samples shows its estimate and says so.
func Intervals(title string, ivs []contract.Interval) string {
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
			s.f(`<circle cx="%s" cy="%s" r="3" fill="#fff" stroke="%s"><title>%s</title></circle>`, fx(x(iv.Estimate)), fx(cy), colAxis, esc(fmt.Sprintf("%s %s: too few samples (%d) for an interval", label, format.Num(iv.Estimate), iv.Samples)))
			s.text(left+pw-88, cy+4, "start", colAxis, "", fmt.Sprintf("%s, n %d: too few", format.Num(iv.Estimate), iv.Samples))
			continue
		}
		s.line(x(lo), cy, x(hi), cy, colP50, 1.6, "")
		s.line(x(lo), cy-4, x(lo), cy+4, colP50, 1.6, "")
		s.line(x(hi), cy-4, x(hi), cy+4, colP50, 1.6, "")
		s.f(`<circle cx="%s" cy="%s" r="3" fill="%s"><title>%s</title></circle>`, fx(x(iv.Estimate)), fx(cy), colP50, esc(fmt.Sprintf("%s %s [%s, %s], n %d", label, format.Num(iv.Estimate), format.Num(lo), format.Num(hi), iv.Samples)))
		s.text(left+pw-88, cy+4, "start", colAxis, "", fmt.Sprintf("[%s, %s] n %d", format.Num(lo), format.Num(hi), iv.Samples))
	}
	return s.close()
}
