package rules

import "github.com/qualkit/qualkit/schemas/contract"

// devices checks environment.devices and device_probes: one outcome per probe, and a fixture is
// all or nothing: when any device or probe was read from a test fixture, every one was, and
// environment.device is not a fixture device (driver "none"), so no verifier can take a fixture
// for the host's hardware.
func (r *rules) devices(env contract.Environment) {
	seen := map[string]int{}
	fixtures, total := 0, 0
	for i, p := range env.DeviceProbes {
		if j, dup := seen[string(p.Probe)]; dup {
			r.add(ptr("environment", "device_probes", i, "probe"), "probe %s repeats device_probes/%d", p.Probe, j)
		}
		seen[string(p.Probe)] = i
		total++
		if p.Fixture {
			fixtures++
		}
	}
	for _, d := range env.Devices {
		total++
		if d.Fixture {
			fixtures++
		}
	}
	if fixtures > 0 && fixtures < total {
		r.add("/environment/devices", "%d of %d devices and probes are marked fixture: a fixture run reads every device from the fixture", fixtures, total)
	}
	if fixtures > 0 && env.Device.Driver != "none" { // not a contract value: environment.device.driver is free text; "none" is the host processor's
		r.add("/environment/device/driver", "driver %q in a fixture run: environment.device stays the host's processor (driver none)", env.Device.Driver)
	}
}
