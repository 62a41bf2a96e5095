package metric

import (
	"math"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Arrival processes of an open-loop row (docs/metrics.md "Arrival processes"). The runner
// schedules with Arrivals and the verifier recomputes the schedule with it from the workload's
// seed, so the generator exists once.

// arrivalSalt separates the arrival stream from the other streams drawn from the workload seed.
const arrivalSalt = 0x51574B4152524956

// Arrivals returns the scheduled offsets (ns from the row's first arrival) of n open-loop
// arrivals of rate for the row (concurrency c, repetition rep) of a workload seeded with seed.
// Arrival 0 is at 0. Arrival i > 0 is at i / rate (constant), or at the sum of i gaps drawn from
// one SplitMix64 stream seeded with seed ⊕ (c ≪ 32) ⊕ rep ⊕ 0x51574B4152524956: exponential gaps
// −ln(u)/rate (poisson), or gamma gaps of shape k = burstiness and scale 1/(k·rate) (gamma; mean
// 1/rate, coefficient of variation 1/√k), see GammaGap. Each offset is the float sum in seconds
// times 10⁹, truncated to whole nanoseconds. nil when rate is nil or n < 1.
func Arrivals(rate *contract.Rate, n int, seed, c, rep int64) []int64 {
	if rate == nil || n < 1 {
		return nil
	}
	out := make([]int64, n)
	rng := SplitMix64{State: uint64(seed) ^ uint64(c)<<32 ^ uint64(rep) ^ arrivalSalt}
	k := 0.0
	if rate.Burstiness != nil {
		k = *rate.Burstiness
	}
	t := 0.0
	for i := range n {
		if i > 0 {
			switch rate.Mode {
			case contract.RateModePoisson:
				t += -math.Log(rng.Unit()) / rate.RequestsPerSecond
			case contract.RateModeGamma:
				t += GammaGap(&rng, k, rate.RequestsPerSecond)
			default:
				t = float64(i) / rate.RequestsPerSecond
			}
		}
		out[i] = int64(t * 1e9)
	}
	return out
}

// GammaGap draws one inter-arrival gap in seconds of shape k and mean 1/rate: a Gamma(k, 1)
// variate times 1/(k·rate). The Gamma(k, 1) variate is Marsaglia and Tsang's (2000) for k ≥ 1:
// with d = k − 1/3 and c = 1/√(9d), draw a standard normal x (below) until v = (1 + c·x)³ > 0
// and, for a fresh u, ln u < x²/2 + d − d·v + d·ln v; the variate is d·v. For k < 1 it is a
// Gamma(k + 1, 1) variate so drawn times u^(1/k) for one more u. The standard normal is
// Box-Muller's √(−2 ln u₁)·cos(2π u₂) from two successive units u₁, u₂ (the sine half is
// discarded). Units are SplitMix64.Unit, in (0, 1].
func GammaGap(rng *SplitMix64, k, rate float64) float64 {
	return gammaVariate(rng, k) / (k * rate)
}

func gammaVariate(rng *SplitMix64, k float64) float64 {
	if k < 1 {
		g := gammaVariate(rng, k+1)
		return g * math.Pow(rng.Unit(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := math.Sqrt(-2*math.Log(rng.Unit())) * math.Cos(2*math.Pi*rng.Unit())
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		if math.Log(rng.Unit()) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// SplitMix64 is the SplitMix64 generator (Steele, Lea and Flood 2014): State advances by
// 0x9E3779B97F4A7C15 and each output is the mixed state.
type SplitMix64 struct{ State uint64 }

// Next returns the next output.
func (s *SplitMix64) Next() uint64 {
	s.State += 0x9E3779B97F4A7C15
	z := s.State
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
	z = (z ^ (z >> 27)) * 0x94D049BB133111EB
	return z ^ (z >> 31)
}

// Unit returns a float in (0, 1]: ((Next ≫ 11) + 1) / 2⁵³.
func (s *SplitMix64) Unit() float64 {
	return float64(s.Next()>>11+1) / (1 << 53)
}
