package telemetry

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// RowWindow is a row's measured window in ns from the epoch, min t_send to max t_end over its
// measured (non-warmup) requests, and the sum of their usage.completion_tokens: what Summarize
// takes. ok is false when no measured request has both times.
func RowWindow(recs []contract.RequestRecordDoc) (start, end, outputTokens int64, ok bool) {
	first := true
	for _, r := range recs {
		if r.Warmup {
			continue
		}
		if r.Usage != nil {
			outputTokens += r.Usage.CompletionTokens
		}
		if r.TSendNs != nil && (first || *r.TSendNs < start) {
			start = *r.TSendNs
			first = false
		}
		if r.TEndNs != nil && *r.TEndNs > end {
			end = *r.TEndNs
		}
	}
	return start, end, outputTokens, !first && end > start
}
