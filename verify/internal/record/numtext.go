package record

import (
	"math"
	"strconv"
)

// FmtPair formats two numbers that a reason sets side by side (a violation and its tolerance)
// for people: four significant digits, more only where fewer would print two different numbers
// the same, so "0.033730000000002036 > 0.03" reads "0.03373 > 0.03" and 0.0300001 > 0.03 stays
// visibly greater. The exact values are in the evaluation's own fields.
func FmtPair(a, b float64) (string, string) {
	for prec := 4; prec < 17; prec++ {
		sa, sb := strconv.FormatFloat(a, 'g', prec, 64), strconv.FormatFloat(b, 'g', prec, 64)
		if (sa != sb) == (a != b) {
			return trimG(sa), trimG(sb)
		}
	}
	return FmtFloat(a), FmtFloat(b)
}

// trimG prints a 'g'-formatted number without padding zeros and, for ordinary magnitudes (1e-4
// up to 1e15), without an exponent: "5.000" is "5", "1.235e+06" is "1235000".
func trimG(s string) string {
	r, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	if a := math.Abs(r); a == 0 || (a >= 1e-4 && a < 1e15) {
		return strconv.FormatFloat(r, 'f', -1, 64)
	}
	return s
}
