package format

import (
	"crypto/sha256"
	"encoding/base64"
	"math"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/rules"
)

// Num formats a number for people: about four significant digits, never an exponent for the
// magnitudes a report shows.
func Num(v float64) string {
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

// Exact formats a number of an evidence result as the shortest decimal that reads back as the
// same float64 (schemas.FormatNumber): driver numbers are shown unrounded, so a cosine similarity
// of 0.99999999 never reads as 1.
func Exact(v float64) string { return rules.FormatNumber(v) }

// ExactPtr is Exact of *p, or "none" when p is nil.
func ExactPtr(p *float64) string {
	if p == nil {
		return "none" // not a contract value: the text of an absent value
	}
	return Exact(*p)
}

// SignedExact is Exact with a plus sign on a positive number.
func SignedExact(v float64) string {
	s := Exact(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// Fine formats a driver number for the terminal: six significant digits, more where fewer would
// round a value that is not an integer to one (a cosine similarity of 0.9999999 stays below 1).
func Fine(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return Exact(v)
	}
	for prec := 6; prec < 17; prec++ {
		s := strconv.FormatFloat(v, 'g', prec, 64)
		if r, _ := strconv.ParseFloat(s, 64); r == v || r != math.Trunc(r) {
			return s
		}
	}
	return Exact(v)
}

// NumPtr is Num of *p, or "-" when p is nil.
func NumPtr(p *float64) string {
	if p == nil {
		return "-"
	}
	return Num(*p)
}

// Pct formats a percentage change: Num with a sign and a percent sign, "-" when p is nil.
func Pct(p *float64) string {
	if p == nil {
		return "-"
	}
	s := Num(*p)
	if *p > 0 {
		s = "+" + s
	}
	return s + "%"
}

// Signed is Num with a plus sign on a positive number.
func Signed(v float64) string {
	s := Num(v)
	if v > 0 {
		s = "+" + s
	}
	return s
}

// Short abbreviates a digest (sha256:0123456789ab…) or a git object id for tables.
func Short(d string) string {
	if rest, ok := strings.CutPrefix(d, "sha256:"); ok && len(rest) > 12 {
		return "sha256:" + rest[:12] + "…"
	}
	if len(d) == 40 {
		return d[:12] + "…"
	}
	return d
}

// YesNo says yes or no.
func YesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// CSPHash is a Content-Security-Policy source for an inline element's exact text.
func CSPHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'"
}
