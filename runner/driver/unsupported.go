package driver

import "github.com/qualkit/qualkit/schemas/rules"

// Subject is what an unsupported-mechanism verdict is about; only the wording differs.
type Subject int

// The subjects of UnsupportedVerdict.
const (
	// SubjectCase: a campaign's driver case (its receipt result).
	SubjectCase Subject = iota
	// SubjectDriver: one driver run on its own (`qualrun driver`).
	SubjectDriver
)

// UnsupportedVerdict is the one policy for a containment mechanism this host lacks (Run returned
// u; the worker was not run): the worker never runs unisolated, so a driver whose isolation is
// required fails and one whose isolation is not required is skipped. reason begins with u's
// message and says which rule applied.
func UnsupportedVerdict(u *UnsupportedError, required bool, s Subject) (status, reason string) {
	noun := "case"
	if s == SubjectDriver {
		noun = "driver"
	}
	if !required {
		return "skipped", u.Message + "; isolation.required is false, so the " + noun + " is skipped (the worker never runs unisolated)"
	}
	if s == SubjectDriver {
		return rules.StatusFailed, u.Message + "; isolation is required, so the driver fails (the worker was not run)"
	}
	return rules.StatusFailed, u.Message + "; the case requires isolation, so it fails (the worker was not run)"
}
