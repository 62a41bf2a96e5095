package telemetry

import (
	"github.com/qualkit/qualkit/schemas/contract"
	formulas "github.com/qualkit/qualkit/schemas/metric"
)

// RowWindow is a row's measured window in ns from the epoch, min t_send to max t_end over its
// measured (non-warmup) requests, and the sum of their usage.completion_tokens: what Summarize
// takes (metric.DeviceWindow). ok is false when no measured request has both times.
func RowWindow(recs []contract.RequestRecordDoc) (start, end, outputTokens int64, ok bool) {
	var measured []formulas.Request
	for i := range recs {
		if !recs[i].Warmup {
			measured = append(measured, formulas.RequestOf(&recs[i]))
		}
	}
	return formulas.DeviceWindow(measured)
}
