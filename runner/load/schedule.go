package load

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// A case's schedule (stages and ramps, docs/metrics.md "Stages and ramps") makes every row an
// open-loop row whose arrivals metric.ScheduleArrivals places; the row reports its stages
// (metric.RowStages) and its per-second series (metric.Series), which qualverify recomputes.

// checkSchedule refuses a schedule Run cannot execute: one beside a rate or a duration, a stage
// without its rates, or one needing more than metric.MaxScheduleArrivals arrivals.
func (p *Plan) checkSchedule() error {
	c := &p.Case
	sc := c.Schedule
	if sc == nil {
		return nil
	}
	switch {
	case c.Rate != nil:
		return fmt.Errorf("%w: case %s declares both rate and schedule: a schedule's stages declare the rates", ErrPlan, p.CaseID)
	case c.Duration != nil:
		return fmt.Errorf("%w: case %s declares both duration and schedule: a schedule's stages declare its length", ErrPlan, p.CaseID)
	case !sc.Arrival.Valid() || len(sc.Stages) == 0:
		return fmt.Errorf("%w: case %s: schedule arrival %q with %d stages", ErrPlan, p.CaseID, sc.Arrival, len(sc.Stages))
	}
	if badBurstiness(sc.Arrival == contract.ScheduleArrivalGamma, sc.Burstiness) {
		return fmt.Errorf("%w: case %s: schedule arrival %s with burstiness %v: burstiness (0 to 1000) goes with arrival gamma and only there", ErrPlan, p.CaseID, sc.Arrival, fmtPtr(sc.Burstiness))
	}
	closed := metric.Closed(sc)
	for i, st := range sc.Stages {
		bad := !(st.Seconds > 0) || math.IsInf(st.Seconds, 0) || closed != (st.Kind == contract.StageKindWorkers)
		switch st.Kind {
		case contract.StageKindWorkers:
			bad = bad || st.Concurrency < 1 || st.Concurrency > MaxConcurrency || st.RateFrom != nil || st.RateTo != nil || st.RequestsPerSecond != 0
		case contract.StageKindHold:
			bad = bad || !(st.RequestsPerSecond > 0) || math.IsInf(st.RequestsPerSecond, 0) || st.RateFrom != nil || st.RateTo != nil
		case contract.StageKindRamp:
			bad = bad || st.RateFrom == nil || st.RateTo == nil || !(*st.RateFrom >= 0) || !(*st.RateTo >= 0) || math.IsInf(*st.RateFrom, 0) || math.IsInf(*st.RateTo, 0) || st.RequestsPerSecond != 0
		default:
			bad = true
		}
		if bad {
			return fmt.Errorf("%w: case %s: schedule stage %d (%s) is not a hold of a positive rate or a ramp between two rates of 0 or more (arrival constant, poisson or gamma), or a workers stage of 1 to %d workers (arrival closed, and only there), over a positive time", ErrPlan, p.CaseID, i, st.Kind, MaxConcurrency)
		}
	}
	if closed {
		return p.checkClosedSchedule()
	}
	switch want := metric.ExpectedArrivals(sc); {
	case want < 1:
		return fmt.Errorf("%w: case %s: the schedule's stages expect no arrival", ErrPlan, p.CaseID)
	case want > metric.MaxScheduleArrivals:
		return fmt.Errorf("%w: case %s: the schedule expects %g arrivals a row, more than %d", ErrPlan, p.CaseID, want, metric.MaxScheduleArrivals)
	case sc.Arrival != contract.ScheduleArrivalConstant && want > metric.MaxScheduleArrivals/2 && p.Case.Requests == nil:
		// A random schedule near the bound: each row's own draw must fit too.
		for _, cc := range c.Concurrency {
			for rep := range c.Repetitions {
				if _, _, err := p.schedule(cc, rep); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkClosedSchedule: a closed schedule caps its row with requests, and every row's
// concurrency is its largest stage's (the row's workers; a stage runs as many of them as it
// declares).
func (p *Plan) checkClosedSchedule() error {
	c := &p.Case
	if c.Requests == nil {
		return fmt.Errorf("%w: case %s declares a closed schedule without requests: set requests, the most measured requests a row may send", ErrPlan, p.CaseID)
	}
	top := int64(0)
	for _, st := range c.Schedule.Stages {
		top = max(top, st.Concurrency)
	}
	for _, cc := range c.Concurrency {
		if cc != top {
			return fmt.Errorf("%w: case %s: concurrency %d with a closed schedule whose largest stage runs %d: declare concurrency [%d]", ErrPlan, p.CaseID, cc, top, top)
		}
	}
	return nil
}

// closedGate paces a closed schedule's workers: worker w takes a request only while the current
// stage runs more than w workers, and waits for the next stage that does; false once the
// schedule's horizon passed (or ctx ended). The schedule starts at the first call.
func closedGate(sc *contract.Schedule) func(ctx context.Context, w int) (time.Time, bool) {
	spans := metric.Spans(sc)
	var once sync.Once
	var origin time.Time
	return func(ctx context.Context, w int) (time.Time, bool) {
		once.Do(func() { origin = time.Now() })
		for {
			now := time.Now()
			el := now.Sub(origin).Seconds()
			workers, next, ok := metric.ActiveWorkers(spans, el)
			if !ok || ctx.Err() != nil {
				return now, false
			}
			if int64(w) < workers {
				return now, true
			}
			t := time.NewTimer(time.Duration((next - el) * 1e9))
			select {
			case <-ctx.Done():
				t.Stop()
				return now, false
			case <-t.C:
			}
		}
	}
}

// scheduledCap is a scheduled row's expected measured requests (the exact count of a constant
// schedule), capped by Case.Requests; Progress reports it as the row's total.
func (p *Plan) scheduledCap() int64 {
	if metric.Closed(p.Case.Schedule) {
		return *p.Case.Requests
	}
	n := int64(math.Ceil(metric.ExpectedArrivals(p.Case.Schedule)))
	if p.Case.Requests != nil {
		n = min(n, *p.Case.Requests)
	}
	return n
}

// schedule is the row's arrivals (capped by Case.Requests) and the stage of each.
func (p *Plan) schedule(c, rep int64) ([]time.Duration, []int, error) {
	limit := metric.MaxScheduleArrivals
	if p.Case.Requests != nil {
		limit = int(min(*p.Case.Requests, int64(limit)))
	}
	ns, stages, err := metric.ScheduleArrivals(p.Case.Schedule, p.Seed, c, rep, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: case %s: %v", ErrPlan, p.CaseID, err)
	}
	out := make([]time.Duration, len(ns))
	for i, v := range ns {
		out[i] = time.Duration(v)
	}
	return out, stages, nil
}

// rowSchedule is a scheduled row as it ran: its arrivals, their stages and the schedule's start.
type rowSchedule struct {
	offsets []time.Duration
	stages  []int
	origin  time.Time
}

// report adds the row's stages and per-second series (nothing when the row never started).
func (rs *rowSchedule) report(row *contract.Row, sc *contract.Schedule, spec RowSpec, records []contract.RequestRecordDoc, epoch time.Time) {
	if rs.origin.IsZero() {
		return
	}
	unmeasured := int64(0)
	var measured []*contract.RequestRecordDoc
	for i := range records {
		if records[i].Warmup {
			unmeasured++
		} else {
			measured = append(measured, &records[i])
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	reqs := make([]metric.Request, len(measured))
	stageOf := make([]int, len(measured))
	origin := int64(rs.origin.Sub(epoch))
	closed := metric.Closed(sc)
	if closed && len(measured) > 0 {
		origin = measured[0].TSchedNs
		for _, r := range measured {
			origin = min(origin, r.TSchedNs)
		}
	}
	spans := metric.Spans(sc)
	for i, r := range measured {
		reqs[i] = metric.RequestOf(r)
		stageOf[i] = -1
		if closed {
			stageOf[i] = metric.StageAt(spans, origin, r.TSchedNs)
		} else if k := r.Index - unmeasured; k >= 0 && k < int64(len(rs.stages)) {
			stageOf[i] = rs.stages[k]
		}
	}
	if closed {
		rs.stages = stageOf // a closed stage's scheduled requests are those its workers took
	}
	ms := metric.RowSpec{Concurrency: spec.Concurrency, Loop: spec.Loop, OfferedRate: spec.OfferedRate, SLO: &metric.SLO{TTFTMs: spec.SLO.TTFTMs, ICLMs: spec.SLO.ICLMs, E2EMs: spec.SLO.E2EMs}}
	row.Stages = metric.RowStages(sc, ms, rs.stages, reqs, stageOf, origin)
	if series, ok := metric.Series(reqs, origin, int64(metric.Horizon(sc)*1e9)); ok {
		row.Series = &series
	}
}

// trace reports whether the case replays a trace (a trace corpus).
func (p *Plan) trace() bool {
	return p.Case.Corpus != nil && p.Case.Corpus.Source == contract.CorpusSourceTrace
}

// traceRate is a trace row's mean offered rate (metric.TraceRate of the n replayed entries'
// scaled offsets); nil when they span no time.
func (p *Plan) traceRate() *float64 {
	n := p.measured()
	if n < 2 {
		return nil
	}
	return metric.TraceRate(n, p.promptAtNs(0), p.promptAtNs(n-1))
}

// checkTrace refuses a trace replay Run cannot execute: one beside a rate, a schedule or a
// duration, with seeded prompt order, more requests than entries, or an entry whose
// output_length exceeds the case's max_tokens.
func (p *Plan) checkTrace() error {
	if !p.trace() {
		return nil
	}
	c := &p.Case
	switch {
	case c.Rate != nil || c.Schedule != nil || c.Duration != nil:
		return fmt.Errorf("%w: case %s replays a trace and declares rate, schedule or duration: the trace's timestamps are the schedule", ErrPlan, p.CaseID)
	case c.PromptOrder == contract.ServingCasePromptOrderSeeded:
		return fmt.Errorf("%w: case %s replays a trace in seeded prompt order: a trace replays in its order", ErrPlan, p.CaseID)
	case c.Requests != nil && *c.Requests > p.corpusLen():
		return fmt.Errorf("%w: case %s: requests %d exceeds the trace's %d entries", ErrPlan, p.CaseID, *c.Requests, p.corpusLen())
	}
	for i := range p.corpusLen() {
		if mt := p.promptMaxTokens(i); mt > c.MaxTokens {
			return fmt.Errorf("%w: case %s: trace entry %d has output_length %d, above the case's max_tokens %d", ErrPlan, p.CaseID, i, mt, c.MaxTokens)
		}
	}
	return nil
}

// reportTrace adds a trace row's replay block and per-second series.
func (rs *rowSchedule) reportTrace(row *contract.Row, corpus *contract.Corpus, records []contract.RequestRecordDoc, epoch time.Time) {
	if rs.origin.IsZero() {
		return
	}
	var measured []*contract.RequestRecordDoc
	for i := range records {
		if !records[i].Warmup {
			measured = append(measured, &records[i])
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	reqs := make([]metric.Request, len(measured))
	for i, r := range measured {
		reqs[i] = metric.RequestOf(r)
	}
	scale, wpt := 1.0, 0.0
	if corpus.TimeScale != nil {
		scale = *corpus.TimeScale
	}
	if corpus.WordsPerToken != nil {
		wpt = *corpus.WordsPerToken
	}
	rp := metric.ReplayOf(reqs, corpus.Digest, scale, contract.RowReplayLengthUnit(corpus.LengthUnit), wpt)
	row.Replay = &rp
	horizon := int64(0)
	if len(rs.offsets) > 0 {
		horizon = int64(rs.offsets[len(rs.offsets)-1]) + 1
	}
	if series, ok := metric.Series(reqs, int64(rs.origin.Sub(epoch)), horizon); ok {
		row.Series = &series
	}
}
