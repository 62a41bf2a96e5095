package verify

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// h100 is one NVIDIA device as the NVML probe records it.
func h100(fixture bool) contract.ProbedDevice {
	v := "550.54.15"
	mem := int64(85520809984)
	return contract.ProbedDevice{Kind: "gpu", Vendor: "nvidia", Model: "NVIDIA H100 80GB HBM3", APIFamilies: []contract.Backend{contract.BackendCUDA},
		PCI: &contract.PCIIdentity{VendorID: "0x10de", DeviceID: "0x2330"}, Driver: contract.DeviceDriver{Name: "nvidia", Version: &v},
		MemoryBytes: &mem, ComputeCapability: "9.0", MIGMode: "disabled",
		ProvenanceOnly: &contract.DeviceIdentifiers{UUID: "GPU-00000000-0000-0000-0000-000000000001"}, Probe: "nvml", Fixture: fixture}
}

func cpuDevice() contract.ProbedDevice {
	return contract.ProbedDevice{Kind: "cpu", Vendor: "authenticamd", Model: "AMD EPYC", APIFamilies: []contract.Backend{contract.BackendCPU}, Driver: contract.DeviceDriver{Name: "none"}, Probe: "procfs"}
}

// onCUDA turns the frozen cpu receipt into a cuda one on a host with devs.
func onCUDA(s *load.Snapshot, devs ...contract.ProbedDevice) {
	s.RC.Qualification.Backend = "cuda"
	s.Workload.Variants[0].Backend = "cuda"
	s.RC.Environment.Devices = append([]contract.ProbedDevice{cpuDevice()}, devs...)
	s.RC.Environment.DeviceProbes = []contract.DeviceProbe{{Probe: "nvml", Status: "unsupported", Detail: "no NVML on this host (libnvidia-ml.so.1 could not be loaded)"}}
}

func TestCheckScopeDevices(t *testing.T) {
	runCheckTable(t, check.Scope, []checkCase{
		{"cuda with an NVML-identified NVIDIA device", func(s *load.Snapshot) { onCUDA(s, h100(false)) }, nil, StatusPassed},
		{"cuda with devices probed and none serving it", func(s *load.Snapshot) { onCUDA(s) }, ErrScopeDevice, ""},
		// environment.device naming a driver does not help a receipt whose probes found nothing.
		{"cuda with a driver in environment.device but no device", func(s *load.Snapshot) {
			onCUDA(s)
			s.RC.Environment.Device = contract.Device{Name: "NVIDIA H100", Architecture: "sm_90", Driver: "nvidia 550"}
		}, ErrScopeDevice, ""},
		{"cuda with a fixture device", func(s *load.Snapshot) { onCUDA(s, h100(true)) }, ErrScopeDevice, ""},
		{"cuda with a fixture device under the relaxation", func(s *load.Snapshot) {
			onCUDA(s, h100(true))
			s.Relax = map[Relaxation]bool{RelaxFixtureDevices: true}
		}, nil, StatusPassed},
		// Families follow from the probe: DRM cannot establish cuda, and a name never does.
		{"cuda claimed by a DRM-probed card", func(s *load.Snapshot) {
			d := h100(false)
			d.Probe = "drm_sysfs"
			d.APIFamilies = []contract.Backend{contract.BackendCUDA, contract.BackendVulkan}
			onCUDA(s, d)
		}, ErrScopeDevice, ""},
		{"rocm on an NVIDIA device", func(s *load.Snapshot) {
			onCUDA(s, h100(false))
			s.RC.Qualification.Backend, s.Workload.Variants[0].Backend = "rocm", "rocm"
		}, ErrScopeDevice, ""},
		{"cpu with a GPU on the host", func(s *load.Snapshot) {
			s.RC.Environment.Devices = []contract.ProbedDevice{cpuDevice(), h100(false)}
		}, nil, StatusPassed},
	})
}

func TestScopeNamesTheDevice(t *testing.T) {
	s := frozenSnapshot(t)
	s.RC.Environment.HostID = "gpu-07"
	onCUDA(s, h100(false), h100(false))
	want := "host gpu-07, backend cuda, device 2 x NVIDIA H100 80GB HBM3 (nvidia, driver nvidia 550.54.15, compute capability 9.0): the result describes this host, backend and device only"
	if got := check.ScopeStatement(s); got != want {
		t.Errorf("scope\n got %q\nwant %q", got, want)
	}
	onCUDA(s, h100(true))
	if got := check.ScopeStatement(s); !strings.Contains(got, "device none identified for backend cuda") {
		t.Errorf("scope with a fixture device only: %q", got)
	}
	s.Relax = map[Relaxation]bool{RelaxFixtureDevices: true}
	if got := check.ScopeStatement(s); !strings.Contains(got, "compute capability 9.0, from a test fixture)") {
		t.Errorf("scope under the relaxation: %q", got)
	}
	res := check.Scope(func() *load.Snapshot { s := frozenSnapshot(t); onCUDA(s, h100(true)); return s }())
	if len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Error(), "read from a test fixture") {
		t.Errorf("fixture finding %+v", res.Findings)
	}
}
