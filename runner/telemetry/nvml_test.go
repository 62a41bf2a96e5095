//go:build cgo

package telemetry

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/qualkit/qualkit/schemas/contract"
)

// busyDGX is go-nvml's mock DGX H100 with telemetry: every device draws 400 W, its energy counter
// advancing 400 mJ per reading; device 1 is power-capped. xid queues critical Xid events for the
// event set. fail, when set, is the power reading's result from then on (a GPU lost mid-run).
type busyDGX struct {
	*server.Server
	mu    sync.Mutex
	xid   []nvml.EventData
	fail  nvml.Return
	reads int
}

func newBusyDGX() *busyDGX {
	b := &busyDGX{Server: dgxh100.New()}
	set := &mock.EventSet{
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			b.mu.Lock()
			defer b.mu.Unlock()
			if len(b.xid) == 0 {
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			ev := b.xid[0]
			b.xid = b.xid[1:]
			return ev, nvml.SUCCESS
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	b.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS }
	for i, d := range b.Devices {
		md := d.(*server.Device)
		capped := i == 1
		var energy uint64
		md.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
		md.GetPowerUsageFunc = func() (uint32, nvml.Return) {
			b.mu.Lock()
			defer b.mu.Unlock()
			b.reads++
			if b.fail != nvml.SUCCESS {
				return 0, b.fail
			}
			return 400000, nvml.SUCCESS
		}
		md.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { energy += 400; return energy, nvml.SUCCESS }
		md.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if c == nvml.CLOCK_MEM {
				return 2619, nvml.SUCCESS
			}
			return 1980, nvml.SUCCESS
		}
		md.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 97, Memory: 61}, nvml.SUCCESS }
		md.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 64, nvml.SUCCESS }
		md.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
			if capped {
				return nvml.ClocksEventReasonSwPowerCap | nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS
			}
			return nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS
		}
		md.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		}
	}
	return b
}

func uuidOf(t *testing.T, d nvml.Device) string {
	u, ret := d.GetUUID()
	if ret != nvml.SUCCESS {
		t.Fatal(ret)
	}
	return u
}

func TestNVMLReader(t *testing.T) {
	b := newBusyDGX()
	r, err := NewNVMLReader(b, map[int64]string{1: uuidOf(t, b.Devices[0]), 2: uuidOf(t, b.Devices[1])})
	if err != nil {
		t.Fatal(err)
	}
	b.xid = []nvml.EventData{{Device: b.Devices[1], EventType: nvml.EventTypeXidCriticalError, EventData: 79}}
	xs := r.Read(5, nil)
	r.Close()
	if len(xs) != 2 || xs[0].Device != 1 || xs[1].Device != 2 {
		t.Fatalf("samples %+v", xs)
	}
	a := xs[0]
	if *a.PowerW != 400 || *a.EnergyJ != 0.4 || *a.SMClockMHz != 1980 || *a.MemClockMHz != 2619 || *a.GPUUtilPct != 97 || *a.MemUtilPct != 61 || *a.TemperatureC != 64 || a.MemoryUsedBytes == nil {
		t.Errorf("reading %+v", a)
	}
	// Idle is not a throttle; ECC not supported is null, not an error.
	if len(a.ThrottleReasons) != 0 || a.ECCUncorrected != nil || len(a.Errors) != 0 || *a.XidEvents != 0 {
		t.Errorf("device 1: throttle %v, ecc %v, errors %v, xid %v", a.ThrottleReasons, a.ECCUncorrected, a.Errors, *a.XidEvents)
	}
	if c := xs[1]; !slices.Equal(c.ThrottleReasons, []contract.ThrottleReason{contract.ThrottleReasonSwPowerCap}) || *c.XidEvents != 1 {
		t.Errorf("device 2: throttle %v, xid %d", c.ThrottleReasons, *c.XidEvents)
	}
	if len(b.ShutdownCalls()) != 1 {
		t.Errorf("Shutdown called %d times", len(b.ShutdownCalls()))
	}
}

// TestNVMLCallFailsMidRun: a device lost while the sampler runs: its readings name the failed
// call and leave the value null; sampling goes on, and the row is flagged.
func TestNVMLCallFailsMidRun(t *testing.T) {
	b := newBusyDGX()
	r, err := NewNVMLReader(b, map[int64]string{1: uuidOf(t, b.Devices[0])})
	if err != nil {
		t.Fatal(err)
	}
	s := Start(2*time.Millisecond, time.Now(), r)
	time.Sleep(20 * time.Millisecond)
	b.mu.Lock()
	b.fail = nvml.ERROR_GPU_IS_LOST
	b.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	xs, _ := s.Stop()
	var ok, failed int
	for _, x := range xs {
		switch {
		case x.PowerW != nil && len(x.Errors) == 0:
			ok++
		case x.PowerW == nil && slices.Equal(x.Errors, []string{"GetPowerUsage: ERROR_GPU_IS_LOST"}):
			failed++
		default:
			t.Fatalf("reading %+v", x)
		}
	}
	if ok == 0 || failed == 0 {
		t.Fatalf("%d good readings, %d failed: want both", ok, failed)
	}
	sum := Summarize(xs, xs[0].TNs, xs[len(xs)-1].TNs, 1)
	if !slices.Contains(sum.Flags, contract.RowDeviceTelemetryFlagsTelemetryCallFailed) {
		t.Errorf("flags %v", sum.Flags)
	}
}

func TestNVMLReaderUnknownDevice(t *testing.T) {
	b := newBusyDGX()
	if _, err := NewNVMLReader(b, map[int64]string{1: "GPU-not-there"}); err == nil || !strings.Contains(err.Error(), "no NVML handle") {
		t.Errorf("err %v", err)
	}
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	if _, err := NewNVMLReader(lib, map[int64]string{1: "x"}); err == nil || !strings.Contains(err.Error(), "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("missing library: %v", err)
	}
}

func TestThrottleNames(t *testing.T) {
	got := ThrottleNames(nvml.ClocksEventReasonGpuIdle | nvml.ClocksThrottleReasonHwSlowdown | nvml.ClocksEventReasonSwThermalSlowdown)
	if !slices.Equal(got, []contract.ThrottleReason{"hw_slowdown", "sw_thermal_slowdown"}) {
		t.Errorf("%v", got)
	}
}
