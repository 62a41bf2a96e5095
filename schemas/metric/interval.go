package metric

import (
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// IntervalConfidence is the confidence level of the intervals a case result and a report state.
const IntervalConfidence = 0.95

// IntervalMetric is a row distribution percentile that gets a confidence interval.
type IntervalMetric struct {
	Formula     string
	Aggregation contract.Aggregation
}

// IntervalMetrics are the headline percentiles a case with repetitions states intervals for.
var IntervalMetrics = []IntervalMetric{
	{TTFT, contract.AggregationP50}, {TTFT, contract.AggregationP99},
	{TPOT, contract.AggregationP50}, {TPOT, contract.AggregationP99},
	{E2E, contract.AggregationP50}, {E2E, contract.AggregationP99},
}

// IntervalGroup is the rows of one concurrency: each repetition's per-request samples.
type IntervalGroup struct {
	Concurrency int64
	Repetitions []Samples
}

// Intervals are the confidence intervals of IntervalMetrics for each group (docs/metrics.md
// "Confidence intervals"): the percentile of the pooled per-request samples of the group's
// repetitions, with BootstrapQuantile's interval (IntervalConfidence, BootstrapResamples,
// BootstrapSeed). A percentile with fewer pooled samples than MinSamplesQuantile is stated with
// its estimate and too_few_samples true, and no interval. A metric without any sample is left
// out.
func Intervals(groups []IntervalGroup) []contract.Interval {
	out := []contract.Interval{}
	for _, g := range groups {
		for _, im := range IntervalMetrics {
			var xs []float64
			for _, s := range g.Repetitions {
				v, _ := PerRequest(im.Formula, s)
				xs = append(xs, v...)
			}
			if len(xs) == 0 {
				continue
			}
			q, _ := QuantileOf(im.Aggregation)
			need := MinSamplesQuantile(q)
			iv := contract.Interval{Concurrency: g.Concurrency, Metric: mustLookup(im.Formula).Name + "." + string(im.Aggregation),
				Method: contract.IntervalMethod, Repetitions: int64(len(g.Repetitions)), Samples: int64(len(xs)),
				Confidence: IntervalConfidence, MinSamples: int64(need)}
			if len(xs) < need {
				s := slices.Clone(xs)
				slices.Sort(s)
				iv.Estimate, iv.TooFewSamples = Percentile(s, q), true
			} else {
				b := BootstrapQuantile(xs, q, IntervalConfidence, BootstrapResamples, BootstrapSeed)
				lo, hi := b.Low, b.High
				iv.Estimate, iv.Low, iv.High = b.Estimate, &lo, &hi
			}
			out = append(out, iv)
		}
	}
	return out
}

// MedianInterval is the distribution-free confidence interval of the median of xs that
// benchstat states (golang.org/x/perf/benchmath, "nonparametric"): the widest pair of order
// statistics x_(j) and x_(n+1-j) (1-based) whose coverage 1 - 2 P(B <= j-1), B ~ Binomial(n,
// 1/2), is at least confidence, choosing the largest such j (the narrowest interval). It assumes
// independent draws of one continuous distribution and nothing about its shape. ok is false
// when no pair reaches the confidence (fewer than 6 values at 0.95): the caller reports the
// sample as too small. Estimate is the median (Percentile 0.5).
func MedianInterval(xs []float64, confidence float64) (Interval, bool) {
	n := len(xs)
	out := Interval{Confidence: confidence, Samples: n, Estimate: math.NaN(), Low: math.NaN(), High: math.NaN()}
	if n == 0 {
		return out, false
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	out.Estimate = Percentile(s, 0.5)
	// cdf accumulates P(B <= k) for k = 0, 1, ...; the coverage of j is 1 - 2 P(B <= j-1).
	best := 0
	cdf := 0.0
	logHalfN := float64(n) * math.Log(0.5)
	for j := 1; 2*j <= n+1; j++ {
		k := j - 1
		lg, _ := math.Lgamma(float64(n + 1))
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		cdf += math.Exp(lg - lk - lnk + logHalfN)
		if 1-2*cdf >= confidence-1e-12 {
			best = j
		} else {
			break
		}
	}
	if best == 0 {
		return out, false
	}
	out.Low, out.High = s[best-1], s[n-best]
	return out, true
}
