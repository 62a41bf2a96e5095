package metric

import (
	"fmt"
	"math"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Stages and ramps (docs/metrics.md "Stages and ramps"): a scheduled row's arrivals, its
// per-stage numbers and its per-second time series. The runner schedules and reports with these
// functions and the verifier recomputes each of them from the records, so each exists once.

// scheduleSalt separates the schedule's arrival stream from the other streams of the seed.
const scheduleSalt = 0x51574B5354414745

// MaxScheduleArrivals bounds the arrivals of one scheduled row (the most measured requests a row
// may declare).
const MaxScheduleArrivals = 1000000

// MaxSeriesBins bounds a row's per-second series (the contract's bound).
const MaxSeriesBins = 100000

// StageSpan is one stage placed in its schedule: it starts Start seconds after the schedule's
// start and lasts Seconds; Integral is its expected arrivals (∫ rate dt over the stage) and
// Cum the schedule's cumulative integral at its start.
type StageSpan struct {
	Kind           contract.StageKind
	Start, Seconds float64
	From, To       float64 // the rate at the stage's start and end (equal for a hold; 0 for a workers stage)
	Integral, Cum  float64
	// Concurrency is a workers stage's worker count (0 for a rate stage).
	Concurrency int64
}

// Spans places the schedule's stages back to back.
func Spans(s *contract.Schedule) []StageSpan {
	out := make([]StageSpan, len(s.Stages))
	t, cum := 0.0, 0.0
	for i, st := range s.Stages {
		a, b := st.RequestsPerSecond, st.RequestsPerSecond
		if st.Kind == contract.StageKindRamp {
			a, b = deref0(st.RateFrom), deref0(st.RateTo)
		}
		integ := (a + b) / 2 * st.Seconds
		if st.Kind == contract.StageKindWorkers {
			a, b, integ = 0, 0, 0
		}
		out[i] = StageSpan{Kind: st.Kind, Start: t, Seconds: st.Seconds, From: a, To: b, Integral: integ, Cum: cum, Concurrency: st.Concurrency}
		t += st.Seconds
		cum += integ
	}
	return out
}

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// Horizon is the schedule's length in seconds.
func Horizon(s *contract.Schedule) float64 {
	h := 0.0
	for _, st := range s.Stages {
		h += st.Seconds
	}
	return h
}

// ExpectedArrivals is the schedule's total integral ∫ rate dt (the arrival count of a constant
// schedule, rounded up; a Poisson schedule's mean count).
func ExpectedArrivals(s *contract.Schedule) float64 {
	sp := Spans(s)
	if len(sp) == 0 {
		return 0
	}
	l := sp[len(sp)-1]
	return l.Cum + l.Integral
}

// ScheduleArrivals returns the scheduled offsets (ns from the schedule's start) of a scheduled
// row's arrivals, at most limit of them, and the stage of each. With Λ(t) the cumulative rate,
// arrival i is at Λ⁻¹(x_i): the time within the first stage whose cumulative interval
// [Cum, Cum + Integral) holds x_i (a stage of zero rate holds none), τ = y / r in a hold of rate
// r and τ = 2y / (a + √(a² + 2(b − a)y/d)) in a ramp from a to b over d (y = x_i − Cum; the
// root of the ramp's quadratic, stable for a = 0 and a = b). x_i = i (constant) or the sum of i
// unit-mean gaps from one SplitMix64 stream seeded with seed ⊕ (c ≪ 32) ⊕ rep ⊕
// 0x51574B5354414745: exponential −ln u (poisson: a non-homogeneous Poisson process by time
// rescaling) or GammaGap(k = burstiness, rate 1) (gamma). The arrivals end at the first x_i ≥ Λ(horizon). Each offset is the float time in
// seconds times 10⁹, truncated to whole nanoseconds. An error when more than limit arrivals would
// be needed and limit is MaxScheduleArrivals (a plan to refuse); with a smaller limit the
// schedule is cut there (a row's requests cap).
func ScheduleArrivals(s *contract.Schedule, seed, c, rep int64, limit int) (offs []int64, stage []int, err error) {
	if s == nil || len(s.Stages) == 0 {
		return nil, nil, fmt.Errorf("schedule without stages")
	}
	sp := Spans(s)
	total := sp[len(sp)-1].Cum + sp[len(sp)-1].Integral
	rng := SplitMix64{State: uint64(seed) ^ uint64(c)<<32 ^ uint64(rep) ^ scheduleSalt}
	k := 1.0
	if s.Burstiness != nil {
		k = *s.Burstiness
	}
	x, j := 0.0, 0
	for i := 0; ; i++ {
		if i > 0 {
			switch s.Arrival {
			case contract.ScheduleArrivalPoisson:
				x += -math.Log(rng.Unit())
			case contract.ScheduleArrivalGamma:
				x += GammaGap(&rng, k, 1)
			default:
				x = float64(i)
			}
		}
		if x >= total {
			return offs, stage, nil
		}
		if len(offs) >= limit {
			if limit >= MaxScheduleArrivals {
				return nil, nil, fmt.Errorf("schedule needs more than %d arrivals (%g expected)", MaxScheduleArrivals, total)
			}
			return offs, stage, nil
		}
		for j < len(sp)-1 && !(x < sp[j].Cum+sp[j].Integral) {
			j++
		}
		st := sp[j]
		y := max(0, x-st.Cum)
		tau := 0.0
		switch {
		case y == 0:
		case st.Kind == contract.StageKindRamp:
			a, b, d := st.From, st.To, st.Seconds
			tau = 2 * y / (a + math.Sqrt(a*a+2*(b-a)*y/d))
		default:
			tau = y / st.From
		}
		offs = append(offs, int64((st.Start+min(tau, st.Seconds))*1e9))
		stage = append(stage, j)
	}
}

// Closed reports whether a schedule is closed loop (workers stages).
func Closed(s *contract.Schedule) bool {
	return s != nil && s.Arrival == contract.ScheduleArrivalClosed
}

// ActiveWorkers is a closed schedule's worker count elapsed seconds after its start and the
// start of the next stage (the horizon in the last); ok is false at or past the horizon.
func ActiveWorkers(spans []StageSpan, elapsed float64) (workers int64, next float64, ok bool) {
	for _, st := range spans {
		if elapsed < st.Start+st.Seconds {
			return st.Concurrency, st.Start + st.Seconds, true
		}
	}
	return 0, 0, false
}

// StageAt is the stage holding t (ns on the records' clock) of a schedule starting at origin:
// the first stage with t − origin before its end; -1 before origin or at or past the horizon. A
// closed row's request belongs to the stage holding its t_sched (the moment a worker took it),
// and its origin is the row's first measured t_sched.
func StageAt(spans []StageSpan, origin, t int64) int {
	if t < origin {
		return -1
	}
	for k, st := range spans {
		if t-origin < int64((st.Start+st.Seconds)*1e9) {
			return k
		}
	}
	return -1
}

// RowStages computes a scheduled row's stages: for each stage of s, its place and offered rate,
// the arrivals scheduled in it (stageOfArrival: the stage of each arrival, as ScheduleArrivals
// returns it), the measured requests scheduled in it (stageOf[i] is measured[i]'s stage, in
// index order) with their counts and the row formulas over them (Row with spec), and its
// achieved rate: the measured requests sent within [origin + start, origin + start + seconds)
// over its seconds (origin is the schedule's start on the records' clock).
func RowStages(s *contract.Schedule, spec RowSpec, stageOfArrival []int, measured []Request, stageOf []int, origin int64) []contract.RowStage {
	sp := Spans(s)
	out := make([]contract.RowStage, len(sp))
	groups := make([][]Request, len(sp))
	for i := range measured {
		if k := stageOf[i]; k >= 0 && k < len(sp) {
			groups[k] = append(groups[k], measured[i])
		}
	}
	scheduled := make([]int64, len(sp))
	for _, a := range stageOfArrival {
		if a >= 0 && a < len(sp) {
			scheduled[a]++
		}
	}
	for k, st := range sp {
		rs := RowStage(spec, st, groups[k], measured, origin)
		rs.Scheduled = scheduled[k]
		out[k] = rs
	}
	return out
}

// RowStage is one stage's numbers (see RowStages) without its scheduled count; a concurrency
// stage has its concurrency and no offered rate.
func RowStage(spec RowSpec, st StageSpan, in []Request, all []Request, origin int64) contract.RowStage {
	res := Row(spec, in)
	lo := origin + int64(st.Start*1e9)
	hi := origin + int64((st.Start+st.Seconds)*1e9)
	sent := 0
	for i := range all {
		if r := &all[i]; r.HasSend && r.Send >= lo && r.Send < hi {
			sent++
		}
	}
	out := contract.RowStage{
		Kind: contract.RowStageKind(st.Kind), StartSeconds: st.Start, Seconds: st.Seconds,
		Requests: res.Requests, Successes: res.Successes, Failures: res.Failures,
		AchievedRate: float64(sent) / st.Seconds, Metrics: MetricsOf(res.Values),
	}
	if st.Kind == contract.StageKindWorkers {
		c := st.Concurrency
		out.Concurrency = &c
	} else {
		offered := st.Integral / st.Seconds
		out.OfferedRate = &offered
	}
	return out
}

// Series is a row's per-second time series (per_second_series.v1): bin k covers
// [origin + k s, origin + (k+1) s); the bins run from 0 to the last one holding horizonNs (the
// schedule's end) or an event of a measured request. Per bin: the measured arrivals scheduled
// in it (t_sched), those sent in it (t_send), the successes that ended in it (t_end) and the
// failures that ended in it (t_close, else t_end, else t_sched); the time-average in-flight count
// (a request is in flight from t_send to t_close, lacking t_close to t_end, as InFlight counts);
// the p50 and p99 of E2E and the p50 of TTFT over the successes that ended in it (type-7
// percentiles). ok is false when the series would exceed MaxSeriesBins.
func Series(measured []Request, origin, horizonNs int64) (contract.RowSeries, bool) {
	last := max(horizonNs-1, 0)
	for i := range measured {
		r := &measured[i]
		last = max(last, r.Sched-origin)
		for _, t := range [...]struct {
			v   int64
			has bool
		}{{r.Send, r.HasSend}, {r.End, r.HasEnd}, {r.Close, r.HasClose}} {
			if t.has {
				last = max(last, t.v-origin)
			}
		}
	}
	n := last/1e9 + 1
	if n > MaxSeriesBins {
		return contract.RowSeries{}, false
	}
	bin := func(t int64) int64 { return min(max(t-origin, 0)/1e9, n-1) }
	bins := make([]contract.SeriesBin, n)
	area := make([]float64, n)
	e2e := make([][]float64, n)
	ttft := make([][]float64, n)
	for k := range bins {
		bins[k].Second = int64(k)
	}
	for i := range measured {
		r := &measured[i]
		bins[bin(r.Sched)].Scheduled++
		if r.HasSend {
			bins[bin(r.Send)].Sent++
		}
		if r.OK() {
			b := bin(r.End)
			bins[b].Completed++
			e2e[b] = append(e2e[b], r.e2eMs())
			if len(r.Content) > 0 {
				ttft[b] = append(ttft[b], r.ttftMs())
			}
		} else {
			end := r.Sched
			switch {
			case r.HasClose:
				end = r.Close
			case r.HasEnd:
				end = r.End
			}
			bins[bin(end)].Failed++
		}
		end, ok := r.inFlightEnd()
		if !ok {
			continue
		}
		for k := bin(r.Send); k <= bin(end); k++ {
			lo, hi := origin+k*1e9, origin+(k+1)*1e9
			if a, b := max(lo, r.Send), min(hi, end); b > a {
				area[k] += float64(b - a)
			}
		}
	}
	for k := range bins {
		bins[k].InFlightMean = area[k] / 1e9
		if len(e2e[k]) > 0 {
			s := Summarize(e2e[k])
			p50, p99 := s.P50, s.P99
			bins[k].E2EP50Ms, bins[k].E2EP99Ms = &p50, &p99
		}
		if len(ttft[k]) > 0 {
			p := Summarize(ttft[k]).P50
			bins[k].TTFTP50Ms = &p
		}
	}
	return contract.RowSeries{Formula: contract.RowSeriesFormula, Bins: bins}, true
}
