package metric

import (
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// MinSamplesP999 is the fewest samples for which a distribution's p99.9 is emitted; with fewer,
// the 99.9th percentile is an interpolation between the two largest samples and is left out.
const MinSamplesP999 = 1000

// Summary describes a sample: count, min, max, mean and percentiles.
type Summary struct {
	Count              int
	Min, Max, Mean     float64
	P50, P90, P95, P99 float64
	P999               float64
	HasP999            bool // Count >= MinSamplesP999
}

// Percentile returns the p-quantile (0 <= p <= 1) of sorted (ascending) by linear interpolation
// between closest ranks: Hyndman and Fan's type 7, numpy's default. With h = (n-1)p, it is
// x[floor(h)] + (h - floor(h)) (x[floor(h)+1] - x[floor(h)]). NaN for an empty sample.
func Percentile(sorted []float64, p float64) float64 {
	n := len(sorted)
	if n == 0 {
		return math.NaN()
	}
	h := float64(n-1) * p
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Summarize sorts a copy of xs and summarizes it; the zero Summary for an empty sample.
func Summarize(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	out := Summary{
		Count: len(s), Min: s[0], Max: s[len(s)-1], Mean: sum / float64(len(s)),
		P50: Percentile(s, 0.50), P90: Percentile(s, 0.90), P95: Percentile(s, 0.95), P99: Percentile(s, 0.99),
	}
	if len(s) >= MinSamplesP999 {
		out.P999, out.HasP999 = Percentile(s, 0.999), true
	}
	return out
}

// Of returns the statistic a of the summary; false for P999 without enough samples or an
// aggregation that is not a distribution's.
func (s Summary) Of(a contract.Aggregation) (float64, bool) {
	switch a {
	case contract.AggregationP50:
		return s.P50, true
	case contract.AggregationP90:
		return s.P90, true
	case contract.AggregationP95:
		return s.P95, true
	case contract.AggregationP99:
		return s.P99, true
	case contract.AggregationP99_9:
		return s.P999, s.HasP999
	case contract.AggregationMin:
		return s.Min, true
	case contract.AggregationMax:
		return s.Max, true
	case contract.AggregationMean:
		return s.Mean, true
	}
	return 0, false
}
