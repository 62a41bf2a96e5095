package metric

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// StopFired says which stop rule (docs/metrics.md "Stop rules") a row's measured outcomes fire
// once ended of its measured requests have ended, failed of them with an error class and the
// last consecutive of them (in the order they ended) all failed: error_fraction when at least
// its min_requests ended and failed/ended > above; consecutive_failures when consecutive reaches
// it (error_fraction is tried first). "" when none fires or rules is nil. The runner asks after
// every measured request ends and stops sending at the first rule that fires; the verifier
// replays the records in the order of their t_close.
func StopFired(rules *contract.StopRules, ended, failed, consecutive int64) contract.RowEndReason {
	if rules == nil || ended < 1 {
		return ""
	}
	if f := rules.ErrorFraction; f != nil && ended >= f.MinRequests && float64(failed)/float64(ended) > f.Above {
		return contract.RowEndReasonErrorFraction
	}
	if n := rules.ConsecutiveFailures; n != nil && consecutive >= *n {
		return contract.RowEndReasonConsecutiveFailures
	}
	return ""
}

// StopReplay replays outcomes (true: the request failed), in the order the requests ended,
// through StopFired and returns the first rule that fires and after how many outcomes (0 and ""
// when none does).
func StopReplay(rules *contract.StopRules, outcomes []bool) (contract.RowEndReason, int) {
	var failed, consecutive int64
	for i, bad := range outcomes {
		if bad {
			failed++
			consecutive++
		} else {
			consecutive = 0
		}
		if r := StopFired(rules, int64(i+1), failed, consecutive); r != "" {
			return r, i + 1
		}
	}
	return "", 0
}

// StopsRow reports whether reason is a stop rule's (not the row running out of requests or of
// its duration).
func StopsRow(reason contract.RowEndReason) bool {
	return reason == contract.RowEndReasonErrorFraction || reason == contract.RowEndReasonConsecutiveFailures
}
