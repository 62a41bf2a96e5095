package campaign

import (
	"errors"
	"fmt"

	"github.com/qualkit/qualkit/runner/device"
	"github.com/qualkit/qualkit/schemas/contract"
)

// ErrDevice: the variant requires a device for its backend, the probe found none and the
// variant's skip_policy is fail.
var ErrDevice = errors.New("device refused")

// probeDevices identifies the host's devices and enforces the variant's device_requirement: a
// backend is served by API family (device.Serving), never by product name. Without a serving
// device a required variant is refused (skip_policy fail) or planned as skipped (allow): nothing
// launches either way.
func (p *Plan) probeDevices() error {
	p.devices = device.Probe(device.Options{Fixture: p.cfg.DeviceFixture})
	v := p.variant
	if v.DeviceRequirement != contract.VariantDeviceRequirementRequired || len(device.Serving(p.devices.Devices, v.Backend, true)) > 0 {
		return nil
	}
	why := fmt.Sprintf("variant %s targets backend %s (device_requirement: required), which needs %s; the probe found none: %s",
		v.ID, v.Backend, device.Needs(v.Backend), p.devices.Summary())
	if v.SkipPolicy == contract.VariantSkipPolicyAllow {
		p.skip = why
		return nil
	}
	return fmt.Errorf("%w: %s. skip_policy is fail: run the variant on a host with such a device, or declare skip_policy: allow to record it as skipped", ErrDevice, why)
}

// skipped records every case of a variant skipped by its device requirement: status skipped,
// nothing run, the reason in the details.
func (r *run) skipped() {
	p := r.p
	for rep := 0; rep < int(p.workload.Determinism.Repetitions); rep++ {
		for _, c := range p.variant.Cases {
			r.results = append(r.results, contract.Result{ID: c.ID, Repetition: int64(rep), Required: c.Required, Status: contract.StatusSkipped,
				Metrics: []contract.Metric{}, Details: clip("skipped before launch: " + p.skip)})
		}
	}
	r.notes = append(r.notes, clipString("skipped before launch: "+p.skip, 2048))
}

// recordDevices puts the probe's findings in the receipt's environment. environment.device (for
// verifiers that predate environment.devices) names the device serving the backend; a fixture
// never replaces it, so a fixture cannot make any verifier see a device the host did not have.
func (p *Plan) recordDevices(env *contract.Environment) {
	env.Devices, env.DeviceProbes = p.devices.Devices, p.devices.Probes
	if p.cfg.DeviceFixture == "" {
		env.Device = device.Legacy(p.devices, p.variant.Backend)
	}
}

// skipReason is the receipt's unpublishable reason for a skipped variant (at most 512 runes).
func (p *Plan) skipReason() string {
	return clipString(fmt.Sprintf("the variant was skipped before launch: no device serves backend %s", p.variant.Backend), 512)
}
