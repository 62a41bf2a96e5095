package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/rules"
)

// num formats a number for people: about four significant digits, never an exponent for the
// magnitudes a report shows.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v == 0:
		return "0"
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case a >= 0.01:
		return strconv.FormatFloat(v, 'f', 3, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// exact formats a number of an evidence result as the shortest decimal that reads back as the
// same float64 (schemas.FormatNumber): driver numbers are shown unrounded, so a cosine similarity
// of 0.99999999 never reads as 1.
func exact(v float64) string { return rules.FormatNumber(v) }

func exactPtr(p *float64) string {
	if p == nil {
		return "none" // not a contract value: the text of an absent value
	}
	return exact(*p)
}

func signedExact(v float64) string {
	s := exact(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// fine formats a driver number for the terminal: six significant digits, more where fewer would
// round a value that is not an integer to one (a cosine similarity of 0.9999999 stays below 1).
func fine(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return exact(v)
	}
	for prec := 6; prec < 17; prec++ {
		s := strconv.FormatFloat(v, 'g', prec, 64)
		if r, _ := strconv.ParseFloat(s, 64); r == v || r != math.Trunc(r) {
			return s
		}
	}
	return exact(v)
}

func numPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return num(*p)
}

func pct(p *float64) string {
	if p == nil {
		return "-"
	}
	s := num(*p)
	if *p > 0 {
		s = "+" + s
	}
	return s + "%"
}

func signed(v float64) string {
	s := num(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// short abbreviates a digest (sha256:0123456789ab…) or a git object id for tables.
func short(d string) string {
	if rest, ok := strings.CutPrefix(d, "sha256:"); ok && len(rest) > 12 {
		return "sha256:" + rest[:12] + "…"
	}
	if len(d) == 40 {
		return d[:12] + "…"
	}
	return d
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// dist returns a row's distribution of a metric.
func dist(r *Row, metric string) *Distribution {
	for i := range r.Distributions {
		if string(r.Distributions[i].Metric) == metric {
			return &r.Distributions[i]
		}
	}
	return nil
}

// rowP is a row's p50 (q 50) or p99 of a metric, "-" when it has no distribution of it.
func rowP(r *Row, metric string, q int) string {
	d := dist(r, metric)
	if d == nil {
		return "-"
	}
	if q == 50 {
		return num(d.P50)
	}
	return num(d.P99)
}
