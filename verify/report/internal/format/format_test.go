package format

import (
	"math"
	"testing"
)

import ()

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 1234.5: "1234", 123.45: "123.5", 12.345: "12.35", 1.5: "1.50", 8: "8", 0.0456: "0.046", 0.00123: "0.00123", -2.5: "-2.50", 500: "500", math.NaN(): "-"} {
		if got := Num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestFine(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 205: "205", 0.43279277263172755: "0.432793", 0.999999999999995: "0.999999999999995",
		0.9999955354638319: "0.999996", 1.7763568394002505e-15: "1.77636e-15", 1e-05: "1e-05", 2.0000001: "2.0000001", -8.0145e-05: "-8.0145e-05"} {
		if got := Fine(v); got != want {
			t.Errorf("fine(%v) = %q, want %q", v, got, want)
		}
	}
}
