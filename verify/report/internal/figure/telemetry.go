package figure

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// maxTelemetryPoints bounds the points of one telemetry line: longer series are thinned evenly.
const maxTelemetryPoints = 600

// deviceColors tell sampled devices apart (Okabe-Ito).
var deviceColors = []string{colP50, colP99, colGreen, colPurple, colYellow, colSky, colCurve}

// Telemetry draws a row's device telemetry: power and SM clock against time, side by side.
func Telemetry(xs []contract.TelemetrySampleDoc) string {
	power := telemetry("Device power", "W", xs, func(x contract.TelemetrySampleDoc) (float64, bool) {
		if x.PowerW == nil {
			return 0, false
		}
		return *x.PowerW, true
	})
	clock := telemetry("SM clock", "MHz", xs, func(x contract.TelemetrySampleDoc) (float64, bool) {
		if x.SMClockMHz == nil {
			return 0, false
		}
		return float64(*x.SMClockMHz), true
	})
	return power + clock
}

// telemetry draws one reading of every sampled device against time (s from the row's first
// sample); samples with a throttle reason are marked below the curve.
func telemetry(title, unit string, xs []contract.TelemetrySampleDoc, val func(contract.TelemetrySampleDoc) (float64, bool)) string {
	const w, h = 440.0, 220.0
	const left, right, top, bottom = 58.0, 16.0, 40.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	s := &svgWriter{}
	t0, t1 := xs[0].TNs, xs[0].TNs
	var devices []int64
	ymax := 0.0
	n := 0
	for _, x := range xs {
		t0, t1 = min(t0, x.TNs), max(t1, x.TNs)
		found := false
		for _, d := range devices {
			found = found || d == x.Device
		}
		if !found {
			devices = append(devices, x.Device)
		}
		if v, ok := val(x); ok {
			ymax = math.Max(ymax, v)
			n++
		}
	}
	s.open("telemetry", fmt.Sprintf("%s (%s) against time, %d devices, %d readings", title, unit, len(devices), n), w, h)
	s.text(left, 14, "start", colInk, "600", title+" against time")
	if n == 0 {
		s.text(w/2, h/2, "middle", colAxis, "", "not reported by the device")
		return s.close()
	}
	span := math.Max(float64(t1-t0)/1e9, 1e-9)
	xt := niceTicks(0, span, 4)
	yt := niceTicks(0, math.Max(ymax, 1e-9), 4)
	xhi, yhi := xt[len(xt)-1], yt[len(yt)-1]
	x := func(t int64) float64 { return left + float64(t-t0)/1e9/xhi*pw }
	y := func(v float64) float64 { return top + (1-v/yhi)*ph }
	ystep, xstep := yt[1]-yt[0], xt[1]-xt[0]
	for _, t := range yt {
		s.line(left, y(t), left+pw, y(t), colGrid, 1, "")
		s.text(left-5, y(t)+4, "end", colAxis, "", tickLabel(t, ystep))
	}
	for _, t := range xt {
		px := left + t/xhi*pw
		s.line(px, top+ph, px, top+ph+4, colAxis, 1, "")
		s.text(px, top+ph+15, "middle", colAxis, "", tickLabel(t, xstep))
	}
	s.line(left, top+ph, left+pw, top+ph, colAxis, 1, "")
	s.text(left+pw/2, h-4, "middle", colAxis, "", "s since the row's first sample")
	s.f(`<text x="12" y="%s" text-anchor="middle" fill="%s" transform="rotate(-90 12 %s)">%s</text>`, fx(top+ph/2), colAxis, fx(top+ph/2), esc(unit))
	lx := left
	for i, dev := range devices {
		color := deviceColors[i%len(deviceColors)]
		name := "device " + strconv.FormatInt(dev, 10)
		s.line(lx, 28, lx+14, 28, color, 2, "")
		s.text(lx+18, 32, "start", colInk, "", name)
		lx += 18 + textWidth(name) + 14
		var pts []contract.TelemetrySampleDoc
		for _, x := range xs {
			if _, ok := val(x); ok && x.Device == dev {
				pts = append(pts, x)
			}
		}
		stride := 1
		if len(pts) > maxTelemetryPoints {
			stride = (len(pts) + maxTelemetryPoints - 1) / maxTelemetryPoints
		}
		var d strings.Builder
		for j := 0; j < len(pts); j += stride {
			v, _ := val(pts[j])
			cmd := "L"
			if j == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s", cmd, fx(x(pts[j].TNs)), fx(y(v)))
		}
		s.f(`<path d="%s" fill="none" stroke="%s" stroke-width="1.6"><title>%s</title></path>`, d.String(), color, esc(fmt.Sprintf("%s: %d readings", name, len(pts))))
		for _, p := range pts {
			if len(p.ThrottleReasons) > 0 {
				s.f(`<rect x="%s" y="%s" width="2" height="4" fill="%s"><title>%s</title></rect>`, fx(x(p.TNs)-1), fx(top+ph-5), colP99, esc("throttled: "+strings.Join(contract.Strings(p.ThrottleReasons), ", ")))
			}
		}
	}
	return s.close()
}
