package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// DenyEnv is the test hook that makes qualrun treat containment mechanisms as unavailable
// (comma-separated driver.Mech* names). It can only take containment away, never weaken it.
const DenyEnv = "QUALKIT_TEST_DENY_MECHANISMS"

// DriversDir is where `qualrun driver` writes its result by default, below the repository.
const DriversDir = ".qualification/drivers"

func driverCommand() *cli.Command {
	return &cli.Command{
		Name:  "driver",
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
	fmt.Fprintf(stderr, "qualrun: test hook %s: treating %s as unavailable\n", DenyEnv, strings.Join(out, ", "))
	return out
}

// driverSummary is the --json summary.
type driverSummary struct {
	ID          string                      `json:"id"`
	Contract    string                      `json:"contract"`
	Status      string                      `json:"status"`
	Reasons     []string                    `json:"reasons"`
	Summary     string                      `json:"summary,omitempty"`
	Result      string                      `json:"result,omitempty"`
	Digest      string                      `json:"digest,omitempty"`
	WorkerLog   string                      `json:"worker_log,omitempty"`
	Unsupported []string                    `json:"unsupported"`
	Tolerances  []contract.ToleranceOutcome `json:"tolerances"`
}

func runDriver(ctx context.Context, f driverFlags, stdout, stderr io.Writer) error {
	raw, err := evidence.ReadFileLimited(f.spec, driver.MaxRequestBytes)
	if err != nil {
		return fmt.Errorf("%w: read driver spec: %v; give a regular file of at most %d bytes", exitcode.ErrUsage, err, driver.MaxRequestBytes)
	}
	if err := schemas.CheckAs(raw, f.spec, contract.DriverSpec); err != nil {
		fmt.Fprintf(stderr, "qualrun: %v\n", err)
		return fmt.Errorf("%w: invalid driver spec", exitcode.ErrRejected)
	}
	var spec contract.DriverSpecDoc
	if err := jsonstrict.DecodeInto(raw, &spec); err != nil {
		return fmt.Errorf("%w: %s: %v", exitcode.ErrRejected, f.spec, err)
	}
	vals := map[string]string{}
	for _, kv := range f.vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fmt.Errorf("%w: --var %q: want NAME=VALUE", exitcode.ErrUsage, kv)
		}
		vals[k] = v
	}
	start := f.source
	if start == "" {
		start = filepath.Dir(f.spec)
	}
	root, err := source.Root(start)
	if err != nil {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	refuse := func(format string, a ...any) error {
		msg := fmt.Sprintf(format, a...)
		if !strings.Contains(msg, "no start gate was created") {
			msg += "\nnothing was started and no start gate was created"
		}
		fmt.Fprintf(stderr, "qualrun: driver: %s\n", msg)
		return fmt.Errorf("%w: driver refused", exitcode.ErrRejected)
	}
	job, err := driverJob(spec, root, vals)
	if err != nil {
		return refuse("%v", err)
	}
	id, err := source.Inspect(ctx, root)
	if err != nil {
		return refuse("source identity: %v", err)
	}
	if !id.Clean {
		if !f.allowDirty {
			return refuse("the worktree is not clean (%s); commit first, or pass --allow-dirty-unsafe (the result then records clean: false)", strings.Join(id.Dirty[:min(len(id.Dirty), 8)], ", "))
		}
		fmt.Fprintln(stderr, "qualrun: WARNING --allow-dirty-unsafe: the worktree is not clean; the result records clean: false")
	}
	for _, rel := range []string{spec.Worker.Script, spec.Request.Path} {
		if !filepath.IsAbs(rel) {
			if err := source.CheckTracked(ctx, root, rel); err != nil && id.Clean {
				return refuse("%v; commit it first", err)
			}
		}
	}

	output := f.output
	if output == "" {
		stamp := strings.ToLower(time.Now().UTC().Format("20060102T150405.000000Z"))
		output = filepath.Join(root, DriversDir, spec.ID+"-"+strings.Replace(stamp, ".", "", 1)+".json")
	}
	if !strings.HasSuffix(output, ".json") {
		return fmt.Errorf("%w: --output %s must end in .json", exitcode.ErrUsage, output)
	}
	base := strings.TrimSuffix(output, ".json")
	logPath, workerOut := base+".worker.log", base+".worker-output.json"
	for _, p := range []string{output, logPath, workerOut} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%w: %s already exists; results are never replaced", exitcode.ErrUsage, p)
		}
	}

	ctx, stop := interruptContext(ctx)
	defer stop()
	sum := driverSummary{ID: spec.ID, Contract: spec.Contract, Reasons: []string{}, Unsupported: []string{}, Tolerances: []contract.ToleranceOutcome{}}
	out, err := driver.Run(ctx, job, driver.Options{LogPath: logPath, Deny: denyList(stderr)})
	var unsup *driver.UnsupportedError
	switch {
	case errors.As(err, &unsup):
		sum.Unsupported = append(sum.Unsupported, unsup.Message)
		if spec.Isolation.Required {
			sum.Status = "failed"
			sum.Reasons = append(sum.Reasons, unsup.Message+"; isolation is required, so the driver fails (the worker was not run)")
		} else {
			sum.Status = "skipped"
			sum.Reasons = append(sum.Reasons, unsup.Message+"; isolation.required is false, so the driver is skipped (the worker never runs unisolated)")
		}
		return finishDriver(sum, f.asJSON, stdout, stderr)
	case errors.Is(err, driver.ErrRefused):
		return refuse("%v", err)
	case err != nil:
		return err
	}
	sum.WorkerLog = logPath
	if out.Output != nil {
		if err := evidence.WriteNew(workerOut, out.Output, 0o644); err != nil {
			return err
		}
	}
	if out.Interrupted {
		fmt.Fprintln(stderr, "qualrun: interrupted; the worker was terminated; no result was written")
		return exitcode.ErrInterrupted
	}
	printContainment(stdout, job, out, f.asJSON)
	result, err := driver.Evaluate(job, out, driver.Provenance{CaseID: spec.ID, Source: contract.DriverSourceOf(id.Schema()), Tolerances: spec.Tolerances,
		Qualrun: contract.BinaryInfo{Version: Version, Digest: selfDigest()}})
	if err != nil {
		sum.Status = "failed"
		sum.Reasons = append(sum.Reasons, out.Failures...)
		if !errors.Is(err, driver.ErrOutput) || len(out.Failures) == 0 {
			sum.Reasons = append(sum.Reasons, err.Error())
		}
		return finishDriver(sum, f.asJSON, stdout, stderr)
	}
	if err := evidence.WriteNew(output, result.Raw, 0o644); err != nil {
		return err
	}
	sum.Status, sum.Summary, sum.Result = result.Status, result.Summary, output
	sum.Reasons = append(sum.Reasons, result.Reasons...)
	sum.Digest = evidence.DigestOf(result.Raw)
	sum.Tolerances = result.Header.Tolerances
	for _, c := range out.Changed {
		sum.Status = "failed"
		sum.Reasons = append(sum.Reasons, c+" (the result was written, but does not stand)")
	}
	return finishDriver(sum, f.asJSON, stdout, stderr)
}

// driverJob resolves a spec into a job: ${NAME} placeholders from --var (whole values only),
// relative paths from the repository root.
func driverJob(spec contract.DriverSpecDoc, root string, vals map[string]string) (driver.Job, error) {
	return driver.JobOf(spec, root, func(v string) (string, error) {
		if strings.HasPrefix(v, "${") && strings.HasSuffix(v, "}") {
			if s, ok := vals[v[2:len(v)-1]]; ok {
				return s, nil
			}
			return "", fmt.Errorf("placeholder %s has no value: pass --var %s=VALUE", v, v[2:len(v)-1])
		}
		return v, nil
	})
}

// printContainment shows how the worker was contained (text mode only).
func printContainment(w io.Writer, job driver.Job, out *driver.Outcome, asJSON bool) {
	if asJSON {
		return
	}
	fmt.Fprintf(w, "driver      %s (%s)\n", job.ID, job.Contract)
	fmt.Fprintf(w, "executable  %s %s\n", out.Executable.Path, out.Executable.Digest)
	fmt.Fprintf(w, "script      %s %s\n", out.Script.Path, out.Script.Digest)
	if p := out.Probe; p != nil {
		fmt.Fprintf(w, "isolation   %s: interfaces %v, outside unreachable %v, host loopback unreachable %v, loopback bind %v\n",
			driver.Mechanism, p.Interfaces, p.OutsideUnreachable, p.HostLoopbackUnreachable, p.LoopbackBind)
	}
	fmt.Fprintf(w, "start gate  created %v (after isolation and hashing), hash-bound exec %v\n", out.GateCreated, out.HashBoundExec)
	code := "none"
	if out.ExitCode != nil {
		code = fmt.Sprint(*out.ExitCode)
	} else if out.Signal != "" {
		code = out.Signal
	}
	fmt.Fprintf(w, "worker      exit %s after %.2f s (timeout %d s), timed out %v, forced %v, residue %d\n",
		code, out.Elapsed.Seconds(), int64(job.Timeout/time.Second), out.TimedOut, out.Forced, len(out.Residue))
	for _, n := range out.Notes {
		fmt.Fprintf(w, "note        %s\n", n)
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
			fmt.Fprintf(stdout, "unsupported %s\n", u)
		}
		for _, o := range sum.Tolerances {
			state := "passed"
			if !o.Passed {
				state = "FAILED"
			}
			obs := "nothing"
			if o.Observed != nil {
				obs = rules.FormatNumber(*o.Observed)
			}
			fmt.Fprintf(stdout, "tolerance   %s %s %s for %s: observed %s, %s\n", o.Metric, o.Op, rules.FormatNumber(o.Limit), o.Subject, obs, state)
		}
		label := "FAILURE   "
		if sum.Status != "failed" {
			label = "note      "
		}
		for _, r := range sum.Reasons {
			fmt.Fprintf(stdout, "%s  %s\n", label, r)
		}
		if sum.Summary != "" {
			fmt.Fprintf(stdout, "shows       %s\n", sum.Summary)
		}
		if sum.Result != "" {
			fmt.Fprintf(stdout, "result      %s (%s)\n", sum.Result, sum.Digest)
		}
		if sum.WorkerLog != "" {
			fmt.Fprintf(stdout, "worker log  %s\n", sum.WorkerLog)
		}
		fmt.Fprintf(stdout, "verdict     %s\n", sum.Status)
	}
	if sum.Status == "passed" || sum.Status == "skipped" {
		return nil
	}
	return fmt.Errorf("%w: driver %s", exitcode.ErrRejected, sum.Status)
}
