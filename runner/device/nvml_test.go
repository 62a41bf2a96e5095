//go:build cgo

package device

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/qualkit/qualkit/schemas/contract"
)

// dgx is go-nvml's mock DGX H100 (8 x H100 SXM5 80GB, driver 550.54.15). The mock has no serial
// numbers; device i gets one here.
func dgx(t *testing.T) *server.Server {
	s := dgxh100.New()
	for i, d := range s.Devices {
		serial := "16549220" + string(rune('0'+i))
		d.(*server.Device).GetSerialFunc = func() (string, nvml.Return) { return serial, nvml.SUCCESS }
	}
	return s
}

func TestNVMLIdentity(t *testing.T) {
	devs, p := NewNVMLProber(dgx(t)).Probe()
	if p.Status != contract.DeviceProbeStatusFound || len(devs) != 8 {
		t.Fatalf("probe %+v: %d devices, want 8", p, len(devs))
	}
	if p.Detail != "8 device(s), driver 550.54.15" {
		t.Errorf("detail %q", p.Detail)
	}
	uuids := map[string]bool{}
	for i, d := range devs {
		if d.Kind != "gpu" || d.Vendor != "nvidia" || d.Model != "NVIDIA H100 80GB HBM3" || d.Probe != contract.ProbedDeviceProbeNVML || d.Fixture {
			t.Errorf("device %d: %+v", i, d)
		}
		if d.Driver.Name != "nvidia" || d.Driver.Version == nil || *d.Driver.Version != "550.54.15" {
			t.Errorf("device %d driver %+v", i, d.Driver)
		}
		if d.ComputeCapability != "9.0" || d.MIGMode != "disabled" || !slices.Equal(d.APIFamilies, []contract.Backend{contract.BackendCUDA}) {
			t.Errorf("device %d: compute capability %q, MIG %q, families %v", i, d.ComputeCapability, d.MIGMode, d.APIFamilies)
		}
		if d.PCI == nil || d.PCI.VendorID != "0x10de" || d.PCI.DeviceID != "0x2330" {
			t.Errorf("device %d pci %+v: want 0x10de:0x2330", i, d.PCI)
		}
		if d.MemoryBytes == nil || *d.MemoryBytes < 80e9 {
			t.Errorf("device %d memory %v", i, d.MemoryBytes)
		}
		// UUID and serial are provenance only: recorded under provenance_only, nowhere else.
		if d.ProvenanceOnly == nil || !strings.HasPrefix(d.ProvenanceOnly.UUID, "GPU-") || d.ProvenanceOnly.Serial == "" {
			t.Errorf("device %d provenance %+v", i, d.ProvenanceOnly)
		} else {
			uuids[d.ProvenanceOnly.UUID] = true
		}
	}
	if len(uuids) != 8 {
		t.Errorf("%d distinct UUIDs, want 8", len(uuids))
	}
}

func TestNVMLMIG(t *testing.T) {
	s := dgx(t)
	if ret, _ := s.Devices[3].SetMigMode(nvml.DEVICE_MIG_ENABLE); ret != nvml.SUCCESS {
		t.Fatalf("SetMigMode: %v", ret)
	}
	// A GPU without MIG support records no mig_mode at all.
	s.Devices[5].(*server.Device).GetMigModeFunc = func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED }
	devs, _ := NewNVMLProber(s).Probe()
	var modes []string
	for _, d := range devs {
		modes = append(modes, string(d.MIGMode))
	}
	want := []string{"disabled", "disabled", "disabled", "enabled", "disabled", "", "disabled", "disabled"}
	if !slices.Equal(modes, want) {
		t.Errorf("MIG modes %q, want %q", modes, want)
	}
}

func TestNVMLMissingLibrary(t *testing.T) {
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	devs, p := NewNVMLProber(lib).Probe()
	if len(devs) != 0 || p.Status != contract.DeviceProbeStatusUnsupported || !strings.HasPrefix(p.Detail, "no NVML on this host") {
		t.Errorf("devices %v, probe %+v", devs, p)
	}
	if len(lib.ShutdownCalls()) != 0 {
		t.Error("Shutdown called after a failed Init")
	}
	lib = &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }}
	if _, p := NewNVMLProber(lib).Probe(); p.Status != contract.DeviceProbeStatusUnsupported || !strings.Contains(p.Detail, "kernel driver is not loaded") {
		t.Errorf("driver not loaded: %+v", p)
	}
	// The real library on this host: where it is absent (CI, this project's hosts) the probe says
	// so; it never fails or guesses.
	devs, p = libraryNVML().Probe()
	if p.Status == contract.DeviceProbeStatusFound {
		t.Skipf("this host has NVML: %s", p.Detail)
	}
	if len(devs) != 0 || p.Status != contract.DeviceProbeStatusUnsupported {
		t.Errorf("real library on a host without NVML: devices %v, probe %+v", devs, p)
	}
}

func TestNVMLCallFailsMidProbe(t *testing.T) {
	s := dgx(t)
	base := s.DeviceGetHandleByIndexFunc
	s.DeviceGetHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 2 {
			return nil, nvml.ERROR_GPU_IS_LOST
		}
		return base(i)
	}
	devs, p := NewNVMLProber(s).Probe()
	if p.Status != contract.DeviceProbeStatusFailed || len(devs) != 2 {
		t.Fatalf("probe %+v, %d devices: want failed with the 2 identified before the failure", p, len(devs))
	}
	if !strings.Contains(p.Detail, "device 2: nvmlDeviceGetHandleByIndex: ERROR_GPU_IS_LOST") {
		t.Errorf("detail %q", p.Detail)
	}
	if len(s.ShutdownCalls()) != 1 {
		t.Errorf("Shutdown called %d times, want once", len(s.ShutdownCalls()))
	}
	// A failing optional call is noted and leaves the attribute out; the device is kept.
	s = dgx(t)
	s.Devices[0].(*server.Device).GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) { return nvml.Memory{}, nvml.ERROR_UNKNOWN }
	devs, p = NewNVMLProber(s).Probe()
	if p.Status != contract.DeviceProbeStatusFound || len(devs) != 8 || devs[0].MemoryBytes != nil || !strings.Contains(p.Detail, "device 0: GetMemoryInfo: ERROR_UNKNOWN") {
		t.Errorf("probe %+v, memory %v", p, devs[0].MemoryBytes)
	}
}

// TestNVMLMergesItsDRMCard: the DRM card of an NVML device is the same device (by PCI bus id): one
// entry serving cuda and vulkan.
func TestNVMLMergesItsDRMCard(t *testing.T) {
	s := dgx(t)
	// The mock reports no bus id; device 0 gets the one its DRM card has.
	d0 := s.Devices[0].(*server.Device)
	base := d0.GetPciInfoFunc
	d0.GetPciInfoFunc = func() (nvml.PciInfo, nvml.Return) {
		p, ret := base()
		for i, c := range "00000000:18:00.0" {
			p.BusId[i] = int8(c)
		}
		return p, ret
	}
	nv, _ := NewNVMLProber(s).Probe()
	if nv[0].ProvenanceOnly.PCIBusID != "00000000:18:00.0" {
		t.Fatalf("bus id %q", nv[0].ProvenanceOnly.PCIBusID)
	}
	sys := filepath.Join(t.TempDir(), "sys")
	pciCard(t, sys, "card0", nv[0].ProvenanceOnly.PCIBusID[4:], "nvidia", map[string]string{"vendor": "0x10de", "device": "0x2330", "class": "0x030200"})
	amdCardAs(t, sys, "card1")
	drm, _ := ProbeDRMClass(sys)
	all := mergeDRM(nv, drm)
	if len(all) != 9 {
		t.Fatalf("%d devices, want 8 NVIDIA and 1 AMD", len(all))
	}
	if !slices.Equal(all[0].APIFamilies, []contract.Backend{contract.BackendCUDA, contract.BackendVulkan}) || !slices.Equal(all[1].APIFamilies, []contract.Backend{contract.BackendCUDA}) || all[8].Vendor != "amd" {
		t.Errorf("families %v %v, last %s", all[0].APIFamilies, all[1].APIFamilies, all[8].Vendor)
	}
}

// TestFixtureProbe: a fixture directory drives every probe, and everything read from it is
// marked fixture; Legacy never turns a fixture device into environment.device.
func TestFixtureProbe(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "proc", "cpuinfo"), "processor\t: 0\nmodel name\t: Fixture CPU\n")
	writeFile(t, filepath.Join(dir, "nvml.json"), `{"driver_version": "550.54.15", "devices": [{"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-00000000-0000-0000-0000-000000000001", "serial": "", "pci_bus_id": "00000000:18:00.0", "pci_device_id": "0x233010de", "memory_total_bytes": 85520809984, "compute_capability": [9, 0], "mig_mode": 0}]}`)
	r := Probe(Options{Fixture: dir})
	if len(r.Devices) != 2 || r.Devices[1].Model != "NVIDIA H100 80GB HBM3" || r.Devices[1].ProvenanceOnly.Serial != "" {
		t.Fatalf("devices %+v", r.Devices)
	}
	for _, d := range r.Devices {
		if !d.Fixture {
			t.Errorf("%s not marked fixture", d.Model)
		}
	}
	for _, p := range r.Probes {
		if !p.Fixture {
			t.Errorf("probe %s not marked fixture", p.Probe)
		}
	}
	if len(Serving(r.Devices, "cuda", true)) != 1 || len(Serving(r.Devices, "cuda", false)) != 0 {
		t.Error("the fixture device must serve cuda only where fixtures are allowed")
	}
	if l := Legacy(r, "cuda"); l.Driver != "none" || l.Name != "Fixture CPU" {
		t.Errorf("legacy device %+v: a fixture device must never become environment.device", l)
	}
	if err := os.Remove(filepath.Join(dir, "nvml.json")); err != nil {
		t.Fatal(err)
	}
	if r := Probe(Options{Fixture: dir}); r.Probes[0].Status != contract.DeviceProbeStatusUnsupported || !strings.Contains(r.Probes[0].Detail, "no NVML in the fixture") {
		t.Errorf("fixture without nvml.json: %+v", r.Probes[0])
	}
}
