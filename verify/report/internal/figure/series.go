package figure

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// timeLine is one line of a per-second chart.
type timeLine struct {
	name, color, dash string
	ys                []float64 // one per bin; NaN where undefined
}

// SeriesRate draws the sends per second (achieved) against the arrivals scheduled per second,
// with the time-averaged in-flight count.
func SeriesRate(bins []contract.SeriesBin) string {
	sent, sched, inflight := timeLine{name: "sent/s", color: colP50}, timeLine{name: "scheduled/s", color: colCurve, dash: "5 4"}, timeLine{name: "in flight (mean)", color: colGreen}
	for _, b := range bins {
		sent.ys = append(sent.ys, float64(b.Sent))
		sched.ys = append(sched.ys, float64(b.Scheduled))
		inflight.ys = append(inflight.ys, b.InFlightMean)
	}
	return timeSVG("series-rate", "Achieved and scheduled rate per second", "requests", []timeLine{sched, sent, inflight})
}

// SeriesLatency draws E2E p50 and p99 of the requests completed in each second.
func SeriesLatency(bins []contract.SeriesBin) string {
	p50, p99 := timeLine{name: "E2E p50", color: colP50}, timeLine{name: "E2E p99", color: colP99}
	opt := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	for _, b := range bins {
		p50.ys = append(p50.ys, opt(b.E2EP50Ms))
		p99.ys = append(p99.ys, opt(b.E2EP99Ms))
	}
	return timeSVG("series-latency", "E2E latency per second (completed in the second)", "ms", []timeLine{p50, p99})
}

// timeSVG draws lines over per-second bins (x: the bin's start in s); a NaN value breaks a line.
func timeSVG(kind, title, unit string, ls []timeLine) string {
	const w, h = 440.0, 250.0
	const left, right, top, bottom = 58.0, 16.0, 40.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	s := &svgWriter{}
	s.open(kind, title+" ("+unit+")", w, h)
	s.text(left, 14, "start", colInk, "600", title)
	n := 0
	ymax := 0.0
	for _, l := range ls {
		n = max(n, len(l.ys))
		for _, y := range l.ys {
			if !math.IsNaN(y) {
				ymax = math.Max(ymax, y)
			}
		}
	}
	ticks := niceTicks(0, math.Max(ymax, 1e-9), 4)
	yhi := ticks[len(ticks)-1]
	y := func(v float64) float64 { return top + (1-v/yhi)*ph }
	x := func(k int) float64 { return left + (float64(k)+0.5)/float64(max(n, 1))*pw }
	step := ticks[1] - ticks[0]
	for _, t := range ticks {
		s.line(left, y(t), left+pw, y(t), colGrid, 1, "")
		s.text(left-5, y(t)+4, "end", colAxis, "", tickLabel(t, step))
	}
	xt := niceTicks(0, float64(n), 5)
	for _, t := range xt {
		if t > float64(n) {
			continue
		}
		px := left + t/float64(max(n, 1))*pw
		s.line(px, top+ph, px, top+ph+4, colAxis, 1, "")
		s.text(px, top+ph+15, "middle", colAxis, "", strconv.FormatFloat(t, 'f', -1, 64))
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.text(left+pw/2, h-4, "middle", colAxis, "", "seconds from the row's start")
	s.f(`<text x="12" y="%s" text-anchor="middle" fill="%s" transform="rotate(-90 12 %s)">%s</text>`, fx(top+ph/2), colAxis, fx(top+ph/2), esc(unit))
	lx := left
	for _, l := range ls {
		s.line(lx, 28, lx+14, 28, l.color, 2, l.dash)
		s.text(lx+18, 32, "start", colInk, "", l.name)
		lx += 18 + textWidth(l.name) + 14
		var d strings.Builder
		pen := false
		for k, v := range l.ys {
			if math.IsNaN(v) {
				pen = false
				continue
			}
			cmd := "L"
			if !pen {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(k)), fx(y(v)))
			pen = true
		}
		dash := ""
		if l.dash != "" {
			dash = ` stroke-dasharray="` + l.dash + `"`
		}
		if d.Len() > 0 {
			s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.8"%s><title>%s</title></path>`, d.String(), l.color, dash, esc(l.name))
		}
	}
	return s.close()
}
