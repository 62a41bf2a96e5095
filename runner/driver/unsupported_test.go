package driver

import "testing"

// The one unsupported-mechanism policy: required isolation fails, preferred isolation skips, in
// the words of each subject, always beginning with the mechanism's message.
func TestUnsupportedVerdict(t *testing.T) {
	u := &UnsupportedError{Mechanism: MechUserNamespaces, Message: "network isolation: missing"}
	for _, tc := range []struct {
		required     bool
		s            Subject
		status, want string
	}{
		{true, SubjectCase, "failed", "network isolation: missing; the case requires isolation, so it fails (the worker was not run)"},
		{false, SubjectCase, "skipped", "network isolation: missing; isolation.required is false, so the case is skipped (the worker never runs unisolated)"},
		{true, SubjectDriver, "failed", "network isolation: missing; isolation is required, so the driver fails (the worker was not run)"},
		{false, SubjectDriver, "skipped", "network isolation: missing; isolation.required is false, so the driver is skipped (the worker never runs unisolated)"},
	} {
		status, reason := UnsupportedVerdict(u, tc.required, tc.s)
		if status != tc.status || reason != tc.want {
			t.Errorf("UnsupportedVerdict(required %v, subject %d) = %q, %q; want %q, %q", tc.required, tc.s, status, reason, tc.status, tc.want)
		}
	}
}
