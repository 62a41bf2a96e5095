package verify

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/compare"
)

// ramp returns n samples from base in steps of step, rotated so the order carries no signal.
func ramp(n int, base, step float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = base + float64((i*7)%n)*step
	}
	return out
}

// TestDecideStatistical: the decision of a not_worse_significantly rule on samples: identical
// samples are no change; a clear shift in the worse direction fails; the same shift in the better
// direction, or one smaller than the minimum effect, passes; higher_is_better flips what is worse.
func TestDecideStatistical(t *testing.T) {
	base := ramp(40, 20, 0.25)       // 20 .. 29.75 ms
	slower := ramp(40, 24, 0.25)     // shifted by +4 ms
	faster := ramp(40, 16, 0.25)     // shifted by -4 ms
	slightly := ramp(40, 20.1, 0.25) // +0.1 ms: not significant
	for _, tc := range []struct {
		name        string
		b, c        []float64
		dir         contract.Direction
		absolute    float64
		significant bool
		fails       bool
	}{
		{"identical", base, base, contract.DirectionLowerIsBetter, 0, false, false},
		{"tiny shift is noise", base, slightly, contract.DirectionLowerIsBetter, 0, false, false},
		{"slower fails", base, slower, contract.DirectionLowerIsBetter, 0.5, true, true},
		{"slower within the minimum effect", base, slower, contract.DirectionLowerIsBetter, 5, true, false},
		{"faster passes", base, faster, contract.DirectionLowerIsBetter, 0, true, false},
		{"higher is better: larger passes", base, slower, contract.DirectionHigherIsBetter, 0, true, false},
		{"higher is better: smaller fails", base, faster, contract.DirectionHigherIsBetter, 0, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := compare.DecideStatistical(tc.b, tc.c, 0.95, tc.dir, tc.absolute, 0)
			if d.Sig.Significant != tc.significant || d.Fails != tc.fails {
				t.Errorf("significant %v fails %v (p %v, shift %v [%v, %v]), want %v %v", d.Sig.Significant, d.Fails, d.Sig.PValue, d.Sig.Shift, d.Sig.ShiftLow, d.Sig.ShiftHigh, tc.significant, tc.fails)
			}
			if d.Sig.BaselineSamples != 40 || d.Sig.CandidateSamples != 40 || d.Sig.Test != contract.SignificanceTestMannWhitneyUNormal {
				t.Errorf("significance %+v", d.Sig)
			}
		})
	}
	// The minimum effect is max(absolute, |baseline median| x relative).
	if d := compare.DecideStatistical(base, slower, 0.95, contract.DirectionLowerIsBetter, 1, 0.5); d.Sig.MinimumEffect != 0.5*24.875 || d.Fails {
		t.Errorf("relative minimum effect: %+v fails %v", d.Sig, d.Fails)
	}
}

// TestStatisticalIntervals: a percentile rule gets each side's bootstrap interval when the side
// has enough samples for that percentile (20 for p50), and none, with the minimum stated, for p99
// over 40 samples; a mean gets none.
func TestStatisticalIntervals(t *testing.T) {
	b, c := ramp(40, 20, 0.25), ramp(40, 24, 0.25)
	d := compare.DecideStatistical(b, c, 0.95, contract.DirectionLowerIsBetter, 0, 0)
	d.Intervals(contract.AggregationP50, b, c)
	if d.Sig.BaselineInterval == nil || d.Sig.CandidateInterval == nil || *d.Sig.IntervalMinimumSamples != 20 {
		t.Fatalf("p50 of 40: %+v", d.Sig)
	}
	if in := d.Sig.CandidateInterval; in.Low > in.Estimate || in.High < in.Estimate || in.Estimate != 28.875 || in.Seed != 21 {
		t.Errorf("candidate interval %+v", in)
	}
	d = compare.DecideStatistical(b, c, 0.95, contract.DirectionLowerIsBetter, 0, 0)
	d.Intervals(contract.AggregationP99, b, c)
	if d.Sig.BaselineInterval != nil || d.Sig.CandidateInterval != nil || *d.Sig.IntervalMinimumSamples != 1000 {
		t.Errorf("p99 of 40: %+v", d.Sig)
	}
	d = compare.DecideStatistical(b, c, 0.95, contract.DirectionLowerIsBetter, 0, 0)
	d.Intervals(contract.AggregationMean, b, c)
	if d.Sig.BaselineInterval != nil || d.Sig.IntervalMinimumSamples != nil {
		t.Errorf("mean: %+v", d.Sig)
	}
}
