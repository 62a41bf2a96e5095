package metric

import (
	"math"
	"testing"
)

// TestPercentileType7 (moved from runner/metrics, which only wrapped these) checks linear interpolation between closest ranks against values numpy
// gives (numpy.percentile, method "linear", its default).
func TestPercentileType7(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for _, tt := range []struct{ p, want float64 }{
		{0, 1}, {0.25, 3.25}, {0.5, 5.5}, {0.9, 9.1}, {0.95, 9.55}, {0.99, 9.91}, {0.999, 9.991}, {1, 10},
	} {
		if got := Percentile(x, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	// numpy.percentile([3, 1, 7], 50) == 3; ([15, 20, 35, 40, 50], 40) == 29.
	if got := Percentile([]float64{1, 3, 7}, 0.5); got != 3 {
		t.Errorf("median %v", got)
	}
	if got := Percentile([]float64{15, 20, 35, 40, 50}, 0.4); math.Abs(got-29) > 1e-12 {
		t.Errorf("p40 %v", got)
	}
	if got := Percentile([]float64{42}, 0.99); got != 42 {
		t.Errorf("single %v", got)
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("empty sample has a percentile")
	}
}

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{4, 1, 3, 2})
	if s.Count != 4 || s.Min != 1 || s.Max != 4 || s.Mean != 2.5 || s.P50 != 2.5 || s.HasP999 {
		t.Fatalf("%+v", s)
	}
	xs := make([]float64, MinSamplesP999-1)
	for i := range xs {
		xs[i] = float64(i)
	}
	if Summarize(xs).HasP999 {
		t.Fatal("p99.9 with 999 samples")
	}
	xs = append(xs, float64(len(xs)))
	s = Summarize(xs)
	if !s.HasP999 || math.Abs(s.P999-998.001) > 1e-9 {
		t.Fatalf("p99.9 of 0..999: %v %v", s.HasP999, s.P999)
	}
	if (Summarize(nil) != Summary{}) {
		t.Fatal("empty summary")
	}
}
