package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// DriversDir is where a driver run on its own writes its result by default, below the repository.
const DriversDir = ".qualification/drivers"

// Errors of a driver run on its own (besides ErrInput). Their text does not name the class.
var (
	// ErrDriverSpec: the driver spec does not validate (qualkit.driver-spec.v1).
	ErrDriverSpec = errors.New("invalid driver spec")
	// ErrDriverRefused: the run was refused (a pin mismatch, an unclean or untracked source, an
	// unresolvable placeholder); nothing was started and no start gate was created.
	ErrDriverRefused = errors.New("driver refused")
)

// DriverConfig is what `qualrun driver` runs: one evidence driver (qualkit.driver-spec.v1) on its
// own, outside a campaign.
type DriverConfig struct {
	// Spec is the driver spec file.
	Spec string
	// Output is the result path (new, ending in .json); "" is DriversDir/<id>-<UTC time>.json in
	// the repository. The worker log and output go beside it (.worker.log, .worker-output.json).
	Output string
	// SourceDir is a directory inside the repository the spec's relative paths are relative to
	// ("" is the spec's directory).
	SourceDir string
	// Vars are NAME=VALUE values of the spec's ${NAME} placeholders (whole values only).
	Vars []string
	// AllowDirtyUnsafe runs on a worktree that is not clean; the result records clean: false.
	AllowDirtyUnsafe bool
	// Version and BinaryDigest identify qualrun in the result.
	Version, BinaryDigest string
	// Warn receives warnings (the unsafe allowance in use); nil drops them.
	Warn func(string)
}

// DriverPlan is a driver spec resolved, its source checked and its output paths chosen; nothing
// has started.
type DriverPlan struct {
	spec                       contract.DriverSpecDoc
	job                        driver.Job
	id                         *source.Identity
	cfg                        DriverConfig
	output, logPath, workerOut string
}

// DriverOutcome is a finished driver run.
type DriverOutcome struct {
	// Job is the resolved job; Run what the worker did (nil: it was never started, see Unsupported).
	Job driver.Job
	Run *driver.Outcome
	// Interrupted: ctx ended first; the worker was terminated and no result was written.
	Interrupted bool
	// Status is passed, failed or skipped; Reasons say why (a failed status) or note (the others).
	Status  contract.Status
	Reasons []string
	// Summary is what a written result shows; Result its path and Digest its digest ("" when no
	// result was written). WorkerLog is the worker log's path.
	Summary, Result, Digest, WorkerLog string
	// Unsupported lists the mechanisms the host lacks.
	Unsupported []string
	// Tolerances are the evaluated tolerances of a written result.
	Tolerances []contract.ToleranceOutcome
}

// refused is an ErrDriverRefused error; its text says that nothing was started.
func refused(format string, a ...any) error {
	msg := fmt.Sprintf(format, a...)
	if !strings.Contains(msg, "no start gate was created") {
		msg += "\nnothing was started and no start gate was created"
	}
	return classError{ErrDriverRefused, errors.New(msg)}
}

// PrepareDriver reads and validates the spec, resolves its placeholders and paths, checks the
// source tree (clean, the script and request tracked) and chooses output paths that do not exist.
// It starts nothing. Errors are ErrInput, ErrDriverSpec or ErrDriverRefused.
func PrepareDriver(ctx context.Context, cfg DriverConfig) (*DriverPlan, error) {
	raw, err := readInput(cfg.Spec, "driver spec", driver.MaxRequestBytes)
	if err != nil {
		return nil, classError{ErrInput, err}
	}
	spec, err := schemas.Decode[contract.DriverSpecDoc](raw, cfg.Spec, contract.DriverSpec)
	if err != nil {
		return nil, classError{ErrDriverSpec, err}
	}
	p := &DriverPlan{cfg: cfg, spec: *spec}
	vals := map[string]string{}
	for _, kv := range cfg.Vars {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, inputf("--var %q: want NAME=VALUE", kv)
		}
		vals[k] = v
	}
	start := cfg.SourceDir
	if start == "" {
		start = filepath.Dir(cfg.Spec)
	}
	root, err := source.Root(start)
	if err != nil {
		return nil, classError{ErrInput, err}
	}
	if p.job, err = specJob(p.spec, root, vals); err != nil {
		return nil, refused("%v", err)
	}
	if p.id, err = source.Inspect(ctx, root); err != nil {
		return nil, refused("source identity: %v", err)
	}
	if !p.id.Clean {
		if !cfg.AllowDirtyUnsafe {
			return nil, refused("the worktree is not clean (%s); commit first, or pass --allow-dirty-unsafe (the result then records clean: false)", strings.Join(p.id.Dirty[:min(len(p.id.Dirty), 8)], ", "))
		}
		if cfg.Warn != nil {
			cfg.Warn("WARNING --allow-dirty-unsafe: the worktree is not clean; the result records clean: false")
		}
	}
	for _, rel := range []string{p.spec.Worker.Script, p.spec.Request.Path} {
		if !filepath.IsAbs(rel) {
			if err := source.CheckTracked(ctx, root, rel); err != nil && p.id.Clean {
				return nil, refused("%v; commit it first", err)
			}
		}
	}
	p.output = cfg.Output
	if p.output == "" {
		stamp := strings.ToLower(time.Now().UTC().Format("20060102T150405.000000Z"))
		p.output = filepath.Join(root, DriversDir, p.spec.ID+"-"+strings.Replace(stamp, ".", "", 1)+".json")
	}
	if !strings.HasSuffix(p.output, ".json") {
		return nil, inputf("--output %s must end in .json", p.output)
	}
	base := strings.TrimSuffix(p.output, ".json")
	p.logPath, p.workerOut = base+".worker.log", base+".worker-output.json"
	for _, f := range []string{p.output, p.logPath, p.workerOut} {
		if _, err := os.Lstat(f); err == nil {
			return nil, inputf("%s already exists; results are never replaced", f)
		}
	}
	return p, nil
}

// specJob resolves a spec into a job: ${NAME} placeholders from vals (whole values only),
// relative paths from the repository root.
func specJob(spec contract.DriverSpecDoc, root string, vals map[string]string) (driver.Job, error) {
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

// Run runs the driver once (driver.Run, with deny's mechanisms treated as unavailable): the
// worker contained, its output written beside the result, the result evaluated and written
// (never replacing a file). A mechanism the host lacks is decided by driver.UnsupportedVerdict.
// An ErrDriverRefused error means nothing was started; any other error means the evidence could
// not be written.
func (p *DriverPlan) Run(ctx context.Context, deny []string) (*DriverOutcome, error) {
	o := &DriverOutcome{Job: p.job, Reasons: []string{}, Unsupported: []string{}, Tolerances: []contract.ToleranceOutcome{}}
	out, err := driver.Run(ctx, p.job, driver.Options{LogPath: p.logPath, Deny: deny})
	var unsup *driver.UnsupportedError
	switch {
	case errors.As(err, &unsup):
		status, reason := driver.UnsupportedVerdict(unsup, p.spec.Isolation.Required, driver.SubjectDriver)
		o.Status, o.Reasons, o.Unsupported = status, append(o.Reasons, reason), append(o.Unsupported, unsup.Message)
		return o, nil
	case errors.Is(err, driver.ErrRefused):
		return nil, refused("%v", err)
	case err != nil:
		return nil, err
	}
	o.Run, o.WorkerLog = out, p.logPath
	if out.Output != nil {
		if err := evidence.WriteNew(p.workerOut, out.Output, 0o644); err != nil {
			return nil, err
		}
	}
	if out.Interrupted {
		o.Interrupted = true
		return o, nil
	}
	result, err := driver.Evaluate(p.job, out, driver.Provenance{CaseID: p.spec.ID, Source: contract.DriverSourceOf(p.id.Schema()), Tolerances: p.spec.Tolerances,
		Qualrun: contract.BinaryInfo{Version: p.cfg.Version, Digest: p.cfg.BinaryDigest}})
	if err != nil {
		o.Status = contract.StatusFailed
		o.Reasons = append(o.Reasons, out.Failures...)
		if !errors.Is(err, driver.ErrOutput) || len(out.Failures) == 0 {
			o.Reasons = append(o.Reasons, err.Error())
		}
		return o, nil
	}
	if err := evidence.WriteNew(p.output, result.Raw, 0o644); err != nil {
		return nil, err
	}
	o.Status, o.Summary, o.Result = contract.Status(result.Status), result.Summary, p.output
	o.Reasons = append(o.Reasons, result.Reasons...)
	o.Digest = evidence.DigestOf(result.Raw)
	o.Tolerances = result.Header.Tolerances
	for _, c := range out.Changed {
		o.Status = contract.StatusFailed
		o.Reasons = append(o.Reasons, c+" (the result was written, but does not stand)")
	}
	return o, nil
}
