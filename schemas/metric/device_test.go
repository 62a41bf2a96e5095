package metric

import (
	"math"
	"slices"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

// TestDeviceHand: the device formulas by hand. Device 0 has an energy counter 0, 100, 300 J at
// 0, 1, 2 s: over [0.5 s, 1.5 s] it is 200 - 50 = 150 J. Device 1 has power only, 100, 200, 300 W:
// trapezoids over (0.5 s, 150 W), (1 s, 200 W), (1.5 s, 250 W) give 87.5 + 112.5 = 200 J. Device 0
// is throttled from 1 s to its next sample (0.5 s of it in the window), device 1 from 0 s to 1 s
// (0.5 s in the window): the largest is 0.5 s.
func TestDeviceHand(t *testing.T) {
	xs := []DeviceSample{
		{Device: 0, TNs: 0, EnergyJ: f64(0)},
		{Device: 1, TNs: 0, PowerW: f64(100), Throttled: true},
		{Device: 0, TNs: 1e9, EnergyJ: f64(100), Throttled: true},
		{Device: 1, TNs: 1e9, PowerW: f64(200)},
		{Device: 0, TNs: 2e9, EnergyJ: f64(300)},
		{Device: 1, TNs: 2e9, PowerW: f64(300)},
	}
	s := Device(xs, 0.5e9, 1.5e9, 700)
	want := map[string]float64{"device_energy_j": 350, "device_energy_per_output_token_j": 0.5, "device_power_mean_w": 350, "device_throttled_seconds": 0.5}
	if len(s.Values) != len(want) || len(s.Warnings) != 0 {
		t.Fatalf("values %+v warnings %v", s.Values, s.Warnings)
	}
	for _, v := range s.Values {
		if w, ok := want[v.Name]; !ok || math.Abs(v.Value-w) > 1e-9 || !v.Diagnostic || v.Samples != 6 {
			t.Errorf("%+v, want %v (diagnostic, 6 samples)", v, w)
		}
		if f, ok := Lookup(v.Formula); !ok || f.Name != v.Name || f.Identity() != v.Identity() {
			t.Errorf("%s carries %+v, the catalogue says %+v", v.Name, v.Identity(), f.Identity())
		}
	}
	if !slices.Equal(s.Flags, []contract.RowDeviceTelemetryFlags{contract.RowDeviceTelemetryFlagsThrottled}) {
		t.Errorf("flags %v", s.Flags)
	}
	// A window the samples do not bracket leaves the device out (and its energy with it).
	s = Device(xs[:4], 0.5e9, 1.5e9, 0)
	if len(s.Warnings) != 2 || len(s.Values) != 1 || s.Values[0].Name != "device_throttled_seconds" {
		t.Errorf("unbracketed: values %+v warnings %v", s.Values, s.Warnings)
	}
	// Flags over [0, 2 s]: the ECC count of device 0 changes, device 1 saw an Xid event and a
	// failed call.
	flagged := []DeviceSample{
		{Device: 0, TNs: 0, ECCUncorrected: i64(0)}, {Device: 0, TNs: 2e9, ECCUncorrected: i64(1)},
		{Device: 1, TNs: 1e9, XidEvent: true, CallFailed: true},
	}
	if s := Device(flagged, 0, 2e9, 0); !slices.Equal(s.Flags, []contract.RowDeviceTelemetryFlags{contract.RowDeviceTelemetryFlagsECCUncorrectedChanged, contract.RowDeviceTelemetryFlagsXidEvent, contract.RowDeviceTelemetryFlagsTelemetryCallFailed}) {
		t.Errorf("flags %v", s.Flags)
	}
	if s := Device(xs, 1e9, 1e9, 0); len(s.Values) != 0 || len(s.Warnings) != 1 {
		t.Errorf("empty window: %+v", s)
	}
}
