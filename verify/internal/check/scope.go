package check

import (
	"fmt"

	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Scope: the result describes exactly one host, backend and device. The receipt's backend is
// its variant's, and an accelerator backend names a device driver.
func Scope(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckScope}
	rc := s.RC
	file := s.Receipt.Path
	if v := s.Variant(); v != nil && v.Backend != rc.Qualification.Backend {
		c.Add(file, "/qualification/backend", reason.ErrScopeBackend, "backend %s, variant %s targets %s", rc.Qualification.Backend, v.ID, v.Backend)
	}
	checkDeviceScope(s, c)
	return c.Result()
}

// scopeStatement is the sentence naming exactly the host id, backend and device a result
// describes; "" when the receipt could not be read.
func ScopeStatement(s *load.Snapshot) string {
	if s.RC == nil {
		return ""
	}
	e := s.RC.Environment
	if d := scopeDevice(s); d != "" {
		return fmt.Sprintf("host %s, backend %s, device %s: the result describes this host, backend and device only", e.HostID, s.RC.Qualification.Backend, d)
	}
	return fmt.Sprintf("host %s, backend %s, device %s (%s, driver %s): the result describes this host, backend and device only",
		e.HostID, s.RC.Qualification.Backend, e.Device.Name, e.Device.Architecture, e.Device.Driver)
}
