package telemetry

import (
	"github.com/qualkit/qualkit/schemas/contract"
	formulas "github.com/qualkit/qualkit/schemas/metric"
)

// Summary is a row's device telemetry, summarised over the row's window [start, end] (ns).
type Summary struct {
	Metrics  []contract.Metric
	Flags    []contract.RowDeviceTelemetryFlags
	Warnings []string
}

// Summarize computes the row's device metrics and flags from the samples of every device over
// [start, end] (the row's window: min t_send to max t_end of its measured requests) and
// outputTokens (the sum of their usage.completion_tokens) with the catalogue's Device (package schemas/metric)
// (device_energy.v1, device_energy_per_output_token.v1, device_power_mean.v1,
// device_throttled_seconds.v1 and the flags; docs/metrics.md). It is a pure function of its
// arguments; qualverify recomputes it from the samples file.
func Summarize(samples []contract.TelemetrySampleDoc, start, end, outputTokens int64) Summary {
	d := formulas.Device(formulas.DeviceSamplesOf(samples), start, end, outputTokens)
	s := Summary{Flags: d.Flags, Warnings: d.Warnings}
	if len(d.Values) > 0 {
		s.Metrics = formulas.MetricsOf(d.Values)
	}
	return s
}
