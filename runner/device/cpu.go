package device

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

var vendorID = regexp.MustCompile(`[^a-z0-9_-]+`)

// ProbeCPU identifies the processor from proc/cpuinfo and proc/meminfo (proc is the procfs mount,
// normally /proc): its model name, vendor, logical processor count and memory. It always returns
// a CPU entry; what it could not read is "cpu" or null, never guessed.
func ProbeCPU(proc string) (contract.ProbedDevice, contract.DeviceProbe) {
	d := contract.ProbedDevice{Kind: contract.ProbedDeviceKindCPU, Vendor: "unknown", Model: "cpu", APIFamilies: []contract.Backend{contract.BackendCPU}, // not a contract value: the model name when cpuinfo gives none
		Driver: contract.DeviceDriver{Name: "none"}, Probe: contract.ProbedDeviceProbeProcfs} // not a contract value: the free-form driver name of the CPU entry
	p := contract.DeviceProbe{Probe: contract.DeviceProbeProbeProcfs}
	info := readAttr(filepath.Join(proc, "cpuinfo"))
	var n int64
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch {
		case k == "processor":
			n++
		case k == "model name" && v != "" && d.Model == "cpu": // not a contract value: the model name fallback
			d.Model = clipRunes(v, 256)
		case k == "vendor_id" && v != "" && d.Vendor == "unknown":
			if s := strings.Trim(vendorID.ReplaceAllString(strings.ToLower(v), "-"), "-_"); s != "" {
				d.Vendor = clipRunes(s, 32)
			}
		}
	}
	if n > 0 {
		d.Count = &n
	}
	for _, line := range strings.Split(readAttr(filepath.Join(proc, "meminfo")), "\n") {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			if f := strings.Fields(rest); len(f) > 0 {
				if kb, ok := parseInt(f[0]); ok && kb > 0 {
					d.MemoryBytes = ptr(kb * 1024)
				}
			}
		}
	}
	if info == "" {
		p.Status, p.Detail = contract.DeviceProbeStatusFailed, "cannot read "+filepath.Join(proc, "cpuinfo")
		return d, p
	}
	p.Status, p.Detail = contract.DeviceProbeStatusFound, fmt.Sprintf("%s, %d logical CPUs", d.Model, n)
	return d, p
}
