package metric

import (
	"math"
	"slices"
)

// The fleet statistics of docs/fleet.md and qualkit.fleet-manifest.v1: how much the hosts of a
// fleet disagree on one metric, and which hosts are outliers under a robust rule.

// MADScale makes the median absolute deviation a consistent estimator of the standard deviation
// of normally distributed values (1/Φ⁻¹(3/4), rounded as the contract fixes it).
const MADScale = 1.4826

// DefaultOutlierK is the rule's default k: |x − median| > 3.5·MADScale·MAD (Iglewicz and
// Hoaglin's modified z-score threshold).
const DefaultOutlierK = 3.5

// Median is the 50th percentile of xs (type 7: the mean of the two middle values for an even
// count); xs is not modified. NaN for no values.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return Percentile(s, 0.5)
}

// MAD is the median absolute deviation of xs from their median (unscaled), with that median.
func MAD(xs []float64) (mad, median float64) {
	median = Median(xs)
	dev := make([]float64, len(xs))
	for i, x := range xs {
		dev[i] = math.Abs(x - median)
	}
	return Median(dev), median
}

// OutlierScore is |x − median| / (MADScale·mad); ok is false when mad is 0 (more than half the
// values agree exactly, and no scale exists to call a difference large).
func OutlierScore(x, median, mad float64) (score float64, ok bool) {
	if !(mad > 0) {
		return 0, false
	}
	return math.Abs(x-median) / (MADScale * mad), true
}

// IsOutlier applies the rule: mad > 0 and |x − median| > k·MADScale·mad.
func IsOutlier(x, median, mad, k float64) bool {
	s, ok := OutlierScore(x, median, mad)
	return ok && s > k
}
