package metric

import (
	"math"

	"github.com/qualkit/qualkit/schemas/contract"
)

// RateConfidence is the probability of the range RateRange states.
const RateConfidence = 0.95

// RateRange is the central RateConfidence range of the achieved rate (n − 1) / span of n arrivals
// of the seeded process rate declares, with offered rate λ: the span of n arrivals is the sum of
// n − 1 gaps, Gamma(n − 1, 1/λ) for Poisson and Gamma((n − 1)·k, 1/(k·λ)) for gamma gaps of shape
// k, and exactly (n − 1)/λ for constant gaps (lo = hi = λ). ok is false for fewer than 2 arrivals
// or no rate. It tells a reader whether "offered 2/s, achieved 3.669/s" is the draw of 16
// arrivals or a client that did not keep its schedule.
func RateRange(rate *contract.Rate, n int) (lo, hi float64, ok bool) {
	if rate == nil || n < 2 || !(rate.RequestsPerSecond > 0) {
		return 0, 0, false
	}
	lambda, m := rate.RequestsPerSecond, float64(n-1)
	shape, scale := m, 1/lambda
	switch rate.Mode {
	case contract.RateModePoisson:
	case contract.RateModeGamma:
		if rate.Burstiness == nil || !(*rate.Burstiness > 0) {
			return 0, 0, false
		}
		k := *rate.Burstiness
		shape, scale = m*k, 1/(k*lambda)
	default:
		return lambda, lambda, true
	}
	a := (1 - RateConfidence) / 2
	sLo, sHi := GammaQuantile(shape, a)*scale, GammaQuantile(shape, 1-a)*scale
	return m / sHi, m / sLo, true
}

// GammaQuantile is the p-quantile of Gamma(shape a, scale 1): the x with P(a, x) = p for the
// regularized lower incomplete gamma P, by bisection to a relative 1e-12.
func GammaQuantile(a, p float64) float64 {
	lo, hi := 0.0, max(1.0, a)
	for GammaP(a, hi) < p {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if GammaP(a, mid) < p {
			lo = mid
		} else {
			hi = mid
		}
		if hi-lo <= 1e-12*hi {
			break
		}
	}
	return (lo + hi) / 2
}

// GammaP is the regularized lower incomplete gamma function P(a, x): its series for x < a + 1,
// else 1 − its Legendre continued fraction (modified Lentz), each to 1e-15.
func GammaP(a, x float64) float64 {
	if x <= 0 {
		return 0
	}
	lg, _ := math.Lgamma(a)
	front := math.Exp(-x + a*math.Log(x) - lg)
	if x < a+1 {
		sum, term := 1/a, 1/a
		for n := 1; n < 100000; n++ {
			term *= x / (a + float64(n))
			sum += term
			if math.Abs(term) < math.Abs(sum)*1e-15 {
				break
			}
		}
		return min(1, sum*front)
	}
	const tiny = 1e-300
	b := x + 1 - a
	c, d := 1/tiny, 1/b
	h := d
	for i := 1; i < 100000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-15 {
			break
		}
	}
	return max(0, 1-front*h)
}
