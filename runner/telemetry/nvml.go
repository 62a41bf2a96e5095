//go:build cgo

package telemetry

import (
	"fmt"
	"slices"
	"sort"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/qualkit/qualkit/schemas/contract"
)

// throttleBits names NVML's clock event (throttle) reason bits; GpuIdle (0x1) is not a throttle.
var throttleBits = []struct {
	bit  uint64
	name contract.ThrottleReason
}{
	{nvml.ClocksEventReasonApplicationsClocksSetting, contract.ThrottleReasonApplicationsClocksSetting},
	{nvml.ClocksEventReasonSwPowerCap, contract.ThrottleReasonSwPowerCap},
	{nvml.ClocksThrottleReasonHwSlowdown, contract.ThrottleReasonHwSlowdown},
	{nvml.ClocksEventReasonSyncBoost, contract.ThrottleReasonSyncBoost},
	{nvml.ClocksEventReasonSwThermalSlowdown, contract.ThrottleReasonSwThermalSlowdown},
	{nvml.ClocksThrottleReasonHwThermalSlowdown, contract.ThrottleReasonHwThermalSlowdown},
	{nvml.ClocksThrottleReasonHwPowerBrakeSlowdown, contract.ThrottleReasonHwPowerBrakeSlowdown},
	{nvml.ClocksEventReasonDisplayClockSetting, contract.ThrottleReasonDisplayClockSetting},
}

// ThrottleNames lists the names of the active reason bits, sorted.
func ThrottleNames(bits uint64) []contract.ThrottleReason {
	out := []contract.ThrottleReason{}
	for _, b := range throttleBits {
		if bits&b.bit != 0 {
			out = append(out, b.name)
		}
	}
	slices.Sort(out)
	return out
}

type nvmlReader struct {
	lib    nvml.Interface
	devs   []nvmlDev
	events nvml.EventSet
}

type nvmlDev struct {
	index int64
	h     nvml.Device
	// xid is false where critical Xid events cannot be registered for the device.
	xid     bool
	pending int64
}

// NewNVMLReader reads the NVIDIA devices at the given identifiers (receipt device index -> UUID,
// or PCI bus id when the device has no UUID) through lib: nvml.New() for the library, go-nvml's
// mock in tests. It holds an NVML reference until Close.
func NewNVMLReader(lib nvml.Interface, ids map[int64]string) (Reader, error) {
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvmlInit: %v", ret)
	}
	r := &nvmlReader{lib: lib}
	var idx []int64
	for i := range ids {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	if set, ret := lib.EventSetCreate(); ret == nvml.SUCCESS {
		r.events = set
	}
	for _, i := range idx {
		h, ret := lib.DeviceGetHandleByUUID(ids[i])
		if ret != nvml.SUCCESS {
			h, ret = lib.DeviceGetHandleByPciBusId(ids[i])
		}
		if ret != nvml.SUCCESS {
			r.Close()
			return nil, fmt.Errorf("device %d (%s): no NVML handle: %v", i, ids[i], ret)
		}
		d := nvmlDev{index: i, h: h}
		if r.events != nil {
			d.xid = h.RegisterEvents(nvml.EventTypeXidCriticalError, r.events) == nvml.SUCCESS
		}
		r.devs = append(r.devs, d)
	}
	return r, nil
}

func (r *nvmlReader) Close() {
	if r.events != nil {
		r.events.Free()
		r.events = nil
	}
	r.lib.Shutdown()
}

// drainXid counts the critical Xid events queued since the last reading, per device.
func (r *nvmlReader) drainXid() {
	if r.events == nil {
		return
	}
	for n := 0; n < 1024; n++ {
		ev, ret := r.events.Wait(0)
		if ret != nvml.SUCCESS {
			return
		}
		for i := range r.devs {
			if len(r.devs) == 1 || r.devs[i].h == ev.Device {
				r.devs[i].pending++
			}
		}
	}
}

func (r *nvmlReader) Read(t int64, out []contract.TelemetrySampleDoc) []contract.TelemetrySampleDoc {
	r.drainXid()
	for i := range r.devs {
		d := &r.devs[i]
		x := newSample(t, d.index, contract.SampleSourceNVML)
		ok := func(call string, ret nvml.Return) bool {
			if ret == nvml.SUCCESS {
				return true
			}
			if ret != nvml.ERROR_NOT_SUPPORTED && len(x.Errors) < 16 {
				x.Errors = append(x.Errors, call+": "+ret.Error())
			}
			return false
		}
		h := d.h
		if mw, ret := h.GetPowerUsage(); ok("GetPowerUsage", ret) {
			x.PowerW = ptr(float64(mw) / 1000)
		}
		if mj, ret := h.GetTotalEnergyConsumption(); ok("GetTotalEnergyConsumption", ret) {
			x.EnergyJ = ptr(float64(mj) / 1000)
		}
		if mhz, ret := h.GetClockInfo(nvml.CLOCK_SM); ok("GetClockInfo(SM)", ret) {
			x.SMClockMHz = ptr(int64(mhz))
		}
		if mhz, ret := h.GetClockInfo(nvml.CLOCK_MEM); ok("GetClockInfo(MEM)", ret) {
			x.MemClockMHz = ptr(int64(mhz))
		}
		if u, ret := h.GetUtilizationRates(); ok("GetUtilizationRates", ret) && u.Gpu <= 100 && u.Memory <= 100 {
			x.GPUUtilPct, x.MemUtilPct = ptr(int64(u.Gpu)), ptr(int64(u.Memory))
		}
		if m, ret := h.GetMemoryInfo(); ok("GetMemoryInfo", ret) && m.Used < 1<<62 {
			x.MemoryUsedBytes = ptr(int64(m.Used))
		}
		if c, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); ok("GetTemperature", ret) {
			x.TemperatureC = ptr(float64(c))
		}
		if bits, ret := h.GetCurrentClocksEventReasons(); ok("GetCurrentClocksEventReasons", ret) {
			x.ThrottleReasons = ThrottleNames(bits)
		}
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); ok("GetTotalEccErrors", ret) && n < 1<<62 {
			x.ECCUncorrected = ptr(int64(n))
		}
		if d.xid {
			x.XidEvents = ptr(d.pending)
			d.pending = 0
		}
		out = append(out, x)
	}
	return out
}
