package verify

import (
	"errors"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/compare"
	"github.com/qualkit/qualkit/verify/internal/load"
)

func TestCompareDevices(t *testing.T) {
	pair := func(edit func(b, c *contract.ProbedDevice)) (*compare.Comparer, *load.Snapshot, *load.Snapshot) {
		b, c := frozenSnapshot(t), frozenSnapshot(t)
		b.RC.Environment.Devices = []contract.ProbedDevice{cpuDevice(), h100(false)}
		c.RC.Environment.Devices = []contract.ProbedDevice{cpuDevice(), h100(false)}
		if edit != nil {
			edit(&b.RC.Environment.Devices[1], &c.RC.Environment.Devices[1])
		}
		return &compare.Comparer{Cmp: &Comparison{}, B: b, C: c}, b, c
	}
	x, _, _ := pair(func(b, c *contract.ProbedDevice) {
		// Provenance only: another unit of the same model is the same device for a comparison.
		c.ProvenanceOnly = &contract.DeviceIdentifiers{UUID: "GPU-ffffffff-0000-0000-0000-000000000009", Serial: "9", PCIBusID: "00000000:3b:00.0"}
	})
	x.Devices(nil)
	if len(x.Cmp.Rejected) != 0 {
		t.Errorf("provenance ids compared: %+v", x.Cmp.Rejected)
	}
	x, _, _ = pair(func(b, c *contract.ProbedDevice) {
		v := "560.35.03"
		c.Driver.Version = &v
		c.Model = "NVIDIA H100 PCIe"
	})
	x.Devices(nil)
	var paths []string
	for _, d := range x.Cmp.Rejected {
		if !errors.Is(d.Err, ErrDeviceMismatch) {
			t.Errorf("%s: %v, want device_mismatch", d.Path, d.Err)
		}
		paths = append(paths, d.Path)
	}
	if len(paths) != 2 || paths[0] != "environment.devices.1.driver" || paths[1] != "environment.devices.1.model" {
		t.Errorf("rejected %v", paths)
	}
	// A backend pair that lists devices allows the difference (and says so).
	x, _, _ = pair(func(b, c *contract.ProbedDevice) { c.Model = "NVIDIA H100 PCIe" })
	x.Devices([]string{"devices"})
	if len(x.Cmp.Rejected) != 0 || len(x.Cmp.Allowed) != 1 || !errors.Is(x.Cmp.Allowed[0].Err, ErrDeviceMismatch) {
		t.Errorf("rejected %v, allowed %v", x.Cmp.Rejected, x.Cmp.Allowed)
	}
	x, _, c := pair(nil)
	c.RC.Environment.Devices = c.RC.Environment.Devices[:1]
	x.Devices(nil)
	if len(x.Cmp.Rejected) != 1 || x.Cmp.Rejected[0].Path != "environment.devices" {
		t.Errorf("device count: %+v", x.Cmp.Rejected)
	}
}
