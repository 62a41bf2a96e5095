package qualrun

import (
	"fmt"
	"os"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// checkRunInputs refuses, as usage errors (exit 2, docs/exit-codes.md) before anything runs, a
// WORKLOAD path that does not exist or cannot be looked at, and an unusable --host-id. Preflight
// checks both again (the library does not trust its caller) and bounds the workload's read (a
// FIFO, a device or an oversize file is a usage error there); this only decides the exit code and
// says which argument is wrong.
func checkRunInputs(workload, hostID string) error {
	if _, err := os.Stat(workload); err != nil {
		return fmt.Errorf("%w: WORKLOAD %s cannot be read: %v; give the path of a committed workload JSON file (workloads/README.md)", exitcode.ErrUsage, workload, err)
	}
	if err := campaign.CheckHostID(hostID); err != nil {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return nil
}
