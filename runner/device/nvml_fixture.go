//go:build cgo

package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// NVMLFixture is a fixture's nvml.json: what a fake NVML library answers. It drives go-nvml's mock
// Interface, so the real probe code runs against it.
type NVMLFixture struct {
	DriverVersion string              `json:"driver_version"`
	Devices       []NVMLFixtureDevice `json:"devices"`
}

// NVMLFixtureDevice is one fake device; PCIDeviceID is NVML's combined id (device<<16 | vendor),
// e.g. "0x233010de"; MIGMode is 0 or 1, or null when MIG is not supported.
type NVMLFixtureDevice struct {
	Name              string `json:"name"`
	UUID              string `json:"uuid"`
	Serial            string `json:"serial"`
	PCIBusID          string `json:"pci_bus_id"`
	PCIDeviceID       string `json:"pci_device_id"`
	MemoryTotalBytes  uint64 `json:"memory_total_bytes"`
	ComputeCapability [2]int `json:"compute_capability"`
	MIGMode           *int   `json:"mig_mode"`
	// Telemetry, when present, is what every reading returns; the energy counter advances at
	// PowerMW from the moment the fixture is loaded.
	Telemetry *NVMLFixtureTelemetry `json:"telemetry"`
}

// NVMLFixtureTelemetry is a fake device's constant readings.
type NVMLFixtureTelemetry struct {
	PowerMW        uint32 `json:"power_mw"`
	SMClockMHz     uint32 `json:"sm_clock_mhz"`
	MemClockMHz    uint32 `json:"mem_clock_mhz"`
	GPUUtilPct     uint32 `json:"gpu_util_pct"`
	MemUtilPct     uint32 `json:"mem_util_pct"`
	MemoryUsed     uint64 `json:"memory_used_bytes"`
	TemperatureC   uint32 `json:"temperature_c"`
	ThrottleBits   uint64 `json:"throttle_bits"`
	ECCUncorrected uint64 `json:"ecc_uncorrected"`
}

// NVMLLibrary is the NVML the probes and the telemetry sampler use: the fixture's nvml.json
// when fixture is set (nil when it has none), else the library, loaded at run time.
func NVMLLibrary(fixture string) nvml.Interface {
	if fixture == "" {
		return nvml.New()
	}
	lib, err := LoadNVMLFixture(filepath.Join(fixture, "nvml.json"))
	if err != nil {
		return nil
	}
	return lib
}

type fixtureProber struct{ path string }

func fixtureNVML(path string) NVMLProber { return fixtureProber{path} }

func (f fixtureProber) Probe() ([]contract.ProbedDevice, contract.DeviceProbe) {
	lib, err := LoadNVMLFixture(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, contract.DeviceProbe{Probe: contract.DeviceProbeProbeNVML, Status: contract.DeviceProbeStatusUnsupported, Detail: "no NVML in the fixture (" + f.path + " is absent)"}
	}
	if err != nil {
		return nil, contract.DeviceProbe{Probe: contract.DeviceProbeProbeNVML, Status: contract.DeviceProbeStatusFailed, Detail: clipRunes(err.Error(), 512)}
	}
	return NewNVMLProber(lib).Probe()
}

// LoadNVMLFixture reads an nvml.json and returns a mock NVML library answering from it.
func LoadNVMLFixture(path string) (nvml.Interface, error) {
	raw, err := evidence.ReadFileLimited(path, 1<<20)
	if err != nil {
		return nil, err
	}
	var fx NVMLFixture
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&fx); err != nil {
		return nil, fmt.Errorf("NVML fixture %s: %v", path, err)
	}
	devs := make([]nvml.Device, len(fx.Devices))
	loaded := time.Now()
	for i, d := range fx.Devices {
		combined, err := strconv.ParseUint(d.PCIDeviceID, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("NVML fixture %s: devices[%d].pci_device_id %q: want 0x<device><vendor>", path, i, d.PCIDeviceID)
		}
		devs[i] = mockDevice(d, uint32(combined), loaded)
	}
	byID := func(id string) (nvml.Device, nvml.Return) {
		for i, d := range fx.Devices {
			if id != "" && (d.UUID == id || d.PCIBusID == id) {
				return devs[i], nvml.SUCCESS
			}
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	return &mock.Interface{
		InitFunc:                      func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:                  func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc:    func() (string, nvml.Return) { return fx.DriverVersion, nvml.SUCCESS },
		DeviceGetCountFunc:            func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByUUIDFunc:     byID,
		DeviceGetHandleByPciBusIdFunc: byID,
		EventSetCreateFunc:            func() (nvml.EventSet, nvml.Return) { return nil, nvml.ERROR_NOT_SUPPORTED },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}, nil
}

func mockDevice(d NVMLFixtureDevice, combined uint32, loaded time.Time) *mock.Device {
	str := func(s string) func() (string, nvml.Return) {
		return func() (string, nvml.Return) {
			if s == "" {
				return "", nvml.ERROR_NOT_SUPPORTED
			}
			return s, nvml.SUCCESS
		}
	}
	var bus [32]int8
	for i := 0; i < len(d.PCIBusID) && i < 31; i++ {
		bus[i] = int8(d.PCIBusID[i])
	}
	dev := &mock.Device{
		GetNameFunc:   str(d.Name),
		GetUUIDFunc:   str(d.UUID),
		GetSerialFunc: str(d.Serial),
		GetPciInfoFunc: func() (nvml.PciInfo, nvml.Return) {
			return nvml.PciInfo{PciDeviceId: combined, BusId: bus}, nvml.SUCCESS
		},
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: d.MemoryTotalBytes}, nvml.SUCCESS
		},
		GetCudaComputeCapabilityFunc: func() (int, int, nvml.Return) {
			return d.ComputeCapability[0], d.ComputeCapability[1], nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if d.MIGMode == nil {
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			}
			return *d.MIGMode, *d.MIGMode, nvml.SUCCESS
		},
	}
	tel := d.Telemetry
	if tel == nil {
		tel = &NVMLFixtureTelemetry{}
	}
	dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return tel.PowerMW, nvml.SUCCESS }
	dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) {
		return uint64(float64(tel.PowerMW) * time.Since(loaded).Seconds()), nvml.SUCCESS
	}
	dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
		if c == nvml.CLOCK_MEM {
			return tel.MemClockMHz, nvml.SUCCESS
		}
		return tel.SMClockMHz, nvml.SUCCESS
	}
	dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
		return nvml.Utilization{Gpu: tel.GPUUtilPct, Memory: tel.MemUtilPct}, nvml.SUCCESS
	}
	dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
		return nvml.Memory{Total: d.MemoryTotalBytes, Used: tel.MemoryUsed}, nvml.SUCCESS
	}
	dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return tel.TemperatureC, nvml.SUCCESS }
	dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) { return tel.ThrottleBits, nvml.SUCCESS }
	dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
		return tel.ECCUncorrected, nvml.SUCCESS
	}
	return dev
}
