package metric

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// The statistics of a significance-aware comparison (docs/metrics.md "Statistics"), modelled on
// golang.org/x/perf/benchmath (benchstat): a Mann-Whitney U test of the per-request samples of
// both sides, the Hodges-Lehmann estimate of the shift between them with its distribution-free
// confidence interval, and a seeded percentile bootstrap interval for a quantile of one sample.
// No dependency: these are a few dozen lines each, and the reference values they are tested
// against come from SciPy and R documentation examples and from testdata/significance_reference.py
// (exact enumeration in plain Python).

// MinSamplesSignificance is the fewest samples on each side for which a statistical comparison
// rule is evaluated; with fewer it is refused. With 20 per side the normal approximation of the
// two-sided Mann-Whitney test reaches p = 7e-8 for fully separated samples, so a 0.95 or 0.99
// confidence is attainable with room to spare (with 3 per side no p-value below 0.1 exists), and
// it stays within 0.004 of the exact p-value (SciPy, simulated samples of 20).
const MinSamplesSignificance = 20

// Test names as a comparison reports them.
const (
	MannWhitneyExact  = "mann-whitney-u exact"
	MannWhitneyNormal = "mann-whitney-u normal approximation, tie and continuity corrected"
	// The exact method is used when there are no ties, the smaller sample has at most
	// mannWhitneyExactMax values (SciPy's method="auto") and the product of the sizes is at most
	// mannWhitneyExactPairs (a bound on the distribution's size; SciPy has none).
	mannWhitneyExactMax   = 8
	mannWhitneyExactPairs = 1 << 20
)

// MannWhitney is the outcome of a two-sided Mann-Whitney U test of x against y.
type MannWhitney struct {
	// U is the statistic of x: the number of pairs (x_i, y_j) with x_i > y_j, ties counting one
	// half (SciPy's U1).
	U float64
	// P is the two-sided p-value: the probability, were both samples drawn from one continuous
	// distribution, of a U at least as far from n_x n_y / 2 as the one observed.
	P float64
	// Exact is true when P comes from the exact null distribution of U, false when it comes from
	// the normal approximation.
	Exact bool
	// Ties is true when a value occurs more than once in the pooled sample.
	Ties bool
}

// Test names the method that computed P.
func (m MannWhitney) Test() string {
	if m.Exact {
		return MannWhitneyExact
	}
	return MannWhitneyNormal
}

// MannWhitneyU tests x against y, two-sided, as SciPy's mannwhitneyu(x, y, method="auto",
// use_continuity=True) does: exact when there are no ties and the smaller sample has at most 8
// values (and n_x n_y <= 2^20); otherwise the normal approximation with mean n_x n_y / 2, the tie-corrected variance
// n_x n_y / 12 ((n+1) - sum(t^3 - t) / (n (n-1))) and a continuity correction of one half. A
// pooled sample of identical values (zero variance) has P = 1. Both samples must be non-empty;
// otherwise P is NaN.
func MannWhitneyU(x, y []float64) MannWhitney {
	nx, ny := len(x), len(y)
	if nx == 0 || ny == 0 {
		return MannWhitney{U: math.NaN(), P: math.NaN()}
	}
	ranks, tieTerm := midranks(x, y)
	rx := 0.0
	for _, r := range ranks[:nx] {
		rx += r
	}
	u := rx - float64(nx*(nx+1))/2
	out := MannWhitney{U: u, Ties: tieTerm > 0}
	n1, n2 := float64(nx), float64(ny)
	far := math.Max(u, n1*n2-u) // the larger of U_x and U_y: the tail it lies in
	if useExact(nx, ny, out.Ties) {
		out.Exact = true
		out.P = math.Min(1, 2*exactUAtLeast(nx, ny, int(math.Round(far))))
		return out
	}
	n := n1 + n2
	sigma := math.Sqrt(n1 * n2 / 12 * ((n + 1) - tieTerm/(n*(n-1))))
	z := (far - n1*n2/2 - 0.5) / sigma
	if sigma == 0 {
		z = math.Inf(-1)
	}
	out.P = math.Min(1, math.Erfc(z/math.Sqrt2)) // 2 (1 - Phi(z))
	return out
}

// midranks ranks the pooled sample x then y (ties get the mean of their ranks, from 1) and
// returns the ranks in that order with the tie term sum(t^3 - t) over the tie groups.
func midranks(x, y []float64) ([]float64, float64) {
	n := len(x) + len(y)
	idx := make([]int, n)
	val := func(i int) float64 {
		if i < len(x) {
			return x[i]
		}
		return y[i-len(x)]
	}
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		va, vb := val(a), val(b)
		switch {
		case va < vb:
			return -1
		case va > vb:
			return 1
		}
		return 0
	})
	ranks := make([]float64, n)
	tie := 0.0
	for i := 0; i < n; {
		j := i
		for j+1 < n && val(idx[j+1]) == val(idx[i]) {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[idx[k]] = r
		}
		if t := float64(j - i + 1); t > 1 {
			tie += t*t*t - t
		}
		i = j + 1
	}
	return ranks, tie
}

// useExact says whether the exact null distribution of U is used for samples of nx and ny.
func useExact(nx, ny int, ties bool) bool {
	return !ties && min(nx, ny) <= mannWhitneyExactMax && nx*ny <= mannWhitneyExactPairs
}

// uDistribution is the exact null distribution of U for samples of nx and ny values without
// ties: entry k is P(U = k), k = 0 .. nx ny. The number of arrangements with U = k is the
// coefficient of q^k in the Gaussian binomial coefficient [nx+ny choose m]_q, m = min(nx, ny),
// the product over i = 1..m of (1 - q^(n+i)) / (1 - q^i) with n the larger size (Mann and
// Whitney 1947): O(m^2 n) operations on nx ny + 1 float64 coefficients. The lower half, which the
// p-values and intervals read (the distribution is symmetric), has no cancellation.
func uDistribution(nx, ny int) []float64 {
	m, n := min(nx, ny), max(nx, ny)
	c := make([]float64, m*n+1)
	c[0] = 1
	for i := 1; i <= m; i++ {
		// multiply by (1 - q^(n+i)), then divide by (1 - q^i); the partial product is
		// [n+i choose i]_q, of degree i n.
		for k := i * n; k >= n+i; k-- {
			c[k] -= c[k-n-i]
		}
		for k := i; k <= i*n; k++ {
			c[k] += c[k-i]
		}
	}
	total := 0.0
	for _, v := range c {
		total += v
	}
	for k := range c {
		c[k] /= total
	}
	return c
}

// exactUAtLeast is P(U >= k) under the exact null distribution.
func exactUAtLeast(nx, ny, k int) float64 {
	d := uDistribution(nx, ny)
	p := 0.0
	// P(U >= k) = P(U <= nx ny - k) by symmetry: the lower tail, summed from its small end.
	for i := 0; i <= len(d)-1-k && i < len(d); i++ {
		p += d[i]
	}
	return p
}

// Shift is the Hodges-Lehmann estimate of the shift from x to y with its confidence interval.
type Shift struct {
	// Estimate is the median of the n_x n_y differences y_j - x_i.
	Estimate float64
	// Low and High bound the interval: order statistics k and n_x n_y + 1 - k of the sorted
	// differences.
	Low, High float64
	// Confidence is the interval's coverage: exactly 1 - 2 P(U <= k-1) for the exact method, the
	// normal approximation of it otherwise; below the requested confidence only when even the
	// widest interval (the smallest and largest difference) cannot reach it.
	Confidence float64
	// Exact is true when k comes from the exact null distribution of U.
	Exact bool
}

// HodgesLehmann estimates the shift from x to y (positive when y is larger) and its two-sided
// distribution-free confidence interval at the given confidence (0 < confidence < 1), by
// inverting the Mann-Whitney test (Lehmann 1975; R's wilcox.test(y, x, conf.int = TRUE) for the
// exact case, Hollander and Wolfe's order-statistic form of its normal approximation otherwise):
// k is the largest integer >= 1 with 2 P(U <= k-1) <= 1 - confidence, and the interval is
// [D_(k), D_(N+1-k)] of the N sorted differences. The method is exact under the same rule as
// MannWhitneyU; otherwise k = floor(N/2 + 1/2 - z sigma) with z the normal quantile at
// (1 + confidence) / 2 and sigma the tie-corrected standard deviation of U. The interval
// assumes the two distributions differ only by a shift. Both samples must be non-empty.
func HodgesLehmann(x, y []float64, confidence float64) Shift {
	nx, ny := len(x), len(y)
	if nx == 0 || ny == 0 {
		nan := math.NaN()
		return Shift{nan, nan, nan, nan, false}
	}
	d := newDifferences(x, y)
	n := nx * ny
	// The median as Percentile computes it over the sorted differences (type 7 at 0.5).
	h := float64(n-1) * 0.5
	lo := int(math.Floor(h))
	med := d.order(lo + 1)
	if lo+1 < n {
		med += (h - float64(lo)) * (d.order(lo+2) - med)
	}
	out := Shift{Estimate: med}
	alpha := 1 - confidence
	_, tieTerm := midranks(x, y)
	k := 1
	if useExact(nx, ny, tieTerm > 0) {
		out.Exact = true
		dist := uDistribution(nx, ny)
		below := dist[0] // P(U <= k-1)
		for k+1 <= (n+1)/2 && 2*(below+dist[k]) <= alpha {
			below += dist[k]
			k++
		}
		out.Confidence = 1 - 2*below
	} else {
		n1, n2 := float64(nx), float64(ny)
		nn := n1 + n2
		sigma := math.Sqrt(n1 * n2 / 12 * ((nn + 1) - tieTerm/(nn*(nn-1))))
		z := NormalQuantile(1 - alpha/2)
		k = min(max(1, int(math.Floor(float64(n)/2+0.5-z*sigma))), (n+1)/2)
		out.Confidence = 1 - math.Erfc(-((float64(k-1)+0.5-float64(n)/2)/sigma)/math.Sqrt2)
		if sigma == 0 {
			out.Confidence = 1
		}
	}
	out.Low, out.High = d.order(k), d.order(n+1-k)
	return out
}

// differences are the n_x n_y differences y_j - x_i, never materialised: order(k) finds the k-th
// smallest by bisection over the float64 values (at most 64 steps), counting the differences at
// or below a value in O(n_x + n_y) over the sorted samples (subtraction is monotone under
// rounding, so the count is exact).
type differences struct{ x, y []float64 }

func newDifferences(x, y []float64) differences {
	sx, sy := slices.Clone(x), slices.Clone(y)
	slices.Sort(sx)
	slices.Sort(sy)
	return differences{sx, sy}
}

// atMost counts the differences y_j - x_i <= t.
func (d differences) atMost(t float64) int {
	count, j := 0, 0
	// For x_i ascending, the y_j with y_j - x_i <= t form a growing prefix of y.
	for i := range d.x {
		for j < len(d.y) && d.y[j]-d.x[i] <= t {
			j++
		}
		count += j
	}
	return count
}

// order returns the k-th smallest difference (1 <= k <= n_x n_y).
func (d differences) order(k int) float64 {
	lo, hi := d.y[0]-d.x[len(d.x)-1], d.y[len(d.y)-1]-d.x[0] // the smallest and largest
	if d.atMost(lo) >= k {
		return lo
	}
	// Invariant: atMost(lo) < k <= atMost(hi); bisect on the ordered bit patterns.
	for {
		a, b := orderedBits(lo), orderedBits(hi)
		if b-a <= 1 {
			return hi
		}
		mid := fromOrderedBits(a + (b-a)/2)
		if d.atMost(mid) >= k {
			hi = mid
		} else {
			lo = mid
		}
	}
}

// orderedBits maps a float64 to a uint64 with the same order (negative values below positive).
func orderedBits(f float64) uint64 {
	b := math.Float64bits(f)
	if b>>63 == 1 {
		return ^b
	}
	return b | 1<<63
}

func fromOrderedBits(u uint64) float64 {
	if u>>63 == 1 {
		return math.Float64frombits(u &^ (1 << 63))
	}
	return math.Float64frombits(^u)
}

// NormalQuantile is the p-quantile of the standard normal distribution (0 < p < 1).
func NormalQuantile(p float64) float64 { return math.Sqrt2 * math.Erfinv(2*p-1) }

// Interval is a confidence interval for a statistic of a sample.
type Interval struct {
	Estimate, Low, High float64
	Confidence          float64
	Samples             int
}

// BootstrapQuantile is the percentile bootstrap interval for the q-quantile (Hyndman-Fan type 7,
// as Percentile) of xs: it draws resamples resamples of len(xs) values with replacement from a
// PCG generator seeded with seed (math/rand/v2's PCG(seed, seed); an index is the high word of
// the 128-bit product of a 64-bit draw and len(xs)), takes the quantile of each, and returns
// the (1-confidence)/2 and (1+confidence)/2 quantiles of those (Efron and Tibshirani 1993, ch.
// 13). The same inputs and seed give the same interval on every platform. It assumes the
// samples are independent draws from one distribution; for a tail quantile of a small sample
// the interval is too narrow (every resample's p99 of 50 values is one of the two largest), so
// a caller reports a tail quantile's interval only with at least MinSamplesQuantile(q) samples.
// NaN for an empty sample.
func BootstrapQuantile(xs []float64, q, confidence float64, resamples int, seed uint64) Interval {
	n := len(xs)
	out := Interval{Confidence: confidence, Samples: n}
	if n == 0 || resamples < 1 {
		out.Estimate, out.Low, out.High = math.NaN(), math.NaN(), math.NaN()
		return out
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	out.Estimate = Percentile(s, q)
	src := rand.NewPCG(seed, seed)
	stats := make([]float64, resamples)
	counts := make([]int, n) // a resample as the multiplicity of each sorted value: O(n), no sort
	h := float64(n-1) * q
	lo := min(max(int(math.Floor(h)), 0), n-1)
	for b := range stats {
		clear(counts)
		for range n {
			i, _ := bits.Mul64(src.Uint64(), uint64(n))
			counts[i]++
		}
		// The resample's sorted values at ranks lo and lo+1 (0-based), then Percentile's formula.
		var a, c float64
		seen, found := 0, 0
		for i, k := range counts {
			for ; k > 0 && found < 2; k-- {
				if seen == lo {
					a, found = s[i], 1
				}
				if seen == lo+1 {
					c, found = s[i], 2
				}
				seen++
			}
			if found == 2 || (found == 1 && lo >= n-1) {
				break
			}
		}
		if lo >= n-1 {
			stats[b] = a
		} else {
			stats[b] = a + (h-float64(lo))*(c-a)
		}
	}
	slices.Sort(stats)
	out.Low = Percentile(stats, (1-confidence)/2)
	out.High = Percentile(stats, (1+confidence)/2)
	return out
}

// MinSamplesQuantile is the fewest samples for which an interval of the q-quantile is
// reported: enough that at least 10 samples lie above it (10 / (1 - q): 20 for a median, 100 for
// a p90, 1000 for a p99), so that resamples do not all share the same few extreme values.
func MinSamplesQuantile(q float64) int {
	if q >= 1 {
		return math.MaxInt
	}
	return int(math.Ceil(10/(1-q) - 1e-9))
}

// PerRequest returns the per-request samples of a distribution formula (ttft.v1, e2e.v1, ...) from
// a row's samples: the values a statistical comparison tests. False for a formula that is not a
// per-request distribution (a throughput or count has one value per row).
func PerRequest(formula string, s Samples) ([]float64, bool) {
	switch formula {
	case TTFT:
		return s.TTFTMs, true
	case TTFTSched:
		return s.TTFTSchedMs, true
	case TTFB:
		return s.TTFBMs, true
	case E2E:
		return s.E2EMs, true
	case E2ESched:
		return s.E2ESchedMs, true
	case TPOT:
		return s.TPOTMs, true
	case DecodeRate:
		return s.DecodeRate, true
	case ICL:
		return s.ICLMs, true
	case ICLMax:
		return s.ICLMaxMs, true
	case ChunkingFactor:
		return s.ChunkingFactor, true
	case ScheduleLag:
		return s.ScheduleLagMs, true
	}
	return nil, false
}

// HasPerRequest reports whether PerRequest knows the formula.
func HasPerRequest(formula string) bool {
	_, ok := PerRequest(formula, Samples{})
	return ok
}

// QuantileOf is the probability of a percentile aggregation (p50 is 0.5, p99.9 is 0.999); false
// for another aggregation.
func QuantileOf(a contract.Aggregation) (float64, bool) {
	switch a {
	case contract.AggregationP50:
		return 0.5, true
	case contract.AggregationP90:
		return 0.9, true
	case contract.AggregationP95:
		return 0.95, true
	case contract.AggregationP99:
		return 0.99, true
	case contract.AggregationP99_9:
		return 0.999, true
	}
	return 0, false
}

// Bootstrap settings of the intervals a comparison reports: fixed, so that the same evidence
// gives the same interval.
const (
	BootstrapResamples = 2000
	BootstrapSeed      = 21
)
