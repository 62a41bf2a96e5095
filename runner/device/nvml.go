//go:build cgo

package device

import (
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/qualkit/qualkit/schemas/contract"
)

// NewNVMLProber identifies NVIDIA devices through lib: nvml.New() loads libnvidia-ml at run time;
// tests pass go-nvml's mock.Interface.
func NewNVMLProber(lib nvml.Interface) NVMLProber { return nvmlProber{lib: lib} }

func libraryNVML() NVMLProber { return nvmlProber{lib: nvml.New()} }

type nvmlProber struct{ lib nvml.Interface }

// Probe initialises NVML, reads the driver version and each device's identity, and shuts NVML
// down. A missing library or driver is "unsupported"; a call that fails part way is "failed" and
// the devices identified before it are kept.
func (n nvmlProber) Probe() ([]contract.ProbedDevice, contract.DeviceProbe) {
	p := contract.DeviceProbe{Probe: contract.DeviceProbeProbeNVML}
	switch ret := n.lib.Init(); ret {
	case nvml.SUCCESS:
	case nvml.ERROR_LIBRARY_NOT_FOUND:
		p.Status, p.Detail = contract.DeviceProbeStatusUnsupported, "no NVML on this host (libnvidia-ml.so.1 could not be loaded)"
		return nil, p
	case nvml.ERROR_DRIVER_NOT_LOADED:
		p.Status, p.Detail = contract.DeviceProbeStatusUnsupported, "NVML is installed but the NVIDIA kernel driver is not loaded"
		return nil, p
	default:
		p.Status, p.Detail = contract.DeviceProbeStatusFailed, "nvmlInit: "+ret.Error()
		return nil, p
	}
	defer n.lib.Shutdown()
	fail := func(devs []contract.ProbedDevice, format string, a ...any) ([]contract.ProbedDevice, contract.DeviceProbe) {
		p.Status, p.Detail = contract.DeviceProbeStatusFailed, clipRunes(fmt.Sprintf(format, a...), 512)
		return devs, p
	}
	driver, ret := n.lib.SystemGetDriverVersion()
	if ret != nvml.SUCCESS {
		return fail(nil, "nvmlSystemGetDriverVersion: %v", ret)
	}
	driver = clipRunes(driver, 128)
	count, ret := n.lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		return fail(nil, "nvmlDeviceGetCount: %v", ret)
	}
	var devs []contract.ProbedDevice
	var notes []string
	for i := 0; i < count && i < 64; i++ {
		h, ret := n.lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			return fail(devs, "NVML driver %s, %d devices: device %d: nvmlDeviceGetHandleByIndex: %v (%d identified before it)", driver, count, i, ret, len(devs))
		}
		d, note, err := nvmlIdentity(h, driver)
		if err != nil {
			return fail(devs, "NVML driver %s, %d devices: device %d: %v (%d identified before it)", driver, count, i, err, len(devs))
		}
		if note != "" {
			notes = append(notes, fmt.Sprintf("device %d: %s", i, note))
		}
		devs = append(devs, d)
	}
	if len(devs) == 0 {
		p.Status, p.Detail = contract.DeviceProbeStatusNone, "NVML driver "+driver+" reports no device"
		return nil, p
	}
	p.Status = contract.DeviceProbeStatusFound
	p.Detail = fmt.Sprintf("%d device(s), driver %s", len(devs), driver)
	if len(notes) > 0 {
		p.Detail += "; " + strings.Join(notes, "; ")
	}
	p.Detail = clipRunes(p.Detail, 512)
	return devs, p
}

// nvmlIdentity reads one device. Its name is required; every other attribute is left out when
// the device does not support it, and an error other than "not supported" is noted.
func nvmlIdentity(h nvml.Device, driver string) (contract.ProbedDevice, string, error) {
	name, ret := h.GetName()
	if ret != nvml.SUCCESS || strings.TrimSpace(name) == "" {
		return contract.ProbedDevice{}, "", fmt.Errorf("nvmlDeviceGetName: %v", ret)
	}
	d := contract.ProbedDevice{Kind: contract.ProbedDeviceKindGPU, Vendor: "nvidia", Model: clipRunes(strings.TrimSpace(name), 256), APIFamilies: []contract.Backend{contract.BackendCUDA},
		Driver: contract.DeviceDriver{Name: "nvidia", Version: ptr(driver)}, Probe: contract.ProbedDeviceProbeNVML}
	var notes []string
	optional := func(call string, ret nvml.Return) bool {
		if ret == nvml.SUCCESS {
			return true
		}
		if ret != nvml.ERROR_NOT_SUPPORTED {
			notes = append(notes, call+": "+ret.Error())
		}
		return false
	}
	ids := &contract.DeviceIdentifiers{}
	if uuid, ret := h.GetUUID(); optional("GetUUID", ret) && uuid != "" {
		ids.UUID = clipRunes(uuid, 128)
	}
	if serial, ret := h.GetSerial(); optional("GetSerial", ret) && serial != "" {
		ids.Serial = clipRunes(serial, 128)
	}
	if pci, ret := h.GetPciInfo(); optional("GetPciInfo", ret) {
		d.PCI = &contract.PCIIdentity{VendorID: fmt.Sprintf("0x%04x", pci.PciDeviceId&0xffff), DeviceID: fmt.Sprintf("0x%04x", pci.PciDeviceId>>16)}
		if bus := cString(pci.BusId[:]); pciBus.MatchString(bus) {
			ids.PCIBusID = strings.ToLower(bus)
		}
	}
	if *ids != (contract.DeviceIdentifiers{}) {
		d.ProvenanceOnly = ids
	}
	if mem, ret := h.GetMemoryInfo(); optional("GetMemoryInfo", ret) && mem.Total > 0 && mem.Total < 1<<62 {
		d.MemoryBytes = ptr(int64(mem.Total))
	}
	if major, minor, ret := h.GetCudaComputeCapability(); optional("GetCudaComputeCapability", ret) && major >= 0 && major < 100 && minor >= 0 && minor < 100 {
		d.ComputeCapability = fmt.Sprintf("%d.%d", major, minor)
	}
	if cur, _, ret := h.GetMigMode(); optional("GetMigMode", ret) {
		d.MIGMode = contract.ProbedDeviceMIGModeDisabled
		if cur == nvml.DEVICE_MIG_ENABLE {
			d.MIGMode = contract.ProbedDeviceMIGModeEnabled
		}
	}
	return d, strings.Join(notes, ", "), nil
}

// cString is the NUL-terminated prefix of a C char array.
func cString(b []int8) string {
	var s []byte
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}
