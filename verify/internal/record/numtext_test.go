package record

import "testing"

func TestFmtPair(t *testing.T) {
	for _, c := range []struct {
		a, b   float64
		wa, wb string
	}{
		{0.033730000000002036, 0.03, "0.03373", "0.03"},
		{8.782689, 5, "8.783", "5"},
		{0.0300001, 0.03, "0.0300001", "0.03"},
		{2, 2, "2", "2"},
		{1234567, 1e6, "1235000", "1000000"},
	} {
		a, b := FmtPair(c.a, c.b)
		if a != c.wa || b != c.wb {
			t.Errorf("fmtPair(%v, %v) = %q, %q; want %q, %q", c.a, c.b, a, b, c.wa, c.wb)
		}
	}
}
