package rowcheck

import (
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// How a row of a case with a duration or stop rules ended (case-result rows[].ended), checked
// against its records and its workload case: the cut count is the records' cut_at_grace count,
// and only a duration row cuts; a duration row sent at least its minimum requests; a row that
// ran its requests sent all of them; a row a stop rule ended shows that rule firing when its
// measured records are replayed in t_close order (metric.StopReplay), the rule is the
// workload's, and a passed case has a stopped row only when it declares stop.measurement.

const ErrClassCut = string(contract.ErrorClassCutAtGrace)

// rowEndSlackSeconds is how far past a row's ended.after_seconds its last measured t_sched may
// lie: a closed-loop row's start is the first worker's take, which another worker may precede
// by scheduling noise.
const rowEndSlackSeconds = 0.01

// stopMeasures reports whether the workload case declares its stop rules as its measurement.
func stopMeasures(wc *contract.Case) bool {
	return wc != nil && wc.Stop != nil && wc.Stop.Measurement != nil && *wc.Stop.Measurement
}

// excusedFailure: a failed measured request that does not fail its case: cut at a duration
// row's grace deadline, or in a row a stop rule ended when the case declares the stop as its
// measurement.
func ExcusedFailure(row contract.Row, wc *contract.Case, r *record.Record) bool {
	e := row.Ended
	if e == nil {
		return false
	}
	if e.Reason == contract.RowEndReasonDuration && r.ErrClass == ErrClassCut {
		return true
	}
	return metric.StopsRow(e.Reason) && stopMeasures(wc)
}

func RowEnd(c *finding.Collector, path string, j int, row contract.Row, wc *contract.Case, recs []*record.Record, passed bool) {
	base := finding.Pointer("rows", j, "ended")
	var measured []*record.Record
	cut := int64(0)
	for _, r := range recs {
		if r.Warmup {
			continue
		}
		measured = append(measured, r)
		if r.Failed && r.ErrClass == ErrClassCut {
			cut++
		}
	}
	e := row.Ended
	if e == nil {
		if cut > 0 {
			c.Add(path, finding.Pointer("rows", j), reason.ErrRowMismatch, "row c%d-r%d records %d requests cut_at_grace but no ended: only a row that ended by its duration cuts", row.Concurrency, row.Repetition, cut)
		}
		return
	}
	if e.Cut != cut {
		c.Add(path, base+"/cut", reason.ErrRowMismatch, "cut %d, the records hold %d cut_at_grace requests", e.Cut, cut)
	}
	if cut > 0 && e.Reason != contract.RowEndReasonDuration {
		c.Add(path, base+"/reason", reason.ErrRowMismatch, "row c%d-r%d ended by %s but cut %d requests: only a duration row cuts at its grace deadline", row.Concurrency, row.Repetition, e.Reason, cut)
	}
	if len(measured) > 0 {
		first, last := measured[0].Sched, measured[0].Sched
		for _, r := range measured {
			first, last = min(first, r.Sched), max(last, r.Sched)
		}
		if span := float64(last-first) / 1e9; span > e.AfterSeconds+rowEndSlackSeconds {
			c.Add(path, base+"/after_seconds", reason.ErrRowMismatch, "row c%d-r%d says it stopped sending %s s after its first measured request, and its records schedule one %s s after it", row.Concurrency, row.Repetition, record.FmtFloat(e.AfterSeconds), record.FmtFloat(span))
		}
	}
	if wc == nil {
		return
	}
	switch e.Reason {
	case contract.RowEndReasonDuration:
		if wc.Duration != nil && e.AfterSeconds < wc.Duration.Seconds {
			c.Add(path, base+"/after_seconds", reason.ErrRowMismatch, "row c%d-r%d says its duration ended it after %s s, before its duration %s s", row.Concurrency, row.Repetition, record.FmtFloat(e.AfterSeconds), record.FmtFloat(wc.Duration.Seconds))
		}
		if wc.Duration == nil {
			c.Add(path, base+"/reason", reason.ErrRowMismatch, "row c%d-r%d ended by its duration, and its workload case declares none", row.Concurrency, row.Repetition)
		} else if int64(len(measured)) < wc.Duration.MinRequests {
			c.Add(path, base+"/reason", reason.ErrLoadNotReached, "row c%d-r%d ended by its duration after %d measured requests, below its min_requests %d", row.Concurrency, row.Repetition, len(measured), wc.Duration.MinRequests)
		}
	case contract.RowEndReasonRequests:
		if wc.Requests != nil && int64(len(measured)) != *wc.Requests {
			c.Add(path, base+"/reason", reason.ErrRowMismatch, "row c%d-r%d says it ran its requests, and its records hold %d of the %d declared", row.Concurrency, row.Repetition, len(measured), *wc.Requests)
		}
	default:
		if wc.Stop == nil {
			c.Add(path, base+"/reason", reason.ErrRowMismatch, "row c%d-r%d stopped by %s, and its workload case declares no stop rules", row.Concurrency, row.Repetition, e.Reason)
			return
		}
		byClose := slices.Clone(measured)
		slices.SortStableFunc(byClose, func(a, b *record.Record) int { return CmpInt(endOf(a), endOf(b)) })
		outcomes := make([]metric.StopOutcome, len(byClose))
		for i, r := range byClose {
			outcomes[i] = metric.StopOutcome{Failed: r.Failed}
			if r.HasSend {
				outcomes[i].LagMs, outcomes[i].HasLag = float64(r.Send-r.Sched)/1e6, true
			}
		}
		if got, _ := metric.StopReplay(wc.Stop, outcomes); got != e.Reason {
			c.Add(path, base+"/reason", reason.ErrRowMismatch, "row c%d-r%d says its %s rule stopped it; its records replayed in t_close order fire %q", row.Concurrency, row.Repetition, e.Reason, got)
		}
		if passed && !stopMeasures(wc) {
			c.Add(path, base, reason.ErrVerdictMismatch, "row c%d-r%d was stopped by its %s rule in a passed result, and the case does not declare stop.measurement", row.Concurrency, row.Repetition, e.Reason)
		}
	}
}

// endOf is when a request ended: t_close, else t_end, else its schedule.
func endOf(r *record.Record) int64 {
	switch {
	case r.HasClose:
		return r.Close
	case r.HasEnd:
		return r.End
	}
	return r.Sched
}
