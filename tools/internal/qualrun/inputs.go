package qualrun

import (
	"fmt"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// checkRunInputs refuses, as usage errors (exit 2, docs/exit-codes.md) before anything runs, a
// WORKLOAD path that cannot be read as a regular file and an unusable --host-id. Preflight checks
// both again (the library does not trust its caller); this only decides the exit code and says
// which argument is wrong.
func checkRunInputs(workload, hostID string) error {
	f, _, err := schemas.OpenRegular(workload, schemas.MaxDocumentBytes)
	if err != nil {
		return fmt.Errorf("%w: WORKLOAD %s cannot be read: %v; give the path of a committed workload JSON file (workloads/README.md)", exitcode.ErrUsage, workload, err)
	}
	f.Close()
	if err := campaign.CheckHostID(hostID); err != nil {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return nil
}
