package numfmt

import "testing"

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want string
	}{
		{0.033730000000002036, "0.03373"},
		{12.345678, "12.35"},
		{1234.4, "1234"},
		{45678.9, "45679"},
		{2, "2"},
		{0, "0"},
		{-0.5, "-0.5"},
		{1.5e-7, "1.5e-07"},
		{0.99996, "1"},
	} {
		if got := Number(c.in); got != c.want {
			t.Errorf("Number(%v) = %q, want %q", c.in, got, c.want)
		}
	}
}
