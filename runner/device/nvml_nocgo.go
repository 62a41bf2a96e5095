//go:build !cgo

package device

import "github.com/qualkit/qualkit/schemas"

// unsupportedNVML reports why this build cannot use NVML.
type unsupportedNVML struct{}

func (unsupportedNVML) Probe() ([]schemas.ProbedDevice, schemas.DeviceProbe) {
	return nil, schemas.DeviceProbe{Probe: ProbeNVML, Status: StatusUnsupported,
		Detail: "no NVML: this qualrun was built without cgo (CGO_ENABLED=0), so libnvidia-ml cannot be loaded"}
}

func libraryNVML() NVMLProber            { return unsupportedNVML{} }
func fixtureNVML(path string) NVMLProber { return unsupportedNVML{} }
