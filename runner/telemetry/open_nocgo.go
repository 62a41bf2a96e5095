//go:build !cgo

package telemetry

import (
	"path/filepath"
	"sort"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Open builds the readers for the devices of devs that can be sampled. Without cgo NVML cannot be
// loaded: only DRM cards (sysfs hwmon) are sampled.
func Open(devs []contract.ProbedDevice, which []int64, fixture string) ([]Reader, []int64, []string) {
	hw := map[int64]string{}
	var why []string
	for _, i := range which {
		d := devs[i]
		if d.Probe == contract.ProbedDeviceProbeDRMSysfs && d.ProvenanceOnly != nil && d.ProvenanceOnly.PCIBusID != "" {
			hw[i] = d.ProvenanceOnly.PCIBusID
		} else {
			why = append(why, "device "+d.Model+": not sampled (this qualrun was built without cgo: no NVML)")
		}
	}
	if len(hw) == 0 {
		return nil, nil, why
	}
	sys := "/sys"
	if fixture != "" {
		sys = filepath.Join(fixture, "sys")
	}
	var sampled []int64
	for i := range hw {
		sampled = append(sampled, i)
	}
	sort.Slice(sampled, func(a, b int) bool { return sampled[a] < sampled[b] })
	return []Reader{NewHwmonReader(sys, hw)}, sampled, why
}
