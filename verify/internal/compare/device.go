package compare

import (
	"fmt"
	"maps"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// deviceEnvironmentKeys are compared by (*comparer).devices, not by the generic environment diff.
var deviceEnvironmentKeys = []string{"devices", "device_probes"}

// withoutDevices is env without the device lists (a shallow copy).
func withoutDevices(env map[string]any) map[string]any {
	if env == nil {
		return nil
	}
	out := maps.Clone(env)
	for _, k := range deviceEnvironmentKeys {
		delete(out, k)
	}
	return out
}

// deviceIdentity is what a comparison holds equal of a device: everything but its
// provenance-only identifiers and the probe's wording.
func deviceIdentity(d contract.ProbedDevice) map[string]any {
	drv := "none" // not a contract value: the text of an absent driver version
	if d.Driver.Version != nil {
		drv = *d.Driver.Version
	}
	id := map[string]any{"kind": d.Kind, "vendor": d.Vendor, "model": d.Model, "api_families": fmt.Sprint(d.APIFamilies),
		"driver":             d.Driver.Name + " " + drv, // not a contract value: the device's member name
		"compute_capability": d.ComputeCapability, "mig_mode": d.MIGMode, "probe": d.Probe, "fixture": d.Fixture}
	if d.MemoryBytes != nil {
		id["memory_bytes"] = *d.MemoryBytes
	}
	if d.PCI != nil {
		id["pci"] = d.PCI.VendorID + ":" + d.PCI.DeviceID + " rev " + d.PCI.Revision
	}
	return id
}

// devices compares the receipts' device lists: the same number of devices, and each one's model,
// driver and version, memory, compute capability, MIG mode, API families and probe equal, by
// position; UUIDs, serials and bus ids are provenance and never compared. A difference is a named
// device_mismatch; a backend pair that lists "devices" among its allowed environment differences
// allows them. Receipts without environment.devices on both sides have nothing to compare.
func (x *Comparer) Devices(allowed []string) {
	db, dc := x.B.RC.Environment.Devices, x.C.RC.Environment.Devices
	if db == nil && dc == nil {
		return
	}
	add := x.Cmp.reject
	why := "the mode needs the same devices (model, driver, memory; provenance ids aside)"
	if slices.Contains(allowed, "devices") {
		add, why = x.Cmp.allow, "declared by the backend pair (devices)"
	}
	if len(db) != len(dc) {
		add("environment.devices", reason.ErrDeviceMismatch, why+fmt.Sprintf(": %d devices against %d", len(db), len(dc)), len(db), len(dc))
		return
	}
	for i := range db {
		ib, ic := deviceIdentity(db[i]), deviceIdentity(dc[i])
		for _, k := range slices.Sorted(maps.Keys(ib)) {
			if vb, vc := ib[k], ic[k]; fmt.Sprint(vb) != fmt.Sprint(vc) {
				add(fmt.Sprintf("environment.devices.%d.%s", i, k), reason.ErrDeviceMismatch, why, vb, vc)
			}
		}
		for k := range ic {
			if _, ok := ib[k]; !ok {
				add(fmt.Sprintf("environment.devices.%d.%s", i, k), reason.ErrDeviceMismatch, why, nil, ic[k])
			}
		}
	}
}
