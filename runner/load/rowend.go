package load

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// rowCtl ends a row's measured requests: by its duration (and minimum request count), with the
// requests still in flight at the grace deadline cut, or by a stop rule (those in flight
// finish). A row of a case with neither has a rowCtl that never stops it.
//
// send is cancelled when the row stops sending; cut (the measured requests' context) when the
// grace deadline passes.
type rowCtl struct {
	dur   *contract.RowDuration
	rules *contract.StopRules

	send, cut           context.Context
	stopSend, cancelCut context.CancelFunc
	start, last         time.Time // the first and the last measured t_sched
	started             atomic.Bool
	deadlinePassed      atomic.Bool
	cutting             atomic.Bool
	sent                atomic.Int64
	timers              []*time.Timer
	mu                  sync.Mutex
	state               metric.StopState
	reason              contract.RowEndReason
	after               time.Duration
}

func newRowCtl(ctx context.Context, c *contract.Case) *rowCtl {
	rc := &rowCtl{dur: c.Duration, rules: c.Stop}
	rc.cut, rc.cancelCut = context.WithCancel(ctx)
	rc.send, rc.stopSend = context.WithCancel(rc.cut)
	return rc
}

// begin marks the row's first measured schedule and arms the duration timer.
func (rc *rowCtl) begin(at time.Time) {
	if rc.started.Swap(true) {
		return
	}
	rc.mu.Lock()
	rc.start = at
	rc.mu.Unlock()
	if rc.dur == nil {
		return
	}
	d := time.Duration(rc.dur.Seconds * float64(time.Second))
	rc.mu.Lock()
	rc.timers = append(rc.timers, time.AfterFunc(time.Until(at.Add(d)), func() {
		rc.deadlinePassed.Store(true)
		if rc.sent.Load() >= rc.dur.MinRequests {
			rc.stop(contract.RowEndReasonDuration)
		}
	}))
	rc.mu.Unlock()
}

// take is called before a measured request is sent; false means the row stopped sending.
func (rc *rowCtl) take(at time.Time) bool {
	if rc.send.Err() != nil {
		return false
	}
	rc.begin(at)
	rc.mu.Lock()
	rc.last = at
	rc.mu.Unlock()
	n := rc.sent.Add(1)
	if rc.dur != nil && n >= rc.dur.MinRequests && rc.deadlinePassed.Load() {
		rc.stop(contract.RowEndReasonDuration)
	}
	return true
}

// stop ends sending (the first reason wins); a duration stop arms the grace deadline.
func (rc *rowCtl) stop(reason contract.RowEndReason) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.reason != "" {
		return
	}
	rc.reason, rc.after = reason, time.Since(rc.start)
	rc.stopSend()
	if reason == contract.RowEndReasonDuration {
		rc.timers = append(rc.timers, time.AfterFunc(time.Duration(rc.dur.GraceSeconds*float64(time.Second)), func() {
			rc.cutting.Store(true)
			rc.cancelCut()
		}))
	}
}

// observe counts a measured request that ended and applies the stop rules.
func (rc *rowCtl) observe(rec *contract.RequestRecordDoc) {
	if rc.rules == nil {
		return
	}
	o := metric.StopOutcome{Failed: rec.Error != nil}
	if rec.TSendNs != nil {
		o.LagMs, o.HasLag = float64(*rec.TSendNs-rec.TSchedNs)/1e6, true
	}
	rc.mu.Lock()
	rc.state.Observe(rc.rules, o)
	reason := metric.StopFired(rc.rules, rc.state)
	rc.mu.Unlock()
	if reason != "" {
		rc.stop(reason)
	}
}

// cutClass turns a measured request cancelled by the grace deadline into a cut one.
func (rc *rowCtl) cutClass(rec *contract.RequestRecordDoc) {
	if rec.Error != nil && rec.Error.Class == ClassCancelled && rc.cutting.Load() {
		rec.Error = reqError(ClassCutAtGrace, "still in flight %g s after the row stopped sending (its duration %g s passed): cut at the grace deadline", rc.dur.GraceSeconds, rc.dur.Seconds)
	}
}

// finish stops the timers and says how the row ended: nil for a case without duration or stop
// rules, and for a row whose run was cancelled before it ended.
func (rc *rowCtl) finish(ctx context.Context, recs []contract.RequestRecordDoc) *contract.RowEnd {
	rc.mu.Lock()
	for _, t := range rc.timers {
		t.Stop()
	}
	reason, after := rc.reason, rc.after
	rc.mu.Unlock()
	rc.stopSend()
	rc.cancelCut()
	if rc.dur == nil && rc.rules == nil {
		return nil
	}
	if reason == "" {
		if ctx.Err() != nil {
			return nil
		}
		reason = contract.RowEndReasonRequests
		rc.mu.Lock()
		if rc.started.Load() {
			after = rc.last.Sub(rc.start)
		}
		rc.mu.Unlock()
	}
	end := &contract.RowEnd{Reason: reason, AfterSeconds: max(0, after.Seconds())}
	for _, r := range recs {
		if r.Error != nil && r.Error.Class == ClassCutAtGrace {
			end.Cut++
		}
	}
	return end
}
