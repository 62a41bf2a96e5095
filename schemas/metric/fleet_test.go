package metric

import (
	"math"
	"testing"
)

// TestFleetStatistics: median, MAD and the outlier rule on hand-computed samples.
func TestFleetStatistics(t *testing.T) {
	for _, tc := range []struct {
		name        string
		xs          []float64
		median, mad float64
		outliers    []float64 // under k = 3.5
	}{
		// deviations 2 1 0 1 97: MAD 1; 100 scores 97/1.4826 = 65.4, 1 scores 1.35.
		{"one-far", []float64{3, 1, 100, 2, 4}, 3, 1, []float64{100}},
		// even count: median 2.5, deviations 1.5 .5 .5 1.5, MAD 1.
		{"even", []float64{4, 1, 3, 2}, 2.5, 1, nil},
		// more than half agree exactly: MAD 0 and nothing is named, however far 60 is.
		{"mad-zero", []float64{5, 5, 5, 60}, 5, 0, nil},
		// sorted 9.9 9.95 10 10 10.05 10.1 10.2 10.5: median 10.025; deviations sorted .025 .025 .025
		// .075 .075 .125 .175 .475: MAD .075. 10.5 scores .475/(1.4826*.075) = 4.27 (outside),
		// 10.2 scores 1.57 (inside).
		{"close-call", []float64{10, 10.05, 9.95, 10, 10.1, 9.9, 10.2, 10.5}, 10.025, 0.075, []float64{10.5}},
		{"single", []float64{7}, 7, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mad, med := MAD(tc.xs)
			if math.Abs(med-tc.median) > 1e-12 || math.Abs(mad-tc.mad) > 1e-9 {
				t.Fatalf("median %v mad %v, want %v %v", med, mad, tc.median, tc.mad)
			}
			var got []float64
			for _, x := range tc.xs {
				if IsOutlier(x, med, mad, DefaultOutlierK) {
					got = append(got, x)
				}
			}
			if len(got) != len(tc.outliers) {
				t.Fatalf("outliers %v, want %v", got, tc.outliers)
			}
			for i := range got {
				if got[i] != tc.outliers[i] {
					t.Fatalf("outliers %v, want %v", got, tc.outliers)
				}
			}
		})
	}
	if s, ok := OutlierScore(100, 3, 1); !ok || math.Abs(s-97/1.4826) > 1e-9 {
		t.Fatalf("score %v %v", s, ok)
	}
	if !math.IsNaN(Median(nil)) {
		t.Fatal("median of nothing")
	}
}
