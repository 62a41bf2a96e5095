package metric

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// CapacityProbe is one probe of a capacity search: the concurrency it ran at and its row's
// slo_good_fraction.
type CapacityProbe struct {
	Concurrency  int64
	GoodFraction float64
}

// CapacityPasses is the search's decision for one probe: its slo_good_fraction is at least the
// declared min_good_fraction (a row without the metric, one with no measured request, passes
// nothing: the caller gives it 0).
func CapacityPasses(goodFraction, minGoodFraction float64) bool {
	return goodFraction >= minGoodFraction
}

// CapacityStep is what the search does after the probes so far: run Next, or stop (Done) for
// Ended. LastPassing is the highest passing probe and FirstFailing the lowest failing one (0 when
// none).
type CapacityStep struct {
	Next                      int64
	Done                      bool
	Ended                     contract.CapacityEnded
	LastPassing, FirstFailing int64
}

// CapacityNext is the capacity search (docs/metrics.md "Capacity search"), one step at a time:
// a pure function of the declaration, the first probe and the probes so far, so that a verifier
// replays every decision from the rows. While every probe passed, the next probe is the last one
// times growth, capped at max; the search ends (max_passed) when the probe at max passed. Once a
// probe failed it bisects: the next probe is lo + (hi - lo) / 2 (integer division) between the
// highest passing probe lo (0 when none) and the lowest failing one hi, and it ends (resolution)
// once hi - lo <= resolution. Either way it ends (max_steps) after max_steps probes. It assumes
// the good fraction does not rise with concurrency; where it does, the search still ends and its
// answer is the highest passing probe it saw below the lowest failing one.
func CapacityNext(spec contract.CapacitySearch, start int64, probes []CapacityProbe) CapacityStep {
	var st CapacityStep
	for _, p := range probes {
		if CapacityPasses(p.GoodFraction, spec.MinGoodFraction) {
			st.LastPassing = max(st.LastPassing, p.Concurrency)
		} else if st.FirstFailing == 0 || p.Concurrency < st.FirstFailing {
			st.FirstFailing = p.Concurrency
		}
	}
	if st.FirstFailing != 0 && st.LastPassing > st.FirstFailing {
		// Not monotonic: the answer stays below the lowest failing probe.
		st.LastPassing = 0
		for _, p := range probes {
			if CapacityPasses(p.GoodFraction, spec.MinGoodFraction) && p.Concurrency < st.FirstFailing {
				st.LastPassing = max(st.LastPassing, p.Concurrency)
			}
		}
	}
	switch {
	case len(probes) == 0:
		st.Next = min(start, spec.Max)
		return st
	case st.FirstFailing == 0 && st.LastPassing >= spec.Max:
		st.Done, st.Ended = true, contract.CapacityEndedMaxPassed
		return st
	case st.FirstFailing != 0 && st.FirstFailing-st.LastPassing <= spec.Resolution:
		st.Done, st.Ended = true, contract.CapacityEndedResolution
		return st
	case int64(len(probes)) >= spec.MaxSteps:
		st.Done, st.Ended = true, contract.CapacityEndedMaxSteps
		return st
	case st.FirstFailing == 0:
		st.Next = min(st.LastPassing*spec.Growth, spec.Max)
	default:
		st.Next = st.LastPassing + (st.FirstFailing-st.LastPassing)/2
	}
	return st
}

// Capacity replays the search over the probes as they ran and returns its outcome (the case
// result's capacity object). An error says where the probes depart from the search: a probe
// that is not the one the search would have run next, or probes after it ended, or too few.
func Capacity(spec contract.CapacitySearch, start int64, probes []CapacityProbe) (contract.Capacity, error) {
	out := contract.Capacity{Over: contract.CapacityOver, MinGoodFraction: spec.MinGoodFraction, Probes: []contract.CapacityProbe{}}
	for i := 0; ; i++ {
		st := CapacityNext(spec, start, probes[:i])
		if st.Done {
			if i < len(probes) {
				return out, fmt.Errorf("probe %d (concurrency %d) runs after the search ended (%s)", i, probes[i].Concurrency, st.Ended)
			}
			out.Ended = st.Ended
			if st.LastPassing > 0 {
				lp := st.LastPassing
				capacity := lp
				out.LastPassing, out.Capacity = &lp, &capacity
			}
			if st.FirstFailing > 0 {
				ff := st.FirstFailing
				out.FirstFailing = &ff
			}
			return out, nil
		}
		if i >= len(probes) {
			return out, fmt.Errorf("the search ran %d probes and had not ended: it would run concurrency %d next", i, st.Next)
		}
		if probes[i].Concurrency != st.Next {
			return out, fmt.Errorf("probe %d ran concurrency %d, the search's next probe is %d", i, probes[i].Concurrency, st.Next)
		}
		out.Probes = append(out.Probes, contract.CapacityProbe{Concurrency: probes[i].Concurrency, GoodFraction: probes[i].GoodFraction,
			Passed: CapacityPasses(probes[i].GoodFraction, spec.MinGoodFraction)})
	}
}

// GoodFractionOf is a row's recorded slo_good_fraction, 0 when the row has none (no measured
// request, or no SLO): the value a capacity probe is decided on.
func GoodFractionOf(ms []contract.Metric) float64 {
	v, _ := metricValue(ms, mustLookup(SLOGoodFraction).Name)
	return v
}
