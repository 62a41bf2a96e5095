package campaign

import (
	"errors"
	"fmt"
)

// ErrConfig: a run setting given by the caller (not the workload) is invalid, e.g. --host-id.
// Like every preflight error it means nothing was launched and nothing was written.
var ErrConfig = errors.New("run configuration refused")

// CheckHostID reports whether id is a usable host id: ^[a-z0-9][a-z0-9._-]{1,63}$, a stable,
// non-secret label that becomes part of the receipt id. The error wraps ErrConfig and names the
// flag, so a command line can report it as a usage error before anything runs.
func CheckHostID(id string) error {
	if !hostIDPattern.MatchString(id) {
		return fmt.Errorf("%w: --host-id %q must match ^[a-z0-9][a-z0-9._-]{1,63}$ (a stable, non-secret label: lower-case letters, digits, '.', '_' or '-', 2 to 64 characters, e.g. lab-gpu-01)", ErrConfig, id)
	}
	return nil
}
