package verify

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
)

// MaxTelemetryBytes bounds one row's device telemetry file.
const MaxTelemetryBytes = 256 << 20

// deviceFormulas are the row's device metrics, by name (docs/metrics.md, "Device telemetry").
var deviceFormulas = map[string]string{
	"device_energy_j":                  "device_energy.v1",
	"device_energy_per_output_token_j": "device_energy_per_output_token.v1",
	"device_power_mean_w":              "device_power_mean.v1",
	"device_throttled_seconds":         "device_throttled_seconds.v1",
}

// checkRowTelemetry recomputes a row's device metrics and flags from its telemetry samples and
// its request records (window and output tokens), independently of the runner's code.
func (s *snapshot) checkRowTelemetry(c *collector, path, base string, row contract.Row, recs []*record, tol Tolerance) {
	dt := row.DeviceTelemetry
	var recorded []contract.Metric
	for _, m := range row.Metrics {
		if _, ok := deviceFormulas[m.Name]; ok {
			recorded = append(recorded, m)
		}
	}
	if dt == nil {
		if len(recorded) > 0 {
			c.add(path, base+"/metrics", ErrRowMismatch, "%s without device_telemetry samples to recompute it from", recorded[0].Name)
		}
		return
	}
	f := s.files[dt.Samples.Path]
	if f == nil || !f.present || f.raw == nil {
		c.note("device telemetry %s unreadable: the device metrics of %s%s not recomputed", dt.Samples.Path, path, base)
		return
	}
	if f.digest != dt.Samples.Digest {
		c.add(path, base+"/device_telemetry/samples/digest", ErrDigestMismatch, "%s, the file hashes to %s", dt.Samples.Digest, f.digest)
		return
	}
	ndev := int64(len(s.rc.Environment.Devices))
	var xs []contract.TelemetrySampleDoc
	for i, line := range bytes.Split(bytes.TrimSuffix(f.raw, []byte("\n")), []byte("\n")) {
		if len(line) == 0 && len(f.raw) == 0 {
			break
		}
		px, err := schemas.Decode[contract.TelemetrySampleDoc](line, fmt.Sprintf("%s line %d", dt.Samples.Path, i+1), contract.TelemetrySample)
		if err != nil {
			c.add(dt.Samples.Path, jp(i), ErrSchemaViolation, "%v", err)
			return
		}
		x := *px
		if x.Device >= ndev || !slices.Contains(dt.Devices, x.Device) {
			c.add(dt.Samples.Path, jp(i, "device"), ErrRowMismatch, "device %d is not among the row's sampled devices %v (the receipt lists %d devices)", x.Device, dt.Devices, ndev)
			return
		}
		xs = append(xs, x)
	}
	start, end, tokens, ok := recordWindow(recs)
	if !ok {
		if len(recorded) > 0 {
			c.add(path, base+"/metrics", ErrRowMismatch, "device metrics for a row without a measured window")
		}
		return
	}
	want, flags := recomputeDevice(xs, start, end, tokens)
	if !slices.Equal(nonNilStrings(dt.Flags), flags) {
		c.add(path, base+"/device_telemetry/flags", ErrRowMismatch, "flags %v, the samples say %v", dt.Flags, flags)
	}
	for name, v := range want {
		i := slices.IndexFunc(recorded, func(m contract.Metric) bool { return m.Name == name })
		if i < 0 {
			c.add(path, base+"/metrics", ErrMetricMismatch, "%s missing: the samples give %s", name, fmtFloat(v))
			continue
		}
		m := recorded[i]
		if m.Formula != deviceFormulas[name] || !m.Diagnostic {
			c.add(path, base+"/metrics", ErrFormulaMismatch, "%s: formula %s (diagnostic %v), want %s (diagnostic)", name, m.Formula, m.Diagnostic, deviceFormulas[name])
		}
		if !within(m.Value, v, tol) {
			c.add(path, base+"/metrics", ErrMetricMismatch, "%s %s, the samples say %s", name, fmtFloat(m.Value), fmtFloat(v))
		}
	}
	for _, m := range recorded {
		if _, ok := want[m.Name]; !ok {
			c.add(path, base+"/metrics", ErrMetricMismatch, "%s %s: the samples do not give it", m.Name, fmtFloat(m.Value))
		}
	}
}

func nonNilStrings[S ~string](s []S) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

// recordWindow is the row's measured window (min t_send, max t_end over measured requests) and
// the completion tokens of its measured requests with usage.
func recordWindow(recs []*record) (start, end, tokens int64, ok bool) {
	first := true
	for _, r := range recs {
		if r.warmup {
			continue
		}
		if r.hasUsage {
			tokens += r.n
		}
		if r.hasSend && (first || r.send < start) {
			start, first = r.send, false
		}
		if r.hasEnd && r.end > end {
			end = r.end
		}
	}
	return start, end, tokens, !first && end > start
}

// recomputeDevice evaluates device_energy.v1, device_energy_per_output_token.v1,
// device_power_mean.v1 and device_throttled_seconds.v1 and the flags over [start, end].
func recomputeDevice(xs []contract.TelemetrySampleDoc, start, end, tokens int64) (map[string]float64, []string) {
	out := map[string]float64{}
	byDev := map[int64][]contract.TelemetrySampleDoc{}
	for _, x := range xs {
		byDev[x.Device] = append(byDev[x.Device], x)
	}
	if len(byDev) == 0 {
		return out, []string{}
	}
	var energy, throttled float64
	var any bool
	set := map[string]bool{}
	for _, d := range byDev {
		if e, ok := energyOver(d, start, end); ok {
			energy += e
			any = true
		}
		var th float64
		var ecc []int64
		for i, x := range d {
			if i+1 < len(d) && len(x.ThrottleReasons) > 0 {
				lo, hi := max(x.TNs, start), min(d[i+1].TNs, end)
				if hi > lo {
					th += float64(hi-lo) / 1e9
				}
			}
			if x.TNs < start || x.TNs > end {
				continue
			}
			set["throttled"] = set["throttled"] || len(x.ThrottleReasons) > 0
			set["xid_event"] = set["xid_event"] || (x.XidEvents != nil && *x.XidEvents > 0)
			set["telemetry_call_failed"] = set["telemetry_call_failed"] || len(x.Errors) > 0
			if x.ECCUncorrected != nil {
				ecc = append(ecc, *x.ECCUncorrected)
			}
		}
		set["ecc_uncorrected_changed"] = set["ecc_uncorrected_changed"] || (len(ecc) > 1 && ecc[0] != ecc[len(ecc)-1])
		throttled = math.Max(throttled, th)
	}
	flags := []string{}
	for _, f := range []string{"throttled", "ecc_uncorrected_changed", "xid_event", "telemetry_call_failed"} {
		if set[f] {
			flags = append(flags, f)
		}
	}
	if any {
		out["device_energy_j"] = energy
		out["device_power_mean_w"] = energy / (float64(end-start) / 1e9)
		if tokens > 0 {
			out["device_energy_per_output_token_j"] = energy / float64(tokens)
		}
	}
	out["device_throttled_seconds"] = throttled
	return out, flags
}

// energyOver is one device's energy over [start, end]: its counter interpolated at both ends, or
// its power integrated (trapezoids, interpolated at both ends) when a sample has no counter.
func energyOver(d []contract.TelemetrySampleDoc, start, end int64) (float64, bool) {
	if len(d) < 2 || d[0].TNs > start || d[len(d)-1].TNs < end {
		return 0, false
	}
	useCounter, usePower := true, true
	for _, x := range d {
		useCounter = useCounter && x.EnergyJ != nil
		usePower = usePower && x.PowerW != nil
	}
	if !useCounter && !usePower {
		return 0, false
	}
	v := func(x contract.TelemetrySampleDoc) float64 {
		if useCounter {
			return *x.EnergyJ
		}
		return *x.PowerW
	}
	interp := func(t int64) float64 {
		for i := 1; i < len(d); i++ {
			if d[i].TNs >= t {
				a, b := d[i-1], d[i]
				if b.TNs == a.TNs {
					return v(a)
				}
				return v(a) + (v(b)-v(a))*float64(t-a.TNs)/float64(b.TNs-a.TNs)
			}
		}
		return v(d[len(d)-1])
	}
	if useCounter {
		e := interp(end) - interp(start)
		return e, e >= 0
	}
	ts, ps := []int64{start}, []float64{interp(start)}
	for _, x := range d {
		if x.TNs > start && x.TNs < end {
			ts, ps = append(ts, x.TNs), append(ps, *x.PowerW)
		}
	}
	ts, ps = append(ts, end), append(ps, interp(end))
	var e float64
	for i := 1; i < len(ts); i++ {
		e += (ps[i-1] + ps[i]) / 2 * float64(ts[i]-ts[i-1]) / 1e9
	}
	return e, true
}

// telemetrySamples decodes a row's device telemetry samples for display: nil unless the file was
// read, matches the row's digest and every line is a valid sample.
func (s *snapshot) telemetrySamples(row contract.Row) []contract.TelemetrySampleDoc {
	dt := row.DeviceTelemetry
	if dt == nil {
		return nil
	}
	f := s.files[dt.Samples.Path]
	if f == nil || !f.present || f.digest != dt.Samples.Digest || len(f.raw) == 0 {
		return nil
	}
	var xs []contract.TelemetrySampleDoc
	for i, line := range bytes.Split(bytes.TrimSuffix(f.raw, []byte("\n")), []byte("\n")) {
		x, err := schemas.Decode[contract.TelemetrySampleDoc](line, fmt.Sprintf("line %d", i+1), contract.TelemetrySample)
		if err != nil {
			return nil
		}
		xs = append(xs, *x)
	}
	return xs
}
