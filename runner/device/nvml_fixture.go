//go:build cgo

package device

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/qualkit/qualkit/schemas"
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
}

type fixtureProber struct{ path string }

func fixtureNVML(path string) NVMLProber { return fixtureProber{path} }

func (f fixtureProber) Probe() ([]schemas.ProbedDevice, schemas.DeviceProbe) {
	lib, err := LoadNVMLFixture(f.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, schemas.DeviceProbe{Probe: ProbeNVML, Status: StatusUnsupported, Detail: "no NVML in the fixture (" + f.path + " is absent)"}
	}
	if err != nil {
		return nil, schemas.DeviceProbe{Probe: ProbeNVML, Status: StatusFailed, Detail: clipRunes(err.Error(), 512)}
	}
	return NewNVMLProber(lib).Probe()
}

// LoadNVMLFixture reads an nvml.json and returns a mock NVML library answering from it.
func LoadNVMLFixture(path string) (nvml.Interface, error) {
	raw, err := schemas.ReadFileLimited(path, 1<<20)
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
	for i, d := range fx.Devices {
		combined, err := strconv.ParseUint(d.PCIDeviceID, 0, 32)
		if err != nil {
			return nil, fmt.Errorf("NVML fixture %s: devices[%d].pci_device_id %q: want 0x<device><vendor>", path, i, d.PCIDeviceID)
		}
		devs[i] = mockDevice(d, uint32(combined))
	}
	return &mock.Interface{
		InitFunc:                   func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc:               func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) { return fx.DriverVersion, nvml.SUCCESS },
		DeviceGetCountFunc:         func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}, nil
}

func mockDevice(d NVMLFixtureDevice, combined uint32) *mock.Device {
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
	return &mock.Device{
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
}
