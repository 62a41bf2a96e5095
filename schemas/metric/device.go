package metric

import (
	"fmt"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// DeviceFlags are the device telemetry flags a row can raise (docs/metrics.md, "Device
// telemetry"), in the order a row lists them.
var DeviceFlags = []contract.RowDeviceTelemetryFlags{contract.RowDeviceTelemetryFlagsThrottled, contract.RowDeviceTelemetryFlagsECCUncorrectedChanged,
	contract.RowDeviceTelemetryFlagsXidEvent, contract.RowDeviceTelemetryFlagsTelemetryCallFailed}

// DeviceSample is one device telemetry reading reduced to what the device formulas read.
type DeviceSample struct {
	Device int64
	TNs    int64
	// EnergyJ (the device's energy counter) and PowerW; nil when the reading lacks them.
	EnergyJ *float64
	PowerW  *float64
	// Throttled: the reading names a throttle reason; XidEvent: it counts a critical Xid event;
	// CallFailed: it names a failed call.
	Throttled  bool
	XidEvent   bool
	CallFailed bool
	// ECCUncorrected is the uncorrected ECC count; nil when the reading lacks it.
	ECCUncorrected *int64
}

// DeviceSummary is a row's device telemetry over its window.
type DeviceSummary struct {
	Values   []Value
	Flags    []contract.RowDeviceTelemetryFlags
	Warnings []string
}

// Device computes a row's diagnostic device metrics and flags from the samples of every device
// (each device's in time order) over the row's window [start, end] (ns: min t_send to max t_end
// of its measured requests) and outputTokens (the Σ usage.completion_tokens of its measured
// requests):
//
//   - device_energy_j (device_energy.v1): per device, the energy counter interpolated linearly at
//     end minus at start; for a device without a counter, the power integrated (trapezoids over
//     the samples, interpolated at the bounds); summed over devices in device order. A device
//     whose samples do not bracket the window is left out with a warning.
//   - device_energy_per_output_token_j (device_energy_per_output_token.v1): energy / outputTokens.
//   - device_power_mean_w (device_power_mean.v1): energy / (end - start).
//   - device_throttled_seconds (device_throttled_seconds.v1): per device, the time within the
//     window from a sample with an active throttle reason to the next sample; the largest over
//     devices.
//
// Every metric has samples = len(samples). Flags: throttled (a throttle reason in the window),
// ecc_uncorrected_changed (the count differs between the window's first and last sample of a
// device), xid_event (a critical Xid event within the window), telemetry_call_failed (a reading
// in the window names a failed call).
func Device(samples []DeviceSample, start, end, outputTokens int64) DeviceSummary {
	var s DeviceSummary
	if end <= start {
		s.Warnings = append(s.Warnings, "the row has no measured window: no device metrics")
		return s
	}
	byDev := map[int64][]DeviceSample{}
	var devs []int64
	for _, x := range samples {
		if _, ok := byDev[x.Device]; !ok {
			devs = append(devs, x.Device)
		}
		byDev[x.Device] = append(byDev[x.Device], x)
	}
	slices.Sort(devs)
	energy, n := 0.0, 0
	throttled := 0.0
	flags := map[contract.RowDeviceTelemetryFlags]bool{}
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
			if xs[i].Throttled {
				t += overlap(xs[i].TNs, xs[i+1].TNs, start, end)
			}
		}
		throttled = max(throttled, t)
		var firstECC, lastECC *int64
		for _, x := range xs {
			if x.TNs < start || x.TNs > end {
				continue
			}
			flags[contract.RowDeviceTelemetryFlagsThrottled] = flags[contract.RowDeviceTelemetryFlagsThrottled] || x.Throttled
			flags[contract.RowDeviceTelemetryFlagsXidEvent] = flags[contract.RowDeviceTelemetryFlagsXidEvent] || x.XidEvent
			flags[contract.RowDeviceTelemetryFlagsTelemetryCallFailed] = flags[contract.RowDeviceTelemetryFlagsTelemetryCallFailed] || x.CallFailed
			if x.ECCUncorrected != nil {
				if firstECC == nil {
					firstECC = x.ECCUncorrected
				}
				lastECC = x.ECCUncorrected
			}
		}
		if firstECC != nil && *firstECC != *lastECC {
			flags[contract.RowDeviceTelemetryFlagsECCUncorrectedChanged] = true
		}
	}
	for _, f := range DeviceFlags {
		if flags[f] {
			s.Flags = append(s.Flags, f)
		}
	}
	if len(devs) == 0 {
		s.Warnings = append(s.Warnings, "no device sample in the row's window")
		return s
	}
	dur := float64(end-start) / 1e9
	b := &builder{}
	if n > 0 {
		b.add(DeviceEnergy, "", energy, len(samples))
		if outputTokens > 0 {
			b.add(DeviceEnergyPerOutputToken, "", energy/float64(outputTokens), len(samples))
		}
		b.add(DevicePowerMean, "", energy/dur, len(samples))
	}
	b.add(DeviceThrottledSeconds, "", throttled, len(samples))
	s.Values = b.vs
	return s
}

// deviceEnergy is one device's energy over [start, end] in J.
func deviceEnergy(xs []DeviceSample, start, end int64) (float64, bool) {
	if len(xs) < 2 || xs[0].TNs > start || xs[len(xs)-1].TNs < end {
		return 0, false
	}
	counter := true
	power := true
	for _, x := range xs {
		counter = counter && x.EnergyJ != nil
		power = power && x.PowerW != nil
	}
	val := func(x DeviceSample) float64 {
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
	type point struct {
		t int64
		p float64
	}
	switch {
	case counter:
		e := at(end) - at(start)
		return e, e >= 0
	case power:
		// Trapezoids over [start, end]: the bounds interpolated, the samples between them.
		pts := []point{{start, at(start)}}
		for _, x := range xs {
			if x.TNs > start && x.TNs < end {
				pts = append(pts, point{x.TNs, *x.PowerW})
			}
		}
		pts = append(pts, point{end, at(end)})
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

// DeviceWindow is what Device takes of a row's measured requests: the window [min t_send,
// max t_end] (WindowBounds) and the Σ usage.completion_tokens of the requests with a usage
// record (failed ones included: the device worked for them). ok is false when the window is
// empty.
func DeviceWindow(measured []Request) (start, end, outputTokens int64, ok bool) {
	for i := range measured {
		if measured[i].HasUsage {
			outputTokens += measured[i].Completion
		}
	}
	start, end, ok = WindowBounds(measured)
	return start, end, outputTokens, ok
}
