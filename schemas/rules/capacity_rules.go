package rules

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// capacityCase checks a serving case's capacity_search and pareto declarations: a search probes
// closed-loop concurrency from the case's single concurrency value (at most max), one repetition
// per probe, against an SLO with a gate; a Pareto latency is a percentile of a lower-is-better row
// distribution.
func (r *rules) capacityCase(cb string, c contract.Case) {
	if s := c.CapacitySearch; s != nil {
		b := cb + "/capacity_search"
		if len(c.Concurrency) != 1 {
			r.add(cb+"/concurrency", "a capacity search declares one concurrency, its first probe (have %d)", len(c.Concurrency))
		} else if c.Concurrency[0] > s.Max {
			r.add(cb+"/concurrency/0", "the first probe %d is above capacity_search.max %d", c.Concurrency[0], s.Max)
		}
		if c.Repetitions != 1 {
			r.add(cb+"/repetitions", "a capacity search runs each probe once (repetitions 1, have %d)", c.Repetitions)
		}
		if c.Rate != nil {
			r.add(cb+"/rate", "a capacity search probes closed-loop concurrency; remove rate")
		}
		if c.SLO == nil || (c.SLO.TTFTMs <= 0 && c.SLO.ICLMs <= 0 && c.SLO.E2EMs <= 0) {
			r.add(cb+"/slo", "a capacity search needs an SLO gate (ttft_ms, icl_ms or e2e_ms)")
		}
		if s.Resolution >= s.Max && s.Max > 1 {
			r.add(b+"/resolution", "resolution %d is not below max %d: the search could not bisect", s.Resolution, s.Max)
		}
	}
	if p := c.Pareto; p != nil && !metric.ParetoLatencyOK(p.Latency) {
		r.add(cb+"/pareto/latency", "%q is not a percentile of a lower-is-better row distribution (for example ttft_ms.p99)", p.Latency)
	}
}
