package verify

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// telemetryRow gives the frozen receipt's first serving row device telemetry: device 1 (an H100)
// sampled 1 ms before the row's window, in its middle and 1 ms after, its energy counter
// advancing at 400 W; and the device metrics those samples give. edit changes the samples first.
func telemetryRow(t *testing.T, edit func([]contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc) (*load.Snapshot, *contract.Row, []*record.Record, float64) {
	t.Helper()
	s := frozenSnapshot(t)
	s.RC.Environment.Devices = []contract.ProbedDevice{cpuDevice(), h100(false)}
	var row *contract.Row
	var cr *contract.CaseResultDoc
	for _, p := range slices.Sorted(load.MapKeys(s.CaseResults)) {
		if c := s.CaseResults[p]; len(c.Rows) > 0 && row == nil {
			cr, row = c, &c.Rows[0]
		}
	}
	if row == nil {
		t.Fatal("the frozen evidence has no serving row")
	}
	recs := check.RowRecords(&finding.Collector{}, cr, *row, s.Files[row.Records.Path].Records)
	start, end, tokens, ok := rowcheck.RecordWindow(recs)
	if !ok || tokens == 0 {
		t.Fatalf("window %d..%d, %d tokens", start, end, tokens)
	}
	at := func(tns int64) contract.TelemetrySampleDoc {
		e, p := 400*float64(tns)/1e9, 400.0
		return contract.TelemetrySampleDoc{Schema: "qualkit.telemetry-sample.v1", TNs: tns, Device: 1, Source: "nvml", PowerW: &p, EnergyJ: &e, ThrottleReasons: []contract.ThrottleReason{}, Errors: []string{}}
	}
	xs := []contract.TelemetrySampleDoc{at(start - 1e6), at((start + end) / 2), at(end + 1e6)}
	if edit != nil {
		xs = edit(xs)
	}
	var raw bytes.Buffer
	for _, x := range xs {
		b, _ := json.Marshal(x)
		raw.Write(append(b, '\n'))
	}
	const path = ".qualification/runs/x/rows/c0001-r000.telemetry.jsonl"
	s.Files[path] = &load.File{Path: path, Kind: "device_telemetry", Local: true, Present: true, Raw: raw.Bytes(), Digest: evidence.DigestOf(raw.Bytes())}
	row.DeviceTelemetry = &contract.RowDeviceTelemetry{Samples: contract.FileRef{Path: path, Digest: evidence.DigestOf(raw.Bytes())}, IntervalMs: 100, Devices: []int64{1}, Flags: []contract.RowDeviceTelemetryFlags{}, Warnings: []string{}}
	energy := 400 * float64(end-start) / 1e9
	m := func(name string, v float64, unit, agg, formula string) contract.Metric {
		n := int64(len(xs))
		return contract.Metric{Name: name, Value: v, Unit: unit, Aggregation: contract.Aggregation(agg), Direction: "lower_is_better", Formula: formula, Samples: &n, Diagnostic: true}
	}
	row.Metrics = append(row.Metrics,
		m("device_energy_j", energy, "J", "sum", "device_energy.v1"),
		m("device_energy_per_output_token_j", energy/float64(tokens), "J/token", "exact", "device_energy_per_output_token.v1"),
		m("device_power_mean_w", 400, "W", "mean", "device_power_mean.v1"),
		m("device_throttled_seconds", 0, "s", "max", "device_throttled_seconds.v1"))
	return s, row, recs, energy
}

func rowTelemetryFindings(s *load.Snapshot, row *contract.Row, recs []*record.Record) []Finding {
	c := &finding.Collector{Check: CheckTolerances}
	rowcheck.RowTelemetry(s, c, "case-result.json", "/rows/0", *row, recs, s.Policy.Recompute)
	return c.Out
}

func TestRowTelemetryRecomputed(t *testing.T) {
	s, row, recs, energy := telemetryRow(t, nil)
	if f := rowTelemetryFindings(s, row, recs); len(f) != 0 {
		t.Fatalf("findings %v", f)
	}
	if energy <= 0 || math.IsNaN(energy) {
		t.Fatalf("energy %g", energy)
	}
	for _, tc := range []struct {
		name string
		edit func(*load.Snapshot, *contract.Row)
		want *Reason
	}{
		{"mean power overstated", func(s *load.Snapshot, r *contract.Row) { r.Metrics[len(r.Metrics)-2].Value = 440 }, ErrMetricMismatch},
		{"energy missing", func(s *load.Snapshot, r *contract.Row) {
			r.Metrics = slices.Delete(r.Metrics, len(r.Metrics)-4, len(r.Metrics)-3)
		}, ErrMetricMismatch},
		{"a flag the samples do not show", func(s *load.Snapshot, r *contract.Row) {
			r.DeviceTelemetry.Flags = []contract.RowDeviceTelemetryFlags{contract.RowDeviceTelemetryFlagsThrottled}
		}, ErrRowMismatch},
		{"device metrics without samples", func(s *load.Snapshot, r *contract.Row) { r.DeviceTelemetry = nil }, ErrRowMismatch},
		{"samples digest", func(s *load.Snapshot, r *contract.Row) {
			r.DeviceTelemetry.Samples.Digest = evidence.DigestOf([]byte("x"))
		}, ErrDigestMismatch},
		{"not diagnostic", func(s *load.Snapshot, r *contract.Row) { r.Metrics[len(r.Metrics)-1].Diagnostic = false }, ErrFormulaMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, row, recs, _ := telemetryRow(t, nil)
			tc.edit(s, row)
			f := rowTelemetryFindings(s, row, recs)
			if len(f) == 0 || !errors.Is(f[0].Err, tc.want) {
				t.Errorf("findings %v, want %s", f, tc.want.Code())
			}
		})
	}
	// Samples that do not support the recorded numbers: throttling the runner did not report, a
	// device the row did not sample, a line that breaks the contract.
	for _, tc := range []struct {
		name string
		edit func([]contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc
		want *Reason
	}{
		{"throttled samples", func(xs []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc {
			xs[1].ThrottleReasons = []contract.ThrottleReason{contract.ThrottleReasonHwSlowdown}
			return xs
		}, ErrRowMismatch},
		{"a device not sampled", func(xs []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc { xs[1].Device = 5; return xs }, ErrRowMismatch},
		{"an invalid line", func(xs []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc { xs[1].Source = "dcgm"; return xs }, ErrSchemaViolation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, row, recs, _ := telemetryRow(t, tc.edit)
			f := rowTelemetryFindings(s, row, recs)
			if len(f) == 0 || !errors.Is(f[0].Err, tc.want) {
				t.Errorf("findings %v, want %s", f, tc.want.Code())
			}
		})
	}
}

// TestRecomputeDevicePowerOnly: without an energy counter the power is integrated; the values
// are the ones the runner's tests expect of the same samples (runner/telemetry).
func TestRecomputeDevicePowerOnly(t *testing.T) {
	p := func(tms int64, w float64) contract.TelemetrySampleDoc {
		return contract.TelemetrySampleDoc{TNs: tms * 1e6, Device: 1, PowerW: &w, ThrottleReasons: []contract.ThrottleReason{}}
	}
	got, flags := rowcheck.RecomputeDevice([]contract.TelemetrySampleDoc{p(0, 100), p(1000, 200), p(2000, 300)}, 0, 2000e6, 0)
	if math.Abs(got["device_energy_j"]-400) > 1e-9 || math.Abs(got["device_power_mean_w"]-200) > 1e-9 || len(flags) != 0 {
		t.Errorf("%v %v", got, flags)
	}
	if _, ok := got["device_energy_per_output_token_j"]; ok {
		t.Error("J per token without tokens")
	}
}
