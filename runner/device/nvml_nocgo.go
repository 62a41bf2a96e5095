//go:build !cgo

package device

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// unsupportedNVML reports why this build cannot use NVML.
type unsupportedNVML struct{}

func (unsupportedNVML) Probe() ([]contract.ProbedDevice, contract.DeviceProbe) {
	return nil, contract.DeviceProbe{Probe: contract.DeviceProbeProbeNVML, Status: contract.DeviceProbeStatusUnsupported,
		Detail: "no NVML: this qualrun was built without cgo (CGO_ENABLED=0), so libnvidia-ml cannot be loaded"}
}

func libraryNVML() NVMLProber            { return unsupportedNVML{} }
func fixtureNVML(path string) NVMLProber { return unsupportedNVML{} }
