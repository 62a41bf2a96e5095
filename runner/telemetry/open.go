//go:build cgo

package telemetry

import (
	"fmt"
	"path/filepath"
	"sort"

	"github.com/qualkit/qualkit/runner/device"
	"github.com/qualkit/qualkit/schemas/contract"
)

// Open builds the readers for the devices (receipt indexes) of devs that can be sampled: NVML
// devices through the library (or the fixture's nvml.json), DRM cards through sysfs hwmon (below
// the fixture's sys/ when fixture is set). It returns the readers, the sampled indexes and why
// the others cannot be sampled.
func Open(devs []contract.ProbedDevice, which []int64, fixture string) ([]Reader, []int64, []string) {
	nv, hw := map[int64]string{}, map[int64]string{}
	var why []string
	for _, i := range which {
		d := devs[i]
		switch {
		case d.Probe == contract.ProbedDeviceProbeNVML && d.ProvenanceOnly != nil && d.ProvenanceOnly.UUID != "":
			nv[i] = d.ProvenanceOnly.UUID
		case d.Probe == contract.ProbedDeviceProbeNVML && d.ProvenanceOnly != nil && d.ProvenanceOnly.PCIBusID != "":
			nv[i] = d.ProvenanceOnly.PCIBusID
		case d.Probe == contract.ProbedDeviceProbeDRMSysfs && d.ProvenanceOnly != nil && d.ProvenanceOnly.PCIBusID != "":
			hw[i] = d.ProvenanceOnly.PCIBusID
		default:
			why = append(why, fmt.Sprintf("device %d (%s): no identifier to sample it by", i, d.Model))
		}
	}
	var readers []Reader
	var sampled []int64
	if len(nv) > 0 {
		lib := device.NVMLLibrary(fixture)
		var r Reader
		err := fmt.Errorf("no NVML in the fixture")
		if lib != nil {
			r, err = NewNVMLReader(lib, nv)
		}
		if err != nil {
			why = append(why, "NVML devices not sampled: "+err.Error())
		} else {
			readers = append(readers, r)
			for i := range nv {
				sampled = append(sampled, i)
			}
		}
	}
	if len(hw) > 0 {
		sys := "/sys"
		if fixture != "" {
			sys = filepath.Join(fixture, "sys")
		}
		readers = append(readers, NewHwmonReader(sys, hw))
		for i := range hw {
			sampled = append(sampled, i)
		}
	}
	sort.Slice(sampled, func(a, b int) bool { return sampled[a] < sampled[b] })
	return readers, sampled, why
}
