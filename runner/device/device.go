package device

import (
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// attrLimit bounds every sysfs or procfs file read: attributes are small; /proc/cpuinfo of a very
// large host is the biggest.
const attrLimit = 4 << 20

// MaxDevices is the most devices a receipt records (the contract's bound).
const MaxDevices = 64

// Options say where the probes look.
type Options struct {
	// Fixture, when set, is a directory standing in for the host: sys/class/drm and proc/ below it,
	// and nvml.json (see LoadNVMLFixture) instead of the NVML library. Every result is marked
	// fixture. Used by tests and by qualrun run's hidden --device-fixture flag (recorded in the
	// receipt's command).
	Fixture string
	// NVML replaces the NVML probe (unit tests); nil uses the library (or the fixture's nvml.json).
	NVML NVMLProber
}

// NVMLProber identifies NVIDIA devices. Implemented over go-nvml's Interface (see NewNVMLProber).
type NVMLProber interface {
	Probe() ([]contract.ProbedDevice, contract.DeviceProbe)
}

// Result is what the probes found.
type Result struct {
	Devices []contract.ProbedDevice
	Probes  []contract.DeviceProbe
}

// Probe runs every probe. It never fails: a probe that cannot run is reported as such.
func Probe(opt Options) Result {
	root := "/"
	fixture := opt.Fixture != ""
	if fixture {
		root = opt.Fixture
	}
	nv := opt.NVML
	if nv == nil {
		if fixture {
			nv = fixtureNVML(filepath.Join(opt.Fixture, "nvml.json"))
		} else {
			nv = libraryNVML()
		}
	}
	var res Result
	gpus, p := nv.Probe()
	res.Probes = append(res.Probes, p)
	drm, p := ProbeDRMClass(filepath.Join(root, "sys"))
	res.Probes = append(res.Probes, p)
	res.Devices = append(res.Devices, mergeDRM(gpus, drm)...)
	cpu, p := ProbeCPU(filepath.Join(root, "proc"))
	res.Probes = append(res.Probes, p)
	res.Devices = append([]contract.ProbedDevice{cpu}, res.Devices...)
	if len(res.Devices) > MaxDevices {
		res.Probes = append(res.Probes[:0:0], res.Probes...)
		res.Probes[1].Detail = clipRunes(fmt.Sprintf("%d devices beyond the first %d not recorded; %s", len(res.Devices)-MaxDevices, MaxDevices, res.Probes[1].Detail), 512)
		res.Devices = res.Devices[:MaxDevices]
	}
	if fixture {
		for i := range res.Devices {
			res.Devices[i].Fixture = true
		}
		for i := range res.Probes {
			res.Probes[i].Fixture = true
		}
	}
	return res
}

// mergeDRM folds a DRM card that NVML also identified (same PCI bus id) into the NVML entry: the
// card adds the vulkan family; NVML's identity wins.
func mergeDRM(nvml, drm []contract.ProbedDevice) []contract.ProbedDevice {
	out := slices.Clone(nvml)
	for _, d := range drm {
		merged := false
		for i := range out {
			if busID(out[i]) != "" && busID(out[i]) == busID(d) {
				for _, f := range d.APIFamilies {
					if !slices.Contains(out[i].APIFamilies, f) {
						out[i].APIFamilies = append(out[i].APIFamilies, f)
					}
				}
				merged = true
			}
		}
		if !merged {
			out = append(out, d)
		}
	}
	return out
}

// busID normalises a PCI bus id to domain:bus:device.function with a 4-digit domain, lower case
// (NVML writes an 8-digit domain, sysfs a 4-digit one).
func busID(d contract.ProbedDevice) string {
	if d.ProvenanceOnly == nil || d.ProvenanceOnly.PCIBusID == "" {
		return ""
	}
	s := strings.ToLower(d.ProvenanceOnly.PCIBusID)
	if len(s) > 12 {
		s = s[len(s)-12:]
	}
	return s
}

// Families lists the API families of each backend; a backend absent here (metal) is never served
// on Linux.
var familyOf = map[contract.Backend]contract.Backend{contract.BackendCPU: contract.BackendCPU, contract.BackendCUDA: contract.BackendCUDA,
	contract.BackendROCM: contract.BackendROCM, contract.BackendVulkan: contract.BackendVulkan}

// Serving returns the devices that serve backend (by API family), fixture devices included when
// withFixtures is true; the CPU entry serves cpu.
func Serving(devs []contract.ProbedDevice, backend contract.Backend, withFixtures bool) []contract.ProbedDevice {
	fam, ok := familyOf[backend]
	if !ok {
		return nil
	}
	var out []contract.ProbedDevice
	for _, d := range devs {
		if d.Fixture && !withFixtures {
			continue
		}
		if slices.Contains(d.APIFamilies, fam) {
			out = append(out, d)
		}
	}
	return out
}

// Needs says, for a refusal or skip message, what a backend needs from the probe.
func Needs(backend contract.Backend) string {
	switch backend {
	case contract.BackendCUDA:
		return "an NVIDIA device identified by NVML (API family cuda)"
	case contract.BackendROCM:
		return "an AMD GPU bound to the amdgpu driver (API family rocm)"
	case contract.BackendVulkan:
		return "a GPU with a DRM device (API family vulkan)"
	case contract.BackendMetal:
		return "Metal, which no Linux host provides"
	}
	return "the processor"
}

// Summary says what the probes found, one clause per probe, for messages.
func (r Result) Summary() string {
	var parts []string
	for _, p := range r.Probes {
		parts = append(parts, fmt.Sprintf("%s %s (%s)", p.Probe, p.Status, p.Detail))
	}
	return strings.Join(parts, "; ")
}

// Label names a device in one phrase: model, driver and version, and what identified it.
func Label(d contract.ProbedDevice) string {
	drv := d.Driver.Name
	if d.Driver.Version != nil {
		drv += " " + *d.Driver.Version
	}
	s := fmt.Sprintf("%s (%s %s, driver %s", d.Model, d.Vendor, d.Kind, drv)
	if d.ComputeCapability != "" {
		s += ", compute capability " + d.ComputeCapability
	}
	if d.MIGMode != "" {
		s += ", MIG " + string(d.MIGMode)
	}
	s += ", identified by " + string(d.Probe)
	if d.Fixture {
		s += " from a test fixture"
	}
	return s + ")"
}

// Legacy is the device for the receipt's environment.device (kept for older verifiers): the first
// non-fixture device that serves backend, else the processor with driver "none". A fixture device
// never becomes environment.device, so a verifier that knows nothing of devices still refuses it.
func Legacy(r Result, backend contract.Backend) contract.Device {
	cpu := contract.Device{Name: "cpu", Architecture: runtime.GOARCH, Driver: "none"} // not a contract value: free-form device name and driver
	for _, d := range r.Devices {
		if d.Kind == contract.ProbedDeviceKindCPU {
			cpu.Name, cpu.MemoryBytes = d.Model, d.MemoryBytes
		}
	}
	if backend == contract.BackendCPU {
		return cpu
	}
	if devs := Serving(r.Devices, backend, false); len(devs) > 0 {
		d := devs[0]
		arch := "gpu" // not a contract value: the free-form environment.device architecture
		switch {
		case d.ComputeCapability != "":
			arch = "cuda compute capability " + d.ComputeCapability
		case d.PCI != nil:
			arch = "pci " + d.PCI.VendorID + ":" + d.PCI.DeviceID
		}
		drv := d.Driver.Name
		if d.Driver.Version != nil {
			drv += " " + *d.Driver.Version
		}
		return contract.Device{Name: d.Model, Architecture: arch, MemoryBytes: d.MemoryBytes, Driver: drv}
	}
	return cpu
}

// readAttr reads a small sysfs or procfs file, trimmed; "" when absent or unreadable.
func readAttr(path string) string {
	b, err := evidence.ReadFileLimited(path, attrLimit)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func ptr[T any](v T) *T { return &v }

// clipRunes bounds a string read from the host to the contract's field size.
func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

func parseInt(s string) (int64, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(s), 0, 64)
	return v, err == nil
}
