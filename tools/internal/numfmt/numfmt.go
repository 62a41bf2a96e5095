// Package numfmt formats measured numbers for people. Evidence keeps full values; what a CLI
// prints is rounded here, in one place, so every command prints a number the same way.
package numfmt

import (
	"math"
	"strconv"
	"strings"
)

// Number prints v with four significant digits (at least its integer part), without an exponent
// for ordinary magnitudes and without trailing zeros: 0.03373, 12.35, 1234, 45678. Magnitudes
// below 1e-4 or from 1e15 use an exponent (1.235e-05); NaN and infinities print as Go spells them.
func Number(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	a := math.Abs(v)
	if a != 0 && (a < 1e-4 || a >= 1e15) {
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	decimals := 0
	if a != 0 {
		decimals = max(0, 3-int(math.Floor(math.Log10(a))))
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "-0" {
		s = "0"
	}
	return s
}
