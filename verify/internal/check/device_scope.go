package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// deviceFamilyOK says whether a device may claim an API family, from what the probe that found
// it can establish: cuda only from NVML on an NVIDIA device, rocm only for an AMD GPU bound to
// amdgpu, vulkan only for a GPU, cpu only for the processor; metal never on Linux.
func deviceFamilyOK(d contract.ProbedDevice, family contract.Backend) bool {
	switch family {
	case contract.BackendCUDA:
		return d.Kind == contract.ProbedDeviceKindGPU && d.Probe == contract.ProbedDeviceProbeNVML && d.Vendor == "nvidia"
	case contract.BackendROCM:
		return d.Kind == contract.ProbedDeviceKindGPU && d.Vendor == "amd" && d.Driver.Name == "amdgpu"
	case contract.BackendVulkan:
		return d.Kind == contract.ProbedDeviceKindGPU
	case contract.BackendCPU:
		return d.Kind == contract.ProbedDeviceKindCPU
	}
	return false
}

// servingDevices are the receipt's devices that serve its backend by API family (never by name);
// fixture devices count only under policy.RelaxFixtureDevices.
func servingDevices(s *load.Snapshot) []contract.ProbedDevice {
	var out []contract.ProbedDevice
	b := s.RC.Qualification.Backend
	for _, d := range s.RC.Environment.Devices {
		if slices.Contains(d.APIFamilies, b) && deviceFamilyOK(d, b) && (!d.Fixture || s.Relax[policy.RelaxFixtureDevices]) {
			out = append(out, d)
		}
	}
	return out
}

// checkDeviceScope: an accelerator backend needs an identified device. A receipt written before
// devices were probed (no environment.devices) keeps the old rule: environment.device names a
// driver. Otherwise a device of the backend's API family must be in environment.devices, found by
// a probe that can establish that family, and not from a fixture.
func checkDeviceScope(s *load.Snapshot, c *finding.Collector) {
	rc, file := s.RC, s.Receipt.Path
	b := rc.Qualification.Backend
	for i, d := range rc.Environment.Devices {
		for _, f := range d.APIFamilies {
			if !deviceFamilyOK(d, f) {
				c.Add(file, fmt.Sprintf("/environment/devices/%d/api_families", i), reason.ErrScopeDevice,
					"%s (%s %s, probe %s) cannot serve API family %s: that takes %s", d.Model, d.Vendor, d.Kind, d.Probe, f, familyNeeds(f))
			}
		}
	}
	if b == contract.BackendCPU {
		return
	}
	if rc.Environment.Devices == nil {
		if rc.Environment.Device.Driver == "none" { // not a contract value: environment.device's word for no driver
			c.Add(file, "/environment/device/driver", reason.ErrScopeDevice, "backend %s on device %q without a driver", b, rc.Environment.Device.Name)
		}
		return
	}
	if len(servingDevices(s)) > 0 {
		return
	}
	for _, d := range rc.Environment.Devices {
		if d.Fixture && slices.Contains(d.APIFamilies, b) {
			c.Add(file, "/environment/devices", reason.ErrScopeDevice,
				"backend %s: the device serving it, %s, was read from a test fixture (qualrun run --device-fixture), not from host %s; --%s accepts it, for tests only",
				b, d.Model, rc.Environment.HostID, policy.RelaxFixtureDevices)
			return
		}
	}
	var found []string
	for _, p := range rc.Environment.DeviceProbes {
		found = append(found, fmt.Sprintf("%s %s (%s)", p.Probe, p.Status, p.Detail))
	}
	c.Add(file, "/environment/devices", reason.ErrScopeDevice, "backend %s needs %s; the receipt's probes found none: %s", b, familyNeeds(b), strings.Join(found, "; "))
}

func familyNeeds(f contract.Backend) string {
	switch f {
	case contract.BackendCUDA:
		return "an NVIDIA device identified by NVML"
	case contract.BackendROCM:
		return "an AMD GPU bound to amdgpu"
	case contract.BackendVulkan:
		return "a GPU"
	case contract.BackendCPU:
		return "the processor"
	}
	return "a platform Linux does not provide"
}

// scopeDevice names the device(s) the result describes, for the scope statement: the identified
// devices serving the backend (model, driver and version, compute capability, MIG mode), or ""
// for the cpu backend and for a receipt without environment.devices (the statement then names
// environment.device).
func scopeDevice(s *load.Snapshot) string {
	if s.RC.Environment.Devices == nil || s.RC.Qualification.Backend == contract.BackendCPU {
		return ""
	}
	devs := servingDevices(s)
	if len(devs) == 0 {
		return string("none identified for backend " + s.RC.Qualification.Backend)
	}
	var names []string
	for _, d := range devs {
		drv := d.Driver.Name
		if d.Driver.Version != nil {
			drv += " " + *d.Driver.Version
		}
		n := fmt.Sprintf("%s (%s, driver %s", d.Model, d.Vendor, drv)
		if d.ComputeCapability != "" {
			n += ", compute capability " + d.ComputeCapability
		}
		if d.MIGMode == contract.ProbedDeviceMIGModeEnabled {
			n += ", MIG enabled"
		}
		if d.Fixture {
			n += ", from a test fixture"
		}
		names = append(names, n+")")
	}
	if len(names) > 1 && slices.Equal(names, slices.Repeat(names[:1], len(names))) {
		return fmt.Sprintf("%d x %s", len(names), names[0])
	}
	return strings.Join(names, " + ")
}
