package figure

import (
	"fmt"
	"html"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// The charts are inline SVG written here, with presentation attributes only (no style
// attributes, no script, no external reference), so the page's Content-Security-Policy can
// forbid everything it does not carry itself.

// Chart colors (colorblind-safe, Okabe-Ito).
const (
	colInk    = "#1f2933"
	colGrid   = "#d9dee3"
	colAxis   = "#52606d"
	colP50    = "#0072b2"
	colP99    = "#d55e00"
	colCurve  = "#1f2933"
	colGreen  = "#009e73"
	colPurple = "#cc79a7"
	colYellow = "#e69f00"
	colSky    = "#56b4e9"
)

// maxCDFPoints bounds the points of one CDF path: larger samples are drawn at evenly spaced
// quantiles (type 7), so a page stays small however many requests a row has.
const maxCDFPoints = 600

type svgWriter struct{ b strings.Builder }

func (s *svgWriter) f(layout string, args ...any) { fmt.Fprintf(&s.b, layout, args...) }

func esc(s string) string { return html.EscapeString(s) }

// fx formats a coordinate.
func fx(v float64) string { return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) }

func (s *svgWriter) open(kind, label string, w, h float64) {
	s.f(`<svg class="chart" data-chart="%s" role="img" aria-label="%s" viewBox="0 0 %s %s" width="%s" height="%s" font-family="system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif" font-size="11">`,
		kind, esc(label), fx(w), fx(h), fx(w), fx(h))
	s.f(`<title>%s</title>`, esc(label))
}

func (s *svgWriter) close() string {
	s.b.WriteString(`</svg>`)
	return s.b.String()
}

func (s *svgWriter) text(x, y float64, anchor, fill, weight, t string) {
	extra := ""
	if weight != "" {
		extra = ` font-weight="` + weight + `"`
	}
	s.f(`<text x="%s" y="%s" text-anchor="%s" fill="%s"%s>%s</text>`, fx(x), fx(y), anchor, fill, extra, esc(t))
}

func (s *svgWriter) line(x1, y1, x2, y2 float64, stroke string, width float64, dash string) {
	d := ""
	if dash != "" {
		d = ` stroke-dasharray="` + dash + `"`
	}
	s.f(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`, fx(x1), fx(y1), fx(x2), fx(y2), stroke, fx(width), d)
}

// niceTicks returns about n round ticks (1, 2 or 5 times a power of ten) covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	if !(hi > lo) {
		pad := math.Max(math.Abs(lo)*0.05, 1e-3)
		lo, hi = lo-pad, hi+pad
	}
	raw := (hi - lo) / float64(max(n, 1))
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	start := math.Floor(lo/step) * step
	var out []float64
	for v := start; v <= hi+step*1e-9; v += step {
		out = append(out, math.Round(v/step)*step)
		if len(out) > 50 {
			break
		}
	}
	if out[len(out)-1] < hi {
		out = append(out, out[len(out)-1]+step)
	}
	return out
}

// tickLabel formats a tick value with no more digits than its step needs.
func tickLabel(v, step float64) string {
	if v == 0 {
		return "0"
	}
	d := 0
	if step < 1 {
		d = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	if math.Abs(v) >= 10000 {
		return strconv.FormatFloat(v/1000, 'f', max(0, d-3), 64) + "k"
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// CDF draws the empirical CDF of sorted samples with p50 and p99 marked.
func CDF(title, unit string, sorted []float64, p50, p99 float64) string {
	const w, h = 300.0, 204.0
	const left, right, top, bottom = 40.0, 14.0, 44.0, 34.0
	pw, ph := w-left-right, h-top-bottom
	s := &svgWriter{}
	s.open("cdf", fmt.Sprintf("%s CDF (%s), n=%d, p50 %s, p99 %s", title, unit, len(sorted), format.Num(p50), format.Num(p99)), w, h)
	s.text(left, 14, "start", colInk, "600", title)
	s.text(w-right, 14, "end", colAxis, "", fmt.Sprintf("n=%d", len(sorted)))
	if len(sorted) == 0 {
		s.text(w/2, h/2, "middle", colAxis, "", "no samples")
		return s.close()
	}
	ticks := niceTicks(sorted[0], sorted[len(sorted)-1], 4)
	lo, hi := ticks[0], ticks[len(ticks)-1]
	x := func(v float64) float64 { return left + (v-lo)/(hi-lo)*pw }
	y := func(p float64) float64 { return top + (1-p)*ph }
	// Grid and axes.
	for _, p := range []float64{0, 0.5, 1} {
		s.line(left, y(p), left+pw, y(p), colGrid, 1, "")
		s.text(left-5, y(p)+4, "end", colAxis, "", strconv.Itoa(int(p*100))+"%")
	}
	step := 1.0
	if len(ticks) > 1 {
		step = ticks[1] - ticks[0]
	}
	for _, t := range ticks {
		s.line(x(t), top+ph, x(t), top+ph+4, colAxis, 1, "")
		label, anchor, lx := tickLabel(t, step), "middle", x(t)
		if lx+textWidth(label)/2 > w-1 {
			anchor, lx = "end", w-1
		}
		s.text(lx, top+ph+15, anchor, colAxis, "", label)
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.text(left+pw/2, h-4, "middle", colAxis, "", unit)
	// The curve: a step function through every sample, or evenly spaced quantiles of a large one.
	var d strings.Builder
	n := len(sorted)
	if n <= maxCDFPoints {
		fmt.Fprintf(&d, "M%s %s", fx(x(sorted[0])), fx(y(0)))
		for i, v := range sorted {
			fmt.Fprintf(&d, "H%sV%s", fx(x(v)), fx(y(float64(i+1)/float64(n))))
		}
	} else {
		for i := 0; i <= maxCDFPoints; i++ {
			p := float64(i) / maxCDFPoints
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(metric.Percentile(sorted, p))), fx(y(p)))
		}
	}
	s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.6"/>`, d.String(), colCurve)
	// p50 and p99: a dashed line, a dot on the curve, a label on its own row.
	for i, m := range []struct {
		name  string
		v, p  float64
		color string
	}{{"p50", p50, 0.5, colP50}, {"p99", p99, 0.99, colP99}} {
		px := x(m.v)
		s.line(px, 29+float64(i)*11, px, top+ph, m.color, 1.2, "4 3")
		s.f(`<circle cx="%s" cy="%s" r="3" fill="%s"/>`, fx(px), fx(y(m.p)), m.color)
		label := m.name + " " + format.Num(m.v)
		ly := 26.0 + float64(i)*11
		anchor, lx := "start", px+3
		if px+3+textWidth(label) > w-2 {
			anchor, lx = "end", px-3
		}
		s.text(lx, ly, anchor, m.color, "600", label)
	}
	return s.close()
}

// textWidth estimates the width of 11 px text.
func textWidth(s string) float64 { return float64(len([]rune(s))) * 6.3 }

// point is one value of a series at a load: a concurrency, or an open-loop row's offered rate.
type point struct {
	x float64
	y float64
}

type series struct {
	name   string
	color  string
	dash   string // "" for a solid line
	points []point
}

// concurrency draws series against the load axis (concurrency, or offered rate for open-loop
// rows): one dot per row, a line through the mean of each load. Load levels are spaced evenly
// (their values label the axis).
func concurrency(title, unit, axis string, ss []series) string {
	const w, h = 440.0, 250.0
	const left, right, top, bottom = 58.0, 16.0, 40.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	s := &svgWriter{}
	s.open("concurrency", title+" vs "+axis+" ("+unit+")", w, h)
	s.text(left, 14, "start", colInk, "600", title)
	var xs []float64
	ymax := 0.0
	for _, sr := range ss {
		for _, p := range sr.points {
			if !slices.Contains(xs, p.x) {
				xs = append(xs, p.x)
			}
			ymax = math.Max(ymax, p.y)
		}
	}
	slices.Sort(xs)
	if len(xs) == 0 {
		s.text(w/2, h/2, "middle", colAxis, "", "no rows")
		return s.close()
	}
	ticks := niceTicks(0, math.Max(ymax, 1e-9), 4)
	yhi := ticks[len(ticks)-1]
	y := func(v float64) float64 { return top + (1-v/yhi)*ph }
	x := func(c float64) float64 {
		i := slices.Index(xs, c)
		if len(xs) == 1 {
			return left + pw/2
		}
		return left + 20 + float64(i)/float64(len(xs)-1)*(pw-40)
	}
	step := ticks[1] - ticks[0]
	for _, t := range ticks {
		s.line(left, y(t), left+pw, y(t), colGrid, 1, "")
		s.text(left-5, y(t)+4, "end", colAxis, "", tickLabel(t, step))
	}
	for _, c := range xs {
		s.line(x(c), top+ph, x(c), top+ph+4, colAxis, 1, "")
		s.text(x(c), top+ph+15, "middle", colAxis, "", format.Num(c))
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.text(left+pw/2, h-4, "middle", colAxis, "", axis)
	s.f(`<text x="12" y="%s" text-anchor="middle" fill="%s" transform="rotate(-90 12 %s)">%s</text>`, fx(top+ph/2), colAxis, fx(top+ph/2), esc(unit))
	lx := left
	for _, sr := range ss {
		// Legend.
		s.line(lx, 28, lx+14, 28, sr.color, 2, sr.dash)
		s.text(lx+18, 32, "start", colInk, "", sr.name)
		lx += 18 + textWidth(sr.name) + 14
		means := map[float64][]float64{}
		for _, p := range sr.points {
			means[p.x] = append(means[p.x], p.y)
		}
		var d strings.Builder
		for i, c := range xs {
			v, ok := means[c]
			if !ok {
				continue
			}
			m := 0.0
			for _, e := range v {
				m += e
			}
			m /= float64(len(v))
			cmd := "L"
			if i == 0 || d.Len() == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(c)), fx(y(m)))
		}
		dash := ""
		if sr.dash != "" {
			dash = ` stroke-dasharray="` + sr.dash + `"`
		}
		s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.8"%s/>`, d.String(), sr.color, dash)
		for _, p := range sr.points {
			fill := sr.color
			if sr.dash != "" {
				fill = "#fff" // hollow: a dashed series stays visible over a solid one with equal values
			}
			s.f(`<circle cx="%s" cy="%s" r="3.4" fill="%s" stroke="%s" stroke-width="1.4"><title>%s</title></circle>`, fx(x(p.x)), fx(y(p.y)), fill, sr.color, esc(fmt.Sprintf("%s at %s %s: %s %s", sr.name, axis, format.Num(p.x), format.Num(p.y), unit)))
		}
	}
	return s.close()
}

// Timeline draws the server's life: phases as bars, events as marks with labels on as many
// rows as they need not to overlap.
func Timeline(events []contract.ViewEvent) string {
	const w = 880.0
	const left, right = 16.0, 16.0
	pw := w - left - right
	s := &svgWriter{}
	if len(events) == 0 {
		s.open("timeline", "lifecycle timeline: no events", w, 40)
		s.text(w/2, 24, "middle", colAxis, "", "no lifecycle events recorded")
		return s.close()
	}
	end := 0.0
	for _, e := range events {
		end = math.Max(end, e.OffsetMs)
	}
	if end <= 0 {
		end = 1
	}
	x := func(ms float64) float64 { return left + math.Max(0, ms)/end*pw }
	// Label rows: greedy, first row whose last label ends before this one starts.
	type placed struct {
		e      contract.ViewEvent
		row    int
		lx     float64
		anchor string
		label  string
	}
	var rowsEnd []float64
	var ps []placed
	for i, e := range events {
		label := fmt.Sprintf("%s %s ms", e.Name, format.Num(e.OffsetMs))
		tw := textWidth(label)
		px := x(e.OffsetMs)
		anchor, lx, start, stop := "start", px+3, px, px+3+tw
		if i == len(events)-1 || stop > w-2 {
			anchor, lx, start, stop = "end", px-3, px-3-tw, px
		}
		row := -1
		for r, re := range rowsEnd {
			if start > re+8 {
				row = r
				break
			}
		}
		if row < 0 {
			rowsEnd = append(rowsEnd, 0)
			row = len(rowsEnd) - 1
		}
		rowsEnd[row] = stop
		ps = append(ps, placed{e, row, lx, anchor, label})
	}
	barY := 20.0 + float64(len(rowsEnd))*15
	h := barY + 50
	s.open("timeline", "lifecycle timeline from launch to exit", w, h)
	at := func(name string) (float64, bool) {
		for _, e := range events {
			if string(e.Name) == name {
				return e.OffsetMs, true
			}
		}
		return 0, false
	}
	phases := []struct {
		from, to, label, color string
	}{{"launch", "ready", "startup", colSky}, {"first request", "last response", "traffic", colGreen}, {"SIGTERM", "exit", "shutdown", colYellow}}
	for _, ph := range phases {
		a, okA := at(ph.from)
		b, okB := at(ph.to)
		if !okA || !okB {
			continue
		}
		wid := math.Max(x(b)-x(a), 2)
		s.f(`<rect x="%s" y="%s" width="%s" height="14" fill="%s" opacity="0.85"><title>%s</title></rect>`, fx(x(a)), fx(barY), fx(wid), ph.color, esc(fmt.Sprintf("%s: %s ms", ph.label, format.Num(b-a))))
	}
	s.line(left, barY+14, left+pw, barY+14, colAxis, 1, "")
	for _, p := range ps {
		px := x(p.e.OffsetMs)
		ly := 14 + float64(p.row)*15
		s.line(px, ly+3, px, barY+18, colInk, 1, "2 2")
		s.text(p.lx, ly, p.anchor, colInk, "", p.label)
	}
	// Legend under the bar.
	lx := left
	for _, ph := range phases {
		s.f(`<rect x="%s" y="%s" width="12" height="10" fill="%s"/>`, fx(lx), fx(barY+28), ph.color)
		s.text(lx+16, barY+37, "start", colAxis, "", ph.label)
		lx += 16 + textWidth(ph.label) + 16
	}
	s.text(w-right, barY+37, "end", colAxis, "", "milliseconds since launch (monotonic clock)")
	return s.close()
}

// maxBoundaryLabels bounds the boundary names written under a layer chart: with more boundaries,
// every k-th is labelled (and the largest growth always).
const maxBoundaryLabels = 24

// Layers draws the relative RMS error of each layer boundary, in order, with the segment of
// the largest growth and its boundary marked, and the relative RMS error tolerance (where one
// applies) as a dashed line. The y axis starts at zero.
func Layers(la *contract.ViewLayerAttribution) string {
	const w, h = 720.0, 290.0
	const left, right, top, bottom = 66.0, 18.0, 48.0, 78.0
	pw, ph := w-left-right, h-top-bottom
	bs := la.Boundaries
	s := &svgWriter{}
	g := la.LargestGrowth
	s.open("layers", fmt.Sprintf("relative RMS error per layer boundary (%d boundaries), largest growth %s at %s", len(bs), format.SignedExact(g.Delta), g.Name), w, h)
	s.text(left, 14, "start", colInk, "600", "Relative RMS error per layer boundary")
	if len(bs) == 0 {
		s.text(w/2, h/2, "middle", colAxis, "", "no boundaries")
		return s.close()
	}
	lo, hi := 0.0, 0.0
	for _, b := range bs {
		lo, hi = math.Min(lo, b.RelativeRootMeanSquareError), math.Max(hi, b.RelativeRootMeanSquareError)
		if b.Limit != nil {
			hi = math.Max(hi, *b.Limit)
		}
	}
	if hi <= lo {
		hi = lo + 1e-9
	}
	ticks := niceTicks(lo, hi, 4)
	ylo, yhi := ticks[0], ticks[len(ticks)-1]
	y := func(v float64) float64 { return top + (1-(v-ylo)/(yhi-ylo))*ph }
	x := func(i int) float64 {
		if len(bs) == 1 {
			return left + pw/2
		}
		return left + 14 + float64(i)/float64(len(bs)-1)*(pw-28)
	}
	step := ticks[1] - ticks[0]
	for _, t := range ticks {
		s.line(left, y(t), left+pw, y(t), colGrid, 1, "")
		label := tickLabel(t, step)
		if step < 1e-3 && t != 0 {
			label = strconv.FormatFloat(t, 'g', 3, 64)
		}
		s.text(left-5, y(t)+4, "end", colAxis, "", label)
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.f(`<text x="12" y="%s" text-anchor="middle" fill="%s" transform="rotate(-90 12 %s)">relative RMS error</text>`, fx(top+ph/2), colAxis, fx(top+ph/2))
	// Boundary names, slanted; every k-th when there are many, the largest growth's always.
	k := (len(bs) + maxBoundaryLabels - 1) / maxBoundaryLabels
	for i, b := range bs {
		s.line(x(i), top+ph, x(i), top+ph+4, colAxis, 1, "")
		if i%k != 0 && !b.Largest {
			continue
		}
		name := []rune(b.Name)
		if len(name) > 14 {
			name = append(name[:13], '…')
		}
		fill := colAxis
		if b.Largest {
			fill = colP99
		}
		lx, ly := x(i)+3, top+ph+14
		s.f(`<text x="%s" y="%s" text-anchor="end" fill="%s" transform="rotate(-35 %s %s)">%s</text>`, fx(lx), fx(ly), fill, fx(lx), fx(ly), esc(string(name)))
	}
	// The tolerance, where one applies: a dashed line through each boundary's limit.
	var lim strings.Builder
	hasLimit := false
	for i, b := range bs {
		if b.Limit == nil {
			continue
		}
		cmd := "L"
		if lim.Len() == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&lim, "%s%s %s", cmd, fx(x(i)-6), fx(y(*b.Limit)))
		fmt.Fprintf(&lim, "L%s %s", fx(x(i)+6), fx(y(*b.Limit)))
		hasLimit = true
	}
	if hasLimit {
		s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.4" stroke-dasharray="5 4"/>`, lim.String(), colGreen)
	}
	// The curve.
	var d strings.Builder
	for i, b := range bs {
		cmd := "L"
		if i == 0 {
			cmd = "M"
		}
		fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(i)), fx(y(b.RelativeRootMeanSquareError)))
	}
	s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.6"/>`, d.String(), colCurve)
	// The largest growth: the segment from the previous boundary (from zero for the first).
	for i, b := range bs {
		if !b.Largest {
			continue
		}
		x0, y0 := x(i), y(0)
		if i > 0 {
			x0, y0 = x(i-1), y(bs[i-1].RelativeRootMeanSquareError)
		}
		s.f(`<path d="M%s %sL%s %s" fill="none" stroke="%s" stroke-width="3.2" data-largest-growth="%s"/>`, fx(x0), fx(y0), fx(x(i)), fx(y(b.RelativeRootMeanSquareError)), colP99, esc(b.Name))
		break
	}
	for i, b := range bs {
		color, r := colCurve, 3.0
		if b.Largest {
			color, r = colP99, 4.6
		}
		if len(b.Failed) > 0 {
			color = colPurple
		}
		tip := fmt.Sprintf("%s (index %d): relative RMS error %s, growth %s", b.Name, b.Index, format.Exact(b.RelativeRootMeanSquareError), format.SignedExact(b.Growth))
		if b.Limit != nil {
			tip += ", limit " + format.Exact(*b.Limit)
		}
		if len(b.Failed) > 0 {
			tip += ", failed " + strings.Join(contract.Strings(b.Failed), ", ")
		}
		s.f(`<circle cx="%s" cy="%s" r="%s" fill="%s"><title>%s</title></circle>`, fx(x(i)), fx(y(b.RelativeRootMeanSquareError)), fx(r), color, esc(tip))
	}
	// Legend.
	lx := left
	s.line(lx, 32, lx+14, 32, colCurve, 2, "")
	s.text(lx+18, 36, "start", colInk, "", "relative RMS error")
	lx += 18 + textWidth("relative RMS error") + 14
	gname := []rune(g.Name)
	if len(gname) > 24 {
		gname = append(gname[:23], '…')
	}
	label := fmt.Sprintf("largest growth %s at %s", format.SignedExact(g.Delta), string(gname))
	s.line(lx, 32, lx+14, 32, colP99, 3.2, "")
	s.text(lx+18, 36, "start", colP99, "600", label)
	lx += 18 + textWidth(label)*1.1 + 14
	if hasLimit {
		label := "tolerance"
		var first *float64
		same := true
		for _, b := range bs {
			if b.Limit != nil {
				if first == nil {
					first = b.Limit
				} else if *b.Limit != *first {
					same = false
				}
			}
		}
		if same {
			label += " ≤ " + format.Exact(*first)
		}
		s.line(lx, 32, lx+14, 32, colGreen, 1.4, "5 4")
		s.text(lx+18, 36, "start", colInk, "", label)
	}
	return s.close()
}
