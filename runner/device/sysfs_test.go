package device

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// pciCard builds a DRM card the way sysfs lays it out: the PCI device directory under
// sys/devices, its drm/cardN directory, the class/drm/cardN symlink, the card's device symlink
// back to the PCI directory and the driver symlink. attrs are the PCI directory's files.
func pciCard(t *testing.T, sys, card, slot, driver string, attrs map[string]string) {
	t.Helper()
	pci := filepath.Join(sys, "devices", "pci0000:00", slot)
	mk := func(p string) {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, name); err != nil {
			t.Fatal(err)
		}
	}
	mk(filepath.Join(pci, "drm", card))
	mk(filepath.Join(sys, "class", "drm"))
	mk(filepath.Join(sys, "bus", "pci", "drivers", driver))
	for k, v := range attrs {
		if err := os.WriteFile(filepath.Join(pci, k), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link("../..", filepath.Join(pci, "drm", card, "device"))
	link("../../../bus/pci/drivers/"+driver, filepath.Join(pci, "driver"))
	link("../../devices/pci0000:00/"+slot+"/drm/"+card, filepath.Join(sys, "class", "drm", card))
	// A connector and a render node of the same card: never separate devices.
	mk(filepath.Join(pci, "drm", card+"-DP-1"))
	link("../../devices/pci0000:00/"+slot+"/drm/"+card+"-DP-1", filepath.Join(sys, "class", "drm", card+"-DP-1"))
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func amdCard(t *testing.T, sys string) { amdCardAs(t, sys, "card0") }

func amdCardAs(t *testing.T, sys, card string) {
	pciCard(t, sys, card, "0000:03:00.0", "amdgpu", map[string]string{
		"vendor": "0x1002", "device": "0x744c", "revision": "0xc8", "class": "0x030000",
		"mem_info_vram_total": "25753026560", "product_name": "Radeon RX 7900 XTX",
		"uevent": "DRIVER=amdgpu\nPCI_CLASS=30000\nPCI_ID=1002:744C\nPCI_SLOT_NAME=0000:03:00.0"})
	writeFile(t, filepath.Join(sys, "module", "amdgpu", "initstate"), "live\n")
}

func TestDRMAMDCard(t *testing.T) {
	sys := filepath.Join(t.TempDir(), "sys")
	amdCard(t, sys)
	devs, p := ProbeDRMClass(sys)
	if p.Status != contract.DeviceProbeStatusFound || len(devs) != 1 {
		t.Fatalf("probe %+v, devices %+v: want one AMD card", p, devs)
	}
	d := devs[0]
	if d.Kind != "gpu" || d.Vendor != "amd" || d.Model != "Radeon RX 7900 XTX" || d.Driver.Name != "amdgpu" || d.Driver.Version != nil {
		t.Errorf("identity %+v", d)
	}
	if !slices.Equal(d.APIFamilies, []contract.Backend{contract.BackendROCM, contract.BackendVulkan}) {
		t.Errorf("api families %v, want rocm and vulkan", d.APIFamilies)
	}
	if *d.PCI != (contract.PCIIdentity{VendorID: "0x1002", DeviceID: "0x744c", Revision: "0xc8"}) {
		t.Errorf("pci %+v", *d.PCI)
	}
	if d.MemoryBytes == nil || *d.MemoryBytes != 25753026560 {
		t.Errorf("memory %v, want the VRAM total", d.MemoryBytes)
	}
	if d.ProvenanceOnly == nil || d.ProvenanceOnly.PCIBusID != "0000:03:00.0" {
		t.Errorf("provenance %+v: want the PCI bus id", d.ProvenanceOnly)
	}
	if !strings.Contains(p.Detail, "card0 0x1002:0x744c driver amdgpu") {
		t.Errorf("detail %q", p.Detail)
	}
}

func TestDRMTwoCards(t *testing.T) {
	sys := filepath.Join(t.TempDir(), "sys")
	amdCard(t, sys)
	// An NVIDIA card seen by DRM only: vulkan, never cuda (cuda needs NVML's identification).
	pciCard(t, sys, "card10", "0000:41:00.0", "nvidia", map[string]string{
		"vendor": "0x10de", "device": "0x2330", "revision": "0xa1", "class": "0x030200"})
	writeFile(t, filepath.Join(sys, "module", "nvidia", "version"), "550.54.15\n")
	pciCard(t, sys, "card2", "0000:42:00.0", "nvidia", map[string]string{
		"vendor": "0x10de", "device": "0x2330", "class": "0x030200"})
	devs, p := ProbeDRMClass(sys)
	if p.Status != contract.DeviceProbeStatusFound || len(devs) != 3 {
		t.Fatalf("probe %+v: %d devices, want 3", p, len(devs))
	}
	var slots []string
	for _, d := range devs {
		slots = append(slots, d.ProvenanceOnly.PCIBusID)
	}
	if !slices.Equal(slots, []string{"0000:03:00.0", "0000:42:00.0", "0000:41:00.0"}) {
		t.Errorf("order %v: want card0, card2, card10", slots)
	}
	nv := devs[2]
	if nv.Vendor != "nvidia" || nv.Model != "PCI device 0x10de:0x2330" || nv.Driver.Version == nil || *nv.Driver.Version != "550.54.15" {
		t.Errorf("nvidia card %+v", nv)
	}
	if !slices.Equal(nv.APIFamilies, []contract.Backend{contract.BackendVulkan}) {
		t.Errorf("nvidia card through DRM serves %v, want vulkan only", nv.APIFamilies)
	}
	if len(Serving(devs, "cuda", false)) != 0 || len(Serving(devs, "rocm", false)) != 1 || len(Serving(devs, "vulkan", false)) != 3 {
		t.Errorf("serving: cuda %d rocm %d vulkan %d", len(Serving(devs, "cuda", false)), len(Serving(devs, "rocm", false)), len(Serving(devs, "vulkan", false)))
	}
}

func TestDRMIntelIGPU(t *testing.T) {
	sys := filepath.Join(t.TempDir(), "sys")
	// i915 exposes no VRAM size and no module version; the driver comes from the uevent only.
	pciCard(t, sys, "card1", "0000:00:02.0", "i915", map[string]string{
		"vendor": "0x8086", "device": "0x9a49", "revision": "0x01", "class": "0x030000",
		"uevent": "DRIVER=i915\nPCI_SLOT_NAME=0000:00:02.0"})
	devs, p := ProbeDRMClass(sys)
	if p.Status != contract.DeviceProbeStatusFound || len(devs) != 1 {
		t.Fatalf("probe %+v", p)
	}
	d := devs[0]
	if d.Vendor != "intel" || d.Driver.Name != "i915" || d.MemoryBytes != nil || d.Driver.Version != nil || !slices.Equal(contract.Strings(d.APIFamilies), []string{"vulkan"}) {
		t.Errorf("intel iGPU %+v", d)
	}
}

func TestDRMNoCard(t *testing.T) {
	t.Run("no DRM class", func(t *testing.T) {
		devs, p := ProbeDRMClass(filepath.Join(t.TempDir(), "sys"))
		if len(devs) != 0 || p.Status != contract.DeviceProbeStatusNone || !strings.Contains(p.Detail, "no DRM class") {
			t.Errorf("devices %v, probe %+v", devs, p)
		}
	})
	t.Run("a firmware framebuffer only", func(t *testing.T) {
		sys := filepath.Join(t.TempDir(), "sys")
		writeFile(t, filepath.Join(sys, "class", "drm", "version"), "drm 1.1.0 20060810\n")
		writeFile(t, filepath.Join(sys, "class", "drm", "card0", "device", "uevent"), "DRIVER=simple-framebuffer\n")
		devs, p := ProbeDRMClass(sys)
		if len(devs) != 0 || p.Status != contract.DeviceProbeStatusNone || !strings.Contains(p.Detail, "skipped card0 (not a PCI device)") {
			t.Errorf("devices %v, probe %+v", devs, p)
		}
	})
	t.Run("a PCI card that is not a display controller", func(t *testing.T) {
		sys := filepath.Join(t.TempDir(), "sys")
		pciCard(t, sys, "card0", "0000:05:00.0", "ast", map[string]string{"vendor": "0x1a03", "device": "0x2000", "class": "0x068000"})
		devs, p := ProbeDRMClass(sys)
		if len(devs) != 0 || !strings.Contains(p.Detail, "not a display controller") {
			t.Errorf("devices %v, probe %+v", devs, p)
		}
	})
}

func TestCPU(t *testing.T) {
	proc := t.TempDir()
	writeFile(t, filepath.Join(proc, "cpuinfo"), "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\n")
	writeFile(t, filepath.Join(proc, "meminfo"), "MemTotal:       16384 kB\nMemFree: 1 kB\n")
	d, p := ProbeCPU(proc)
	if d.Model != "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz" || d.Vendor != "genuineintel" || *d.Count != 2 || *d.MemoryBytes != 16384*1024 || p.Status != contract.DeviceProbeStatusFound {
		t.Errorf("cpu %+v, probe %+v", d, p)
	}
	d, p = ProbeCPU(t.TempDir())
	if d.Model != "cpu" || d.Count != nil || d.MemoryBytes != nil || p.Status != contract.DeviceProbeStatusFailed {
		t.Errorf("unreadable procfs: %+v %+v", d, p)
	}
}

// TestServingByFamilyNeverByName: a device's name never makes it serve a backend.
func TestServingByFamilyNeverByName(t *testing.T) {
	devs := []contract.ProbedDevice{
		{Kind: "cpu", Model: "cpu", APIFamilies: []contract.Backend{contract.BackendCPU}},
		{Kind: "gpu", Vendor: "amd", Model: "NVIDIA H100 (renamed)", APIFamilies: []contract.Backend{contract.BackendROCM, contract.BackendVulkan}},
		{Kind: "gpu", Vendor: "nvidia", Model: "NVIDIA H100", APIFamilies: []contract.Backend{contract.BackendCUDA}, Fixture: true},
	}
	for _, c := range []struct {
		backend  contract.Backend
		fixtures bool
		want     int
	}{{"cpu", false, 1}, {"cuda", false, 0}, {"cuda", true, 1}, {"rocm", false, 1}, {"vulkan", false, 1}, {"metal", true, 0}} {
		if got := len(Serving(devs, c.backend, c.fixtures)); got != c.want {
			t.Errorf("%s (fixtures %v): %d devices serve it, want %d", c.backend, c.fixtures, got, c.want)
		}
	}
}

// TestProbeBoundsDevices: a host with more cards than a receipt holds records the first
// MaxDevices and says how many were left out.
func TestProbeBoundsDevices(t *testing.T) {
	dir := t.TempDir()
	for i := 0; i < 70; i++ {
		slot := fmt.Sprintf("0000:%02x:00.0", i+1)
		pciCard(t, filepath.Join(dir, "sys"), fmt.Sprintf("card%d", i), slot, "amdgpu", map[string]string{"vendor": "0x1002", "device": "0x744c", "class": "0x030000"})
	}
	r := Probe(Options{Fixture: dir})
	if len(r.Devices) != MaxDevices || !strings.Contains(r.Probes[1].Detail, "7 devices beyond the first 64 not recorded") {
		t.Errorf("%d devices, detail %q", len(r.Devices), r.Probes[1].Detail)
	}
}
