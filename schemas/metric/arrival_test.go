package metric

import (
	"math"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// gapMoments returns the mean and coefficient of variation of n gaps of rate.
func gapMoments(rate *contract.Rate, n int, seed int64) (mean, cv float64) {
	offs := Arrivals(rate, n+1, seed, 4, 0)
	var sum, sq float64
	for i := 1; i <= n; i++ {
		g := float64(offs[i]-offs[i-1]) / 1e9
		sum += g
		sq += g * g
	}
	mean = sum / float64(n)
	sd := math.Sqrt(sq/float64(n) - mean*mean)
	return mean, sd / mean
}

// TestGammaMoments draws 100,000 gaps for burstiness 0.5, 1 and 4 at 50 requests/s and checks
// their mean against 1/rate within 2.5 % (over 5 standard errors even at k = 0.5, where the
// standard error of the mean is 1.41/√100000 = 0.45 %) and their coefficient of variation
// against 1/√k within 3 % (the standard error of the CV is about 0.6 % at k = 0.5, where the
// gamma's excess kurtosis 6/k is largest). Poisson (exponential gaps) and constant rows are
// checked the same way: Poisson's CV is 1, constant's 0.
func TestGammaMoments(t *testing.T) {
	const n, rps = 100000, 50.0
	f := func(v float64) *float64 { return &v }
	cases := []struct {
		name   string
		rate   contract.Rate
		wantCV float64
	}{
		{"gamma-0.5", contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: rps, Burstiness: f(0.5)}, math.Sqrt(2)},
		{"gamma-1", contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: rps, Burstiness: f(1)}, 1},
		{"gamma-4", contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: rps, Burstiness: f(4)}, 0.5},
		{"poisson", contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: rps}, 1},
	}
	for _, tc := range cases {
		for _, seed := range []int64{1, 20261202} {
			mean, cv := gapMoments(&tc.rate, n, seed)
			if math.Abs(mean*rps-1) > 0.025 {
				t.Errorf("%s seed %d: mean gap %.6f s, want 1/rate = %.6f s within 2.5 %%", tc.name, seed, mean, 1/rps)
			}
			if math.Abs(cv/tc.wantCV-1) > 0.03 {
				t.Errorf("%s seed %d: coefficient of variation %.4f, want %.4f within 3 %%", tc.name, seed, cv, tc.wantCV)
			}
		}
	}
	mean, cv := gapMoments(&contract.Rate{Mode: contract.RateModeConstant, RequestsPerSecond: rps}, n, 1)
	if math.Abs(mean*rps-1) > 1e-6 || cv > 1e-3 {
		t.Errorf("constant: mean %.9f s, CV %.6f; want 1/rate exactly and CV 0", mean, cv)
	}
}

// TestArrivalsSeeded: the same seed and row give the same schedule, another row or seed another;
// the first arrival is at 0; and the Poisson schedule is the one recorded before gamma existed
// (the first gaps of seed 7, row c1-r0, at 4 requests/s), so old evidence recomputes.
func TestArrivalsSeeded(t *testing.T) {
	k := 0.5
	g := &contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: 100, Burstiness: &k}
	a, b := Arrivals(g, 50, 7, 1, 0), Arrivals(g, 50, 7, 1, 0)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("arrival %d: %d then %d from the same seed", i, a[i], b[i])
		}
	}
	if a[0] != 0 {
		t.Errorf("first arrival at %d ns, want 0", a[0])
	}
	if c := Arrivals(g, 50, 7, 1, 1); c[10] == a[10] {
		t.Errorf("repetition 1 repeats repetition 0's schedule")
	}
	if c := Arrivals(g, 50, 8, 1, 0); c[10] == a[10] {
		t.Errorf("seed 8 repeats seed 7's schedule")
	}
	// Poisson, recomputed by hand: u = ((x >> 11) + 1) / 2^53 for SplitMix64 outputs x.
	p := &contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: 4}
	rng := SplitMix64{State: uint64(7) ^ uint64(1)<<32 ^ 0x51574B4152524956}
	want, tt := []int64{0}, 0.0
	for range 4 {
		tt += -math.Log(float64(rng.Next()>>11+1)/(1<<53)) / 4
		want = append(want, int64(tt*1e9))
	}
	got := Arrivals(p, 5, 7, 1, 0)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("poisson arrival %d: %d ns, want %d", i, got[i], want[i])
		}
	}
}
