package rowcheck

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// deviceFormulas are the row's device metrics, by name (docs/metrics.md, "Device telemetry"):
// the catalogue's diagnostic device formulas.
var deviceFormulas = func() map[string]string {
	out := map[string]string{}
	for _, id := range []string{metric.DeviceEnergy, metric.DeviceEnergyPerOutputToken, metric.DevicePowerMean, metric.DeviceThrottledSeconds} {
		f, _ := metric.Lookup(id)
		out[f.Name] = f.ID
	}
	return out
}()

// RowTelemetry recomputes a row's device metrics and flags from its telemetry samples and
// its request records (window and output tokens) with the catalogue's metric.Device.
func RowTelemetry(s *load.Snapshot, c *finding.Collector, path, base string, row contract.Row, recs []*record.Record, tol policy.Tolerance) {
	dt := row.DeviceTelemetry
	var recorded []contract.Metric
	for _, m := range row.Metrics {
		if _, ok := deviceFormulas[m.Name]; ok {
			recorded = append(recorded, m)
		}
	}
	if dt == nil {
		if len(recorded) > 0 {
			c.Add(path, base+"/metrics", reason.ErrRowMismatch, "%s without device_telemetry samples to recompute it from", recorded[0].Name)
		}
		return
	}
	f := s.Files[dt.Samples.Path]
	if f == nil || !f.Present || f.Raw == nil {
		c.Note("device telemetry %s unreadable: the device metrics of %s%s not recomputed", dt.Samples.Path, path, base)
		return
	}
	if f.Digest != dt.Samples.Digest {
		c.Add(path, base+"/device_telemetry/samples/digest", reason.ErrDigestMismatch, "%s, the file hashes to %s", dt.Samples.Digest, f.Digest)
		return
	}
	ndev := int64(len(s.RC.Environment.Devices))
	var xs []contract.TelemetrySampleDoc
	for i, line := range bytes.Split(bytes.TrimSuffix(f.Raw, []byte("\n")), []byte("\n")) {
		if len(line) == 0 && len(f.Raw) == 0 {
			break
		}
		px, err := schemas.Decode[contract.TelemetrySampleDoc](line, fmt.Sprintf("%s line %d", dt.Samples.Path, i+1), contract.TelemetrySample)
		if err != nil {
			c.Add(dt.Samples.Path, finding.Pointer(i), reason.ErrSchemaViolation, "%v", err)
			return
		}
		x := *px
		if x.Device >= ndev || !slices.Contains(dt.Devices, x.Device) {
			c.Add(dt.Samples.Path, finding.Pointer(i, "device"), reason.ErrRowMismatch, "device %d is not among the row's sampled devices %v (the receipt lists %d devices)", x.Device, dt.Devices, ndev)
			return
		}
		xs = append(xs, x)
	}
	start, end, tokens, ok := RecordWindow(recs)
	if !ok {
		if len(recorded) > 0 {
			c.Add(path, base+"/metrics", reason.ErrRowMismatch, "device metrics for a row without a measured window")
		}
		return
	}
	want, flags := RecomputeDevice(xs, start, end, tokens)
	if !slices.Equal(nonNilStrings(dt.Flags), flags) {
		c.Add(path, base+"/device_telemetry/flags", reason.ErrRowMismatch, "flags %v, the samples say %v", dt.Flags, flags)
	}
	for name, v := range want {
		i := slices.IndexFunc(recorded, func(m contract.Metric) bool { return m.Name == name })
		if i < 0 {
			c.Add(path, base+"/metrics", reason.ErrMetricMismatch, "%s missing: the samples give %s", name, record.FmtFloat(v))
			continue
		}
		m := recorded[i]
		if m.Formula != deviceFormulas[name] || !m.Diagnostic {
			c.Add(path, base+"/metrics", reason.ErrFormulaMismatch, "%s: formula %s (diagnostic %v), want %s (diagnostic)", name, m.Formula, m.Diagnostic, deviceFormulas[name])
		}
		if !record.Within(m.Value, v, tol) {
			c.Add(path, base+"/metrics", reason.ErrMetricMismatch, "%s %s, the samples say %s", name, record.FmtFloat(m.Value), record.FmtFloat(v))
		}
	}
	for _, m := range recorded {
		if _, ok := want[m.Name]; !ok {
			c.Add(path, base+"/metrics", reason.ErrMetricMismatch, "%s %s: the samples do not give it", m.Name, record.FmtFloat(m.Value))
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
// the completion tokens of its measured requests with usage (metric.DeviceWindow).
func RecordWindow(recs []*record.Record) (start, end, tokens int64, ok bool) {
	reqs, _ := record.MeasuredRequests(recs)
	return metric.DeviceWindow(reqs)
}

// recomputeDevice evaluates device_energy.v1, device_energy_per_output_token.v1,
// device_power_mean.v1 and device_throttled_seconds.v1 and the flags over [start, end] with
// metric.Device: the values by name, and the flags (never nil).
func RecomputeDevice(xs []contract.TelemetrySampleDoc, start, end, tokens int64) (map[string]float64, []string) {
	d := metric.Device(metric.DeviceSamplesOf(xs), start, end, tokens)
	out := map[string]float64{}
	for _, v := range d.Values {
		out[v.Name] = v.Value
	}
	return out, nonNilStrings(d.Flags)
}

// telemetrySamples decodes a row's device telemetry samples for display: nil unless the file was
// read, matches the row's digest and every line is a valid sample.
func TelemetrySamples(s *load.Snapshot, row contract.Row) []contract.TelemetrySampleDoc {
	dt := row.DeviceTelemetry
	if dt == nil {
		return nil
	}
	f := s.Files[dt.Samples.Path]
	if f == nil || !f.Present || f.Digest != dt.Samples.Digest || len(f.Raw) == 0 {
		return nil
	}
	var xs []contract.TelemetrySampleDoc
	for i, line := range bytes.Split(bytes.TrimSuffix(f.Raw, []byte("\n")), []byte("\n")) {
		x, err := schemas.Decode[contract.TelemetrySampleDoc](line, fmt.Sprintf("line %d", i+1), contract.TelemetrySample)
		if err != nil {
			return nil
		}
		xs = append(xs, *x)
	}
	return xs
}
