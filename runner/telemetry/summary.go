package telemetry

import (
	"fmt"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Formula ids of the row's device metrics (docs/metrics.md). Each is diagnostic: evidence for
// diagnosis, never for a verdict.
const (
	FormulaEnergy         = "device_energy.v1"
	FormulaEnergyPerToken = "device_energy_per_output_token.v1"
	FormulaPowerMean      = "device_power_mean.v1"
	FormulaThrottled      = "device_throttled_seconds.v1"
)

// Flags a row's device telemetry can raise.
const (
	FlagThrottled  = "throttled"
	FlagECCChanged = "ecc_uncorrected_changed"
	FlagXid        = "xid_event"
	FlagCallFailed = "telemetry_call_failed"
)

// Summary is a row's device telemetry, summarised over the row's window [start, end] (ns).
type Summary struct {
	Metrics  []contract.Metric
	Flags    []string
	Warnings []string
}

// Summarize computes the row metrics from the samples of every device over [start, end] (the
// row's window: min t_send to max t_end of its measured requests) and outputTokens (the sum of
// their usage.completion_tokens):
//
//   - device_energy_j (device_energy.v1): per device, the energy counter interpolated linearly at
//     end minus at start; for a device without a counter, the power integrated (trapezoids over
//     the samples, interpolated at the bounds); summed over devices. A device whose samples do not
//     bracket the window is left out with a warning.
//   - device_energy_per_output_token_j (device_energy_per_output_token.v1): energy / outputTokens.
//   - device_power_mean_w (device_power_mean.v1): energy / (end - start).
//   - device_throttled_seconds (device_throttled_seconds.v1): per device, the time within the
//     window from a sample with an active throttle reason to the next sample; the largest over
//     devices.
//
// Flags: throttled (a throttle reason in the window), ecc_uncorrected_changed (the count differs
// between the window's first and last sample of a device), xid_event (a critical Xid event
// within the window), telemetry_call_failed (a reading in the window names a failed call).
// It is a pure function of its arguments; qualverify recomputes it independently.
func Summarize(samples []contract.TelemetrySampleDoc, start, end, outputTokens int64) Summary {
	var s Summary
	if end <= start {
		s.Warnings = append(s.Warnings, "the row has no measured window: no device metrics")
		return s
	}
	byDev, devs := byDevice(samples)
	slices.Sort(devs)
	energy, n := 0.0, 0
	throttled := 0.0
	flags := map[string]bool{}
	for _, d := range devs {
		xs := byDev[d]
		if e, ok := deviceEnergy(xs, start, end); ok {
			energy += e
			n++
		} else {
			s.Warnings = append(s.Warnings, fmt.Sprintf("device %d: its samples do not bracket the row's window (or carry neither energy nor power): left out of the energy", d))
		}
		t := 0.0
		for i := 0; i+1 < len(xs); i++ {
			if len(xs[i].ThrottleReasons) > 0 {
				t += overlap(xs[i].TNs, xs[i+1].TNs, start, end)
			}
		}
		throttled = max(throttled, t)
		var firstECC, lastECC *int64
		for _, x := range xs {
			if x.TNs < start || x.TNs > end {
				continue
			}
			if len(x.ThrottleReasons) > 0 {
				flags[FlagThrottled] = true
			}
			if x.XidEvents != nil && *x.XidEvents > 0 {
				flags[FlagXid] = true
			}
			if len(x.Errors) > 0 {
				flags[FlagCallFailed] = true
			}
			if x.ECCUncorrected != nil {
				if firstECC == nil {
					firstECC = x.ECCUncorrected
				}
				lastECC = x.ECCUncorrected
			}
		}
		if firstECC != nil && *firstECC != *lastECC {
			flags[FlagECCChanged] = true
		}
	}
	for _, f := range []string{FlagThrottled, FlagECCChanged, FlagXid, FlagCallFailed} {
		if flags[f] {
			s.Flags = append(s.Flags, f)
		}
	}
	if len(devs) == 0 {
		s.Warnings = append(s.Warnings, "no device sample in the row's window")
		return s
	}
	dur := float64(end-start) / 1e9
	samplesN := int64(len(samples))
	m := func(name string, v float64, unit, agg, formula string) contract.Metric {
		return contract.Metric{Name: name, Value: v, Unit: unit, Aggregation: contract.Aggregation(agg), Direction: "lower_is_better", Formula: formula, Samples: ptr(samplesN), Diagnostic: true}
	}
	if n > 0 {
		s.Metrics = append(s.Metrics, m("device_energy_j", energy, "J", "sum", FormulaEnergy))
		if outputTokens > 0 {
			s.Metrics = append(s.Metrics, m("device_energy_per_output_token_j", energy/float64(outputTokens), "J/token", "exact", FormulaEnergyPerToken))
		}
		s.Metrics = append(s.Metrics, m("device_power_mean_w", energy/dur, "W", "mean", FormulaPowerMean))
	}
	s.Metrics = append(s.Metrics, m("device_throttled_seconds", throttled, "s", "max", FormulaThrottled))
	return s
}

// deviceEnergy is one device's energy over [start, end] in J.
func deviceEnergy(xs []contract.TelemetrySampleDoc, start, end int64) (float64, bool) {
	if len(xs) < 2 || xs[0].TNs > start || xs[len(xs)-1].TNs < end {
		return 0, false
	}
	counter := true
	power := true
	for _, x := range xs {
		counter = counter && x.EnergyJ != nil
		power = power && x.PowerW != nil
	}
	val := func(x contract.TelemetrySampleDoc) float64 {
		if counter {
			return *x.EnergyJ
		}
		return *x.PowerW
	}
	at := func(t int64) float64 {
		for i := 0; i+1 < len(xs); i++ {
			a, b := xs[i], xs[i+1]
			if a.TNs <= t && t <= b.TNs {
				if b.TNs == a.TNs {
					return val(a)
				}
				f := float64(t-a.TNs) / float64(b.TNs-a.TNs)
				return val(a) + f*(val(b)-val(a))
			}
		}
		return val(xs[len(xs)-1])
	}
	switch {
	case counter:
		e := at(end) - at(start)
		return e, e >= 0
	case power:
		// Trapezoids over [start, end]: the bounds interpolated, the samples between them.
		pts := []struct {
			t int64
			p float64
		}{{start, at(start)}}
		for _, x := range xs {
			if x.TNs > start && x.TNs < end {
				pts = append(pts, struct {
					t int64
					p float64
				}{x.TNs, *x.PowerW})
			}
		}
		pts = append(pts, struct {
			t int64
			p float64
		}{end, at(end)})
		e := 0.0
		for i := 0; i+1 < len(pts); i++ {
			e += (pts[i].p + pts[i+1].p) / 2 * float64(pts[i+1].t-pts[i].t) / 1e9
		}
		return e, true
	}
	return 0, false
}

// overlap is the length in s of [a, b] within [start, end].
func overlap(a, b, start, end int64) float64 {
	lo, hi := max(a, start), min(b, end)
	if hi <= lo {
		return 0
	}
	return float64(hi-lo) / 1e9
}
