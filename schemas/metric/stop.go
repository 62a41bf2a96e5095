package metric

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// Stop rules (docs/metrics.md "Row size, duration and stop rules"). The runner feeds every
// measured request to a StopState as it ends and stops sending at the first rule that fires; the
// verifier replays the records in the order of their t_close (StopReplay).

// StopOutcome is one measured request that ended: whether it failed (an error class), and its
// schedule lag t_send - t_sched in ms (HasLag false when it was never sent).
type StopOutcome struct {
	Failed bool
	LagMs  float64
	HasLag bool
}

// StopState counts a row's ended measured requests: Ended, Failed of them, the current run of
// Consecutive failures, and the current run of Lagging requests (each sent more than the
// saturation rule's lag_ms behind its schedule; a request never sent ends the run).
type StopState struct {
	Ended, Failed, Consecutive, Lagging int64
}

// Observe counts one outcome under rules (nil: only the counts).
func (s *StopState) Observe(rules *contract.StopRules, o StopOutcome) {
	s.Ended++
	if o.Failed {
		s.Failed++
		s.Consecutive++
	} else {
		s.Consecutive = 0
	}
	if rules != nil && rules.Saturation != nil && o.HasLag && o.LagMs > rules.Saturation.LagMs {
		s.Lagging++
	} else {
		s.Lagging = 0
	}
}

// StopFired says which rule the state fires, tried in this order: error_fraction when at least
// its min_requests ended and Failed/Ended > above; consecutive_failures when Consecutive reaches
// it; saturation when Lagging reaches its consecutive. "" when none fires or rules is nil.
func StopFired(rules *contract.StopRules, s StopState) contract.RowEndReason {
	if rules == nil || s.Ended < 1 {
		return ""
	}
	if f := rules.ErrorFraction; f != nil && s.Ended >= f.MinRequests && float64(s.Failed)/float64(s.Ended) > f.Above {
		return contract.RowEndReasonErrorFraction
	}
	if n := rules.ConsecutiveFailures; n != nil && s.Consecutive >= *n {
		return contract.RowEndReasonConsecutiveFailures
	}
	if sat := rules.Saturation; sat != nil && s.Lagging >= sat.Consecutive {
		return contract.RowEndReasonSaturation
	}
	return ""
}

// StopReplay replays outcomes, in the order the requests ended, and returns the first rule that
// fires and after how many outcomes (0 and "" when none does).
func StopReplay(rules *contract.StopRules, outcomes []StopOutcome) (contract.RowEndReason, int) {
	var s StopState
	for i, o := range outcomes {
		s.Observe(rules, o)
		if r := StopFired(rules, s); r != "" {
			return r, i + 1
		}
	}
	return "", 0
}

// StopsRow reports whether reason is a stop rule's (not the row running out of requests or of
// its duration).
func StopsRow(reason contract.RowEndReason) bool {
	switch reason {
	case contract.RowEndReasonErrorFraction, contract.RowEndReasonConsecutiveFailures, contract.RowEndReasonSaturation:
		return true
	}
	return false
}

// ExcusedFailures are the failed requests of a row that do not fail its case: those cut at a
// duration row's grace deadline and, when the case declares its stop rule as the measurement
// (measures), every failure of a row a stop rule ended.
func ExcusedFailures(row contract.Row, measures bool) int64 {
	e := row.Ended
	switch {
	case e == nil:
		return 0
	case StopsRow(e.Reason) && measures:
		return row.Failures
	default:
		return e.Cut
	}
}
