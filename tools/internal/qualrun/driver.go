package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// DenyEnv is the test hook that makes qualrun treat containment mechanisms as unavailable
// (comma-separated driver.Mech* names). It can only take containment away, never weaken it.
const DenyEnv = "QUALKIT_TEST_DENY_MECHANISMS"

// DriversDir is where `qualrun driver` writes its result by default, below the repository.
const DriversDir = campaign.DriversDir

func driverCommand() *cli.Command {
	return &cli.Command{
		Name:  "driver", // not a contract value: the CLI verb
		Usage: "run one evidence driver (qualkit.driver-spec.v1) and write its self-hashed result",
		Description: "Hashes the worker executable, script, request and model and compares the pins (a mismatch is\n" +
			"refused before anything starts); starts the worker in a private network namespace with only\n" +
			"loopback, proven by a probe inside; creates the start gate; runs exactly the hashed bytes with a\n" +
			"closed environment and a monotonic deadline; checks that nothing is left behind; evaluates the\n" +
			"declared tolerances and writes the version-2 result (never replacing a file), with the worker log\n" +
			"and output beside it. The source tree must be clean (or --allow-dirty-unsafe). See docs/drivers.md.\n" +
			"Exit 0: passed (or skipped: a mechanism is missing and isolation.required is false);\n" +
			"1: refused, failed, or a required mechanism is missing; 2: usage; 130: interrupted.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "spec", Usage: "driver spec `FILE` (qualkit.driver-spec.v1)"},
			&cli.StringFlag{Name: "output", Usage: "result `PATH` (new; default " + DriversDir + "/<id>-<UTC time>.json in the repository)"},
			&cli.StringFlag{Name: "source", Usage: "`DIR` inside the repository the spec's relative paths are relative to (default: the spec's directory)"},
			&cli.StringSliceFlag{Name: "var", Usage: "value of a ${NAME} placeholder in the spec, `NAME=VALUE` (repeatable)"},
			&cli.BoolFlag{Name: "allow-dirty-unsafe", Usage: "run on a worktree that is not clean; the result records clean: false"},
			&cli.BoolFlag{Name: "json", Usage: "print a machine summary (JSON) instead of the text summary"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: driver takes no arguments, got %q", exitcode.ErrUsage, c.Args().First())
			}
			if c.String("spec") == "" {
				return fmt.Errorf("%w: driver needs --spec FILE", exitcode.ErrUsage)
			}
			return runDriver(c.Context, driverFlags{spec: c.String("spec"), output: c.String("output"), source: c.String("source"),
				vars: c.StringSlice("var"), allowDirty: c.Bool("allow-dirty-unsafe"), asJSON: c.Bool("json")}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

type driverFlags struct {
	spec, output, source string
	vars                 []string
	allowDirty, asJSON   bool
}

// denyList reads the DenyEnv test hook.
func denyList(stderr io.Writer) []string {
	v := os.Getenv(DenyEnv)
	if v == "" {
		return nil
	}
	var out []string
	for _, m := range strings.Split(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, m)
		}
	}
	cliapp.Fprintf(stderr, "qualrun: test hook %s: treating %s as unavailable\n", DenyEnv, strings.Join(out, ", "))
	return out
}

// driverSummary is the --json summary.
type driverSummary struct {
	ID          string                      `json:"id"`
	Contract    string                      `json:"contract"`
	Status      contract.Status             `json:"status"`
	Reasons     []string                    `json:"reasons"`
	Summary     string                      `json:"summary,omitempty"`
	Result      string                      `json:"result,omitempty"`
	Digest      string                      `json:"digest,omitempty"`
	WorkerLog   string                      `json:"worker_log,omitempty"`
	Unsupported []string                    `json:"unsupported"`
	Tolerances  []contract.ToleranceOutcome `json:"tolerances"`
}

func runDriver(ctx context.Context, f driverFlags, stdout, stderr io.Writer) error {
	plan, err := campaign.PrepareDriver(ctx, campaign.DriverConfig{Spec: f.spec, Output: f.output, SourceDir: f.source, Vars: f.vars,
		AllowDirtyUnsafe: f.allowDirty, Version: Version, BinaryDigest: selfDigest(),
		Warn: func(msg string) { cliapp.Fprintf(stderr, "qualrun: %s\n", msg) }})
	if err != nil {
		return driverError(err, stderr)
	}
	ctx, stop := interruptContext(ctx)
	defer stop()
	out, err := plan.Run(ctx, denyList(stderr))
	if err != nil {
		return driverError(err, stderr)
	}
	sum := driverSummary{ID: out.Job.ID, Contract: out.Job.Contract, Status: out.Status, Reasons: out.Reasons, Summary: out.Summary,
		Result: out.Result, Digest: out.Digest, WorkerLog: out.WorkerLog, Unsupported: out.Unsupported, Tolerances: out.Tolerances}
	if out.Run == nil { // an unsupported mechanism: the worker never started
		return finishDriver(sum, f.asJSON, stdout, stderr)
	}
	if out.Interrupted {
		fmt.Fprintln(stderr, "qualrun: interrupted; the worker was terminated; no result was written")
		return exitcode.ErrInterrupted
	}
	printContainment(stdout, out.Job, out.Run, f.asJSON)
	return finishDriver(sum, f.asJSON, stdout, stderr)
}

// driverError maps a driver run's error to what qualrun prints and its exit code.
func driverError(err error, stderr io.Writer) error {
	switch {
	case errors.Is(err, campaign.ErrInput):
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	case errors.Is(err, campaign.ErrDriverSpec):
		cliapp.Fprintf(stderr, "qualrun: %v\n", cliapp.ErrorLines(err))
		return fmt.Errorf("%w: invalid driver spec", exitcode.ErrRejected)
	case errors.Is(err, campaign.ErrDriverRefused):
		cliapp.Fprintf(stderr, "qualrun: driver: %v\n", cliapp.ErrorLines(err))
		return fmt.Errorf("%w: driver refused", exitcode.ErrRejected)
	}
	return err
}

// printContainment shows how the worker was contained (text mode only).
func printContainment(w io.Writer, job driver.Job, out *driver.Outcome, asJSON bool) {
	if asJSON {
		return
	}
	cliapp.Fprintf(w, "driver      %s (%s)\n", job.ID, job.Contract)
	cliapp.Fprintf(w, "executable  %s %s\n", out.Executable.Path, out.Executable.Digest)
	cliapp.Fprintf(w, "script      %s %s\n", out.Script.Path, out.Script.Digest)
	if p := out.Probe; p != nil {
		cliapp.Fprintf(w, "isolation   %s: interfaces %v, outside unreachable %v, host loopback unreachable %v, loopback bind %v\n",
			driver.Mechanism, p.Interfaces, p.OutsideUnreachable, p.HostLoopbackUnreachable, p.LoopbackBind)
	}
	cliapp.Fprintf(w, "start gate  created %v (after isolation and hashing), hash-bound exec %v\n", out.GateCreated, out.HashBoundExec)
	code := "none" // not a contract value: the summary's word for no exit code
	if out.ExitCode != nil {
		code = fmt.Sprint(*out.ExitCode)
	} else if out.Signal != "" {
		code = out.Signal
	}
	cliapp.Fprintf(w, "worker      exit %s after %.2f s (timeout %d s), timed out %v, forced %v, residue %d\n",
		code, out.Elapsed.Seconds(), int64(job.Timeout/time.Second), out.TimedOut, out.Forced, len(out.Residue))
	for _, n := range out.Notes {
		cliapp.Fprintf(w, "note        %s\n", n)
	}
}

// finishDriver prints the summary and maps the status to the exit code.
func finishDriver(sum driverSummary, asJSON bool, stdout, stderr io.Writer) error {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false) // ">=" stays readable
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	} else {
		for _, u := range sum.Unsupported {
			cliapp.Fprintf(stdout, "unsupported %s\n", u)
		}
		for _, o := range sum.Tolerances {
			state := "passed" // not a contract value: the summary's word for a tolerance that held (a bool)
			if !o.Passed {
				state = "FAILED"
			}
			obs := "nothing"
			if o.Observed != nil {
				obs = rules.FormatNumber(*o.Observed)
			}
			cliapp.Fprintf(stdout, "tolerance   %s %s %s for %s: observed %s, %s\n", o.Metric, o.Op, rules.FormatNumber(o.Limit), o.Subject, obs, state)
		}
		label := "FAILURE   "
		if sum.Status != contract.StatusFailed {
			label = "note      "
		}
		for _, r := range sum.Reasons {
			cliapp.Fprintf(stdout, "%s  %s\n", label, r)
		}
		if sum.Summary != "" {
			cliapp.Fprintf(stdout, "shows       %s\n", sum.Summary)
		}
		if sum.Result != "" {
			cliapp.Fprintf(stdout, "result      %s (%s)\n", sum.Result, sum.Digest)
		}
		if sum.WorkerLog != "" {
			cliapp.Fprintf(stdout, "worker log  %s\n", sum.WorkerLog)
		}
		cliapp.Fprintf(stdout, "verdict     %s\n", sum.Status)
	}
	if sum.Status == contract.StatusPassed || sum.Status == contract.StatusSkipped {
		return nil
	}
	return fmt.Errorf("%w: driver %s", exitcode.ErrRejected, sum.Status)
}
