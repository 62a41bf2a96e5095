// Package fleet turns a fleet plan (qualkit.fleet-plan.v1) into the documents of the engines that
// place its jobs: an sbatch job-array script for Slurm, an Indexed Job for Kubernetes. qualkit
// does not schedule; each job is qualrun run on its host, and qualrun owns the server there.
package fleet

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// MaxPlanBytes bounds a fleet plan file before it is read: 10000 rows of a few hundred bytes.
const MaxPlanBytes = 16 << 20

// Plan is a checked fleet plan and the digest of its bytes.
type Plan struct {
	Doc *contract.FleetPlanDoc
	// Digest is sha256:HEX of the plan file, written into the generated documents.
	Digest string
}

// ParsePlan checks raw as a fleet plan; label names it in errors.
func ParsePlan(raw []byte, label string) (*Plan, error) {
	doc, err := schemas.Decode[contract.FleetPlanDoc](raw, label, contract.FleetPlan)
	if err != nil {
		return nil, err
	}
	return &Plan{Doc: doc, Digest: evidence.DigestOf(raw)}, nil
}

// ExitPolicy is how a job's exit code is treated by the engine: Retry codes are retried
// (requeued on Slurm, counted against backoffLimitPerIndex on Kubernetes); every other non-zero
// code fails the row at once. The CLI builds it from qualrun's one exit-code table.
type ExitPolicy struct {
	// Retry lists the exit codes worth another attempt (an environment problem, an interruption).
	Retry []int
	// Final lists the other non-zero codes qualrun uses (a failed check, a usage error): retrying
	// would give the same answer or hide a failure, so the row fails.
	Final []int
	// Usage is the code the job script exits with when the plan and the task index disagree.
	Usage int
	// Internal is the code the job script exits with when it cannot check out or publish.
	Internal int
}

func (p ExitPolicy) validate() error {
	if len(p.Retry) == 0 && len(p.Final) == 0 {
		return fmt.Errorf("fleet: empty exit policy: build it from the exit-code table")
	}
	seen := map[int]bool{}
	for _, c := range append(append([]int{}, p.Retry...), p.Final...) {
		if c <= 0 || c > 255 {
			return fmt.Errorf("fleet: exit code %d in the exit policy is not 1-255", c)
		}
		if seen[c] {
			return fmt.Errorf("fleet: exit code %d is both retried and final", c)
		}
		seen[c] = true
	}
	if !seen[p.Usage] || !seen[p.Internal] {
		return fmt.Errorf("fleet: the script's own codes (usage %d, internal %d) must be in the exit policy", p.Usage, p.Internal)
	}
	return nil
}
