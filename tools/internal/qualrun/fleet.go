package qualrun

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/qualkit/qualkit/runner/fleet"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func fleetCommand() *cli.Command {
	return &cli.Command{
		Name:  "fleet",
		Usage: "turn a fleet plan (qualkit.fleet-plan.v1) into the jobs of the engine that runs your hosts: fleet slurm PLAN, fleet k8s PLAN",
		Description: "qualkit does not schedule: Slurm or Kubernetes places one job per plan row, and each job runs\n" +
			"qualrun run on its host from a fresh worktree of the plan's pinned commit, then publishes its receipt\n" +
			"into the plan's receipt directory. Exit codes follow qualrun's table; 3 and 130 are retried. See docs/fleet.md.",
		Subcommands: []*cli.Command{fleetSlurmCommand(), fleetK8sCommand()},
	}
}

// fleetPolicy is qualrun's exit-code table as a fleet engine applies it.
func fleetPolicy() fleet.ExitPolicy {
	retry, final := exitcode.RetryCodes()
	return fleet.ExitPolicy{Retry: retry, Final: final, Usage: exitcode.Usage, Internal: exitcode.Internal}
}

func fleetPlanArg(c *cli.Context, verb string) (*fleet.Plan, error) {
	if c.NArg() != 1 {
		return nil, fmt.Errorf("%w: fleet %s takes one fleet plan: qualrun fleet %s PLAN --output FILE", exitcode.ErrUsage, verb, verb)
	}
	if c.String("output") == "" {
		return nil, fmt.Errorf("%w: fleet %s needs --output FILE for the generated document (it must not exist)", exitcode.ErrUsage, verb)
	}
	if _, err := os.Lstat(c.String("output")); err == nil {
		return nil, fmt.Errorf("%w: --output %s already exists; generated documents never replace a file (choose another name or remove it)", exitcode.ErrUsage, c.String("output"))
	}
	raw, err := evidence.ReadFileLimited(c.Args().First(), fleet.MaxPlanBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: read fleet plan %s: %v", exitcode.ErrUsage, c.Args().First(), err)
	}
	plan, err := fleet.ParsePlan(raw, c.Args().First())
	if err != nil {
		cliapp.Fprintf(c.App.ErrWriter, "qualrun: %v\nnothing was written\n", cliapp.ErrorLines(err))
		return nil, fmt.Errorf("%w: fleet plan refused", exitcode.ErrRejected)
	}
	return plan, nil
}

func fleetSlurmCommand() *cli.Command {
	return &cli.Command{
		Name:      "slurm",
		Usage:     "write the sbatch job-array script of a fleet plan (one array task per row); --submit calls sbatch",
		ArgsUsage: "PLAN",
		Description: "SLURM_ARRAY_TASK_ID is the row index; rows with different Slurm selectors are separate submissions\n" +
			"of the one script (their sbatch lines are printed and written into the script's header). A task exiting\n" +
			"3 or 130 requeues itself (scontrol requeue) at most --max-requeue times; 1 and 2 fail the row.\n" +
			"Exit 0: written (and submitted); 1: the plan is invalid; 2: usage; 3: sbatch failed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the script to `FILE` (must not exist)"},
			&cli.BoolFlag{Name: "submit", Usage: "submit the script with sbatch, once per selector group"},
			&cli.StringFlag{Name: "sbatch", Value: "sbatch", Usage: "the sbatch `PROGRAM` for --submit"},
			&cli.IntFlag{Name: "max-requeue", Value: 2, Usage: "requeue a task after a retryable exit at most `N` times (0-100)"},
		},
		Action: func(c *cli.Context) error {
			plan, err := fleetPlanArg(c, "slurm")
			if err != nil {
				return err
			}
			job, err := fleet.SlurmScript(plan, fleetPolicy(), fleet.SlurmOptions{MaxRequeue: c.Int("max-requeue")})
			if err != nil {
				return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
			}
			return fleetSlurm(c.Context, plan, job, c.String("output"), c.Bool("submit"), c.String("sbatch"), c.App.Writer)
		},
	}
}

func fleetSlurm(ctx context.Context, plan *fleet.Plan, job *fleet.SlurmJob, out string, submit bool, sbatch string, stdout io.Writer) error {
	if err := evidence.WriteNew(out, job.Script, 0o755); err != nil {
		return err
	}
	cliapp.Fprintf(stdout, "wrote %s: %d rows of fleet plan %s (%s) as %d job array(s)\n", out, len(plan.Doc.Rows), plan.Doc.ID, plan.Digest, len(job.Groups))
	for _, g := range job.Groups {
		cliapp.Fprintf(stdout, "  sbatch %s %s\n", strings.Join(g.Options, " "), out)
	}
	if !submit {
		return nil
	}
	ids, err := fleet.SubmitSlurm(ctx, sbatch, out, job)
	for i, id := range ids {
		cliapp.Fprintf(stdout, "submitted job %s (%s)\n", id, job.Groups[i].Options[0])
	}
	return err
}

func fleetK8sCommand() *cli.Command {
	return &cli.Command{
		Name:      "k8s",
		Usage:     "write the Indexed Jobs of a fleet plan (a v1 List, JSON): JOB_COMPLETION_INDEX selects the row",
		ArgsUsage: "PLAN",
		Description: "One Indexed Job per distinct Kubernetes host selector (completionMode Indexed, backoffLimitPerIndex from\n" +
			"the plan, a podFailurePolicy from qualrun's exit codes: 1 and 2 fail the row, 3 and 130 count against its\n" +
			"retries, a disruption is ignored). Built with the k8s.io/api types and checked by round-tripping through\n" +
			"them; apply it with kubectl apply -f FILE. qualkit generates and validates it; it does not run it.\n" +
			"Exit 0: written; 1: the plan is invalid or has no kubernetes section; 2: usage.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the Jobs to `FILE` (must not exist)"},
		},
		Action: func(c *cli.Context) error {
			plan, err := fleetPlanArg(c, "k8s")
			if err != nil {
				return err
			}
			if plan.Doc.Kubernetes == nil {
				cliapp.Fprintf(c.App.ErrWriter, "qualrun: fleet plan %s has no kubernetes section (namespace, image, signing_secret, receipts_claim, backoff_limit_per_index): add it to generate Kubernetes Jobs\nnothing was written\n", c.Args().First())
				return fmt.Errorf("%w: fleet plan refused", exitcode.ErrRejected)
			}
			out, err := fleet.KubernetesJobs(plan, fleetPolicy())
			if err != nil {
				return err
			}
			if err := evidence.WriteNew(c.String("output"), out, 0o644); err != nil {
				return err
			}
			cliapp.Fprintf(c.App.Writer, "wrote %s: %d rows of fleet plan %s (%s) as Indexed Jobs in namespace %s\n  kubectl apply -f %s\n",
				c.String("output"), len(plan.Doc.Rows), plan.Doc.ID, plan.Digest, plan.Doc.Kubernetes.Namespace, c.String("output"))
			return nil
		},
	}
}
