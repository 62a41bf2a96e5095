package telemetry

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// counterReader returns one sample per read whose energy counter is the read count (J).
type counterReader struct {
	reads  atomic.Int64
	closed atomic.Bool
}

func (c *counterReader) Read(t int64, out []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc {
	n := c.reads.Add(1)
	x := newSample(t, 1, "nvml")
	x.EnergyJ = ptr(float64(n))
	return append(out, x)
}
func (c *counterReader) Close() { c.closed.Store(true) }

func TestSamplerReadsAtItsIntervalUntilStop(t *testing.T) {
	r := &counterReader{}
	epoch := time.Now()
	s := Start(5*time.Millisecond, epoch, r)
	time.Sleep(60 * time.Millisecond)
	samples, dropped := s.Stop()
	if dropped != 0 || !r.closed.Load() {
		t.Fatalf("dropped %d, closed %v", dropped, r.closed.Load())
	}
	// At least a few readings at 5 ms over 60 ms (a loaded CI host may be slow), one more at Stop.
	if len(samples) < 3 || int64(len(samples)) != r.reads.Load() {
		t.Fatalf("%d samples, %d reads", len(samples), r.reads.Load())
	}
	for i := 1; i < len(samples); i++ {
		if samples[i].TNs < samples[i-1].TNs {
			t.Fatalf("samples out of order at %d", i)
		}
	}
	if last := samples[len(samples)-1].TNs; last < (55 * time.Millisecond).Nanoseconds() {
		t.Errorf("the last sample at %d ns: Stop takes a final reading", last)
	}
	if n := r.reads.Load(); func() bool { time.Sleep(20 * time.Millisecond); return r.reads.Load() != n }() {
		t.Error("the sampler kept reading after Stop")
	}
}

func sample(tms int64, energy, power *float64, throttle ...string) contract.TelemetrySampleDoc {
	x := newSample(tms*1e6, 1, "nvml")
	x.EnergyJ, x.PowerW = energy, power
	if throttle != nil {
		x.ThrottleReasons = contract.Enums[contract.ThrottleReason](throttle)
	}
	return x
}

func f(v float64) *float64 { return &v }

func metric(t *testing.T, s Summary, name string) float64 {
	t.Helper()
	for _, m := range s.Metrics {
		if m.Name == name {
			if !m.Diagnostic {
				t.Errorf("%s is not diagnostic", name)
			}
			return m.Value
		}
	}
	t.Fatalf("no metric %s in %+v", name, s.Metrics)
	return 0
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9*math.Max(1, math.Abs(b)) }

func TestSummarizeEnergyCounter(t *testing.T) {
	// 300 W for 2 s: the counter goes from 1000 J to 1600 J; the window [0.5 s, 1.5 s] sits between
	// samples, so both bounds are interpolated: 300 J.
	xs := []contract.TelemetrySampleDoc{sample(0, f(1000), f(300)), sample(1000, f(1300), f(300), "sw_power_cap"), sample(2000, f(1600), f(300))}
	s := Summarize(xs, 500e6, 1500e6, 600)
	if e := metric(t, s, "device_energy_j"); !near(e, 300) {
		t.Errorf("energy %g, want 300", e)
	}
	if p := metric(t, s, "device_power_mean_w"); !near(p, 300) {
		t.Errorf("mean power %g, want 300", p)
	}
	if j := metric(t, s, "device_energy_per_output_token_j"); !near(j, 0.5) {
		t.Errorf("J/token %g, want 0.5", j)
	}
	// Throttled from the 1 s sample to the next: 0.5 s of it lies in the window.
	if th := metric(t, s, "device_throttled_seconds"); !near(th, 0.5) {
		t.Errorf("throttled %g s, want 0.5", th)
	}
	if !slices.Equal(s.Flags, []contract.RowDeviceTelemetryFlags{contract.RowDeviceTelemetryFlagsThrottled}) {
		t.Errorf("flags %v", s.Flags)
	}
}

func TestSummarizePowerOnly(t *testing.T) {
	// No counter (hwmon without energy1_input): power 100 W ramping to 300 W over 2 s, window
	// [0, 2 s]: the trapezoid is 400 J.
	xs := []contract.TelemetrySampleDoc{sample(0, nil, f(100)), sample(1000, nil, f(200)), sample(2000, nil, f(300))}
	s := Summarize(xs, 0, 2000e6, 0)
	if e := metric(t, s, "device_energy_j"); !near(e, 400) {
		t.Errorf("energy %g, want 400", e)
	}
	for _, m := range s.Metrics {
		if m.Name == "device_energy_per_output_token_j" {
			t.Error("J per token without output tokens")
		}
	}
	// A window the samples do not bracket: no energy, a warning, never a guess.
	s = Summarize(xs, 0, 2500e6, 10)
	if len(s.Warnings) != 1 || !strings.Contains(s.Warnings[0], "do not bracket") {
		t.Errorf("warnings %v", s.Warnings)
	}
	for _, m := range s.Metrics {
		if m.Name == "device_energy_j" {
			t.Error("energy from samples that do not bracket the window")
		}
	}
}

func TestSummarizeFlagsCounters(t *testing.T) {
	a, b := sample(0, f(0), nil), sample(1000, f(10), nil)
	a.ECCUncorrected, b.ECCUncorrected = ptr(int64(3)), ptr(int64(4))
	b.XidEvents = ptr(int64(1))
	b.Errors = []string{"GetPowerUsage: ERROR_GPU_IS_LOST"}
	s := Summarize([]contract.TelemetrySampleDoc{a, b}, 0, 1000e6, 1)
	if !slices.Equal(s.Flags, []contract.RowDeviceTelemetryFlags{contract.RowDeviceTelemetryFlagsECCUncorrectedChanged, contract.RowDeviceTelemetryFlagsXidEvent, contract.RowDeviceTelemetryFlagsTelemetryCallFailed}) {
		t.Errorf("flags %v", s.Flags)
	}
}

func TestWindowBrackets(t *testing.T) {
	var xs []contract.TelemetrySampleDoc
	for i := int64(0); i < 10; i++ {
		xs = append(xs, sample(i*100, f(float64(i)), nil))
	}
	w := Window(xs, 250e6, 520e6)
	var ts []int64
	for _, x := range w {
		ts = append(ts, x.TNs/1e6)
	}
	if !slices.Equal(ts, []int64{200, 300, 400, 500, 600}) {
		t.Errorf("window %v", ts)
	}
}

func TestHwmonReader(t *testing.T) {
	sys := t.TempDir()
	pci := filepath.Join(sys, "bus", "pci", "devices", "0000:03:00.0")
	for name, v := range map[string]string{
		"hwmon/hwmon3/power1_average": "301000000", "hwmon/hwmon3/energy1_input": "5000000", "hwmon/hwmon3/temp1_input": "71000",
		"hwmon/hwmon3/freq1_input": "2482000000", "hwmon/hwmon3/freq2_input": "1249000000", "gpu_busy_percent": "88", "mem_info_vram_used": "21474836480",
	} {
		p := filepath.Join(pci, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := NewHwmonReader(sys, map[int64]string{2: "0000:03:00.0", 3: "0000:04:00.0"})
	xs := r.Read(7, nil)
	if len(xs) != 2 {
		t.Fatalf("%d samples", len(xs))
	}
	x := xs[0]
	if x.Device != 2 || x.Source != "hwmon" || *x.PowerW != 301 || *x.EnergyJ != 5 || *x.TemperatureC != 71 || *x.SMClockMHz != 2482 || *x.MemClockMHz != 1249 || *x.GPUUtilPct != 88 || *x.MemoryUsedBytes != 21474836480 || x.MemUtilPct != nil || len(x.Errors) != 0 {
		t.Errorf("sample %+v", x)
	}
	if y := xs[1]; y.Device != 3 || y.PowerW != nil || len(y.Errors) != 1 || !strings.Contains(y.Errors[0], "no hwmon directory") {
		t.Errorf("card without hwmon: %+v", y)
	}
	// A sample validates against its contract.
	b, _ := json.Marshal(x)
	if err := schemas.CheckAs(b, "sample", contract.TelemetrySample); err != nil {
		t.Error(err)
	}
}
