package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// resolveDriver resolves a driver case in preflight: placeholders substituted, the script,
// request (and a repository model) tracked by git, every file bound as an artifact, and the pins
// compared. A mismatch refuses the campaign: nothing is launched, no start gate is ever created.
func (p *Plan) resolveDriver(ctx context.Context, i int, c contract.Case) error {
	where := fmt.Sprintf("case %s (variants/%s/cases/%d)", c.ID, p.variant.ID, i)
	if c.Worker == nil || c.Request == nil || c.Model == nil || c.Isolation == nil {
		return fmt.Errorf("%w: %s: a driver case needs worker, request, model and isolation", ErrWorkload, where)
	}
	sub := func(v string) (string, error) {
		s, err := substitute(v, p.placeholder)
		if err != nil {
			return "", fmt.Errorf("%s: %w", where, err)
		}
		return s, nil
	}
	job, err := driver.JobOf(contract.DriverSpecOf(c), p.root, sub)
	if err != nil {
		return err
	}
	if !filepath.IsAbs(job.Executable) {
		return fmt.Errorf("%w: %s: worker executable %q is not an absolute path", ErrWorkload, where, job.Executable)
	}
	modelPath := job.Model.Path
	tracked := []string{c.Worker.Script}
	if !filepath.IsAbs(c.Request.Path) {
		tracked = append(tracked, c.Request.Path)
	}
	if st, err := os.Stat(job.Model.Abs); err == nil && st.Mode().IsRegular() && !filepath.IsAbs(modelPath) {
		tracked = append(tracked, modelPath)
	}
	for _, rel := range tracked {
		if err := source.CheckTracked(ctx, p.root, rel); err != nil {
			return fmt.Errorf("%w: %s: %v; commit it before running", ErrWorkload, where, err)
		}
	}

	// Bind every file; the pins are compared once preflight has hashed them (checkDriverPins).
	exe, err := filepath.EvalSymlinks(job.Executable)
	if err != nil {
		return fmt.Errorf("%w: %s: worker executable: %v", ErrArtifact, where, err)
	}
	pin := driverPin{where: where, model: job.Model}
	add := func(f artifact.File, want string) {
		if want != "" {
			pin.files = append(pin.files, pinnedFile{f, want})
		}
		if !slices.ContainsFunc(p.files, func(g artifact.File) bool { return g.Kind == f.Kind && g.Path == f.Path }) {
			p.files = append(p.files, f)
		}
	}
	add(artifact.File{Kind: contract.ArtifactKindDriverExecutable, Path: p.displayPath(exe), Abs: exe}, job.ExecutableDigest)
	add(artifact.File{Kind: contract.ArtifactKindDriverScript, Path: job.Script.Path, Abs: job.Script.Abs}, job.Script.Digest)
	add(artifact.File{Kind: contract.ArtifactKindDriverRequest, Path: job.Request.Path, Abs: job.Request.Abs}, job.Request.Digest)
	st, err := os.Stat(job.Model.Abs)
	if err != nil {
		return fmt.Errorf("%w: %s: model: %v", ErrArtifact, where, err)
	}
	if st.IsDir() {
		model, err := artifact.ModelFiles(job.Model.Abs)
		if err != nil {
			return fmt.Errorf("%w: %s: model: %v", ErrArtifact, where, err)
		}
		for _, f := range model {
			pin.modelFiles = append(pin.modelFiles, f.Path)
			add(artifact.File{Kind: contract.ArtifactKindDriverModel, Path: p.displayPath(f.Abs), Abs: f.Abs}, "")
		}
		pin.modelBound = make([]string, len(model))
		for k, f := range model {
			pin.modelBound[k] = p.displayPath(f.Abs)
		}
	} else {
		add(artifact.File{Kind: contract.ArtifactKindDriverModel, Path: job.Model.Path, Abs: job.Model.Abs}, job.Model.Digest)
	}
	p.driverPins = append(p.driverPins, pin)
	p.drivers[c.ID] = job
	return nil
}

// driverPin is what preflight compares for one driver case once every artifact is hashed.
type driverPin struct {
	where string
	files []pinnedFile
	model driver.Input
	// modelFiles (relative to the model directory) and modelBound (as bound) list a model
	// directory's files, in listing order.
	modelFiles, modelBound []string
}

type pinnedFile struct {
	f    artifact.File
	want string
}

// checkDriverPins compares every pinned digest of the driver cases with what preflight hashed.
func (p *Plan) checkDriverPins() error {
	digest := map[string]contract.Artifact{}
	for _, a := range p.artifacts {
		digest[string(a.Kind)+"\x00"+a.Path] = a
	}
	for _, pin := range p.driverPins {
		for _, f := range pin.files {
			if got := digest[string(f.f.Kind)+"\x00"+f.f.Path].Digest; got != f.want {
				return fmt.Errorf("%w: %s: %s %s has digest %s, but the case pins %s (tampered, or the pin was not updated); nothing was started and no start gate was created",
					ErrArtifact, pin.where, strings.TrimPrefix(string(f.f.Kind), "driver_"), f.f.Path, got, f.want)
			}
		}
		if pin.modelFiles == nil {
			continue
		}
		listing := make([]driver.ModelFileEntry, len(pin.modelFiles))
		for k := range pin.modelFiles {
			a := digest[string(contract.ArtifactKindDriverModel)+"\x00"+pin.modelBound[k]]
			listing[k] = driver.ModelFileEntry{Path: pin.modelFiles[k], Digest: a.Digest, Bytes: a.Bytes}
		}
		got, err := driver.ListingDigest(listing)
		if err != nil {
			return err
		}
		if got != pin.model.Digest {
			return fmt.Errorf("%w: %s: model directory %s has listing digest %s, but the case pins %s; nothing was started and no start gate was created",
				ErrArtifact, pin.where, pin.model.Path, got, pin.model.Digest)
		}
	}
	return nil
}

// driverSource is the source identity a driver result records (the receipt's).
func (p *Plan) driverSource() contract.DriverSource {
	return contract.DriverSourceOf(p.source.Schema())
}

// driverCase runs one driver case: the worker under driver.Run, its output evaluated into the
// version-2 result (written never-replacing into the case directory), the worker log and output
// bound as evidence, and the receipt result summarising the result's verdict.
func (r *run) driverCase(ctx context.Context, c contract.Case, rep int, dir string) (contract.Result, error) {
	p := r.p
	job := p.drivers[c.ID]
	res := contract.Result{ID: c.ID, Repetition: int64(rep), Required: c.Required, Status: contract.StatusFailed, Metrics: []contract.Metric{}}
	if err := os.MkdirAll(r.abs(dir), 0o755); err != nil {
		return contract.Result{}, err
	}
	logRel := dir + "/worker.log"
	out, err := driver.Run(ctx, job, driver.Options{LogPath: r.abs(logRel), Deny: p.cfg.DriverDeny, Logger: p.cfg.Logger})
	var unsup *driver.UnsupportedError
	switch {
	case errors.As(err, &unsup):
		if !slices.Contains(r.unsup, unsup.Message) {
			r.unsup = append(r.unsup, unsup.Message)
		}
		status, reason := driver.UnsupportedVerdict(unsup, c.Isolation == nil || c.Isolation.Required, driver.SubjectCase)
		res.Status, res.Details = status, clip(reason)
		return res, nil
	case err != nil:
		if _, statErr := os.Lstat(r.abs(logRel)); statErr == nil {
			r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindDriverLog, Path: logRel, Abs: r.abs(logRel)})
		}
		res.Details = clip("driver: " + err.Error())
		return res, nil
	}
	for _, u := range out.Tracking {
		if !slices.Contains(r.unsup, u) {
			r.unsup = append(r.unsup, u)
		}
	}
	res.DurationSeconds = out.Elapsed.Seconds()
	r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindDriverLog, Path: logRel, Abs: r.abs(logRel)})
	if out.Output != nil {
		rel := dir + "/worker-output.json"
		if err := writeNew(p.root, rel, out.Output); err != nil {
			return contract.Result{}, err
		}
		r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindDriverWorkerOutput, Path: rel, Abs: r.abs(rel)})
	}
	result, err := driver.Evaluate(job, out, driver.Provenance{CaseID: c.ID, Source: p.driverSource(),
		Qualrun: contract.BinaryInfo{Version: p.cfg.Version, Digest: p.cfg.BinaryDigest}, Tolerances: c.Tolerances})
	if err != nil {
		why := slices.Clone(out.Failures)
		if !errors.Is(err, driver.ErrOutput) || len(why) == 0 {
			why = append(why, err.Error())
		}
		res.Details = clip(strings.Join(why, "; "))
		return res, nil
	}
	rel := dir + "/result.json"
	if err := writeNew(p.root, rel, result.Raw); err != nil {
		return contract.Result{}, err
	}
	r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindDriverResult, Path: rel, Abs: r.abs(rel)})
	res.Status = contract.Status(result.Status)
	res.CaseResult = &contract.FileRef{Path: rel, Digest: evidence.DigestOf(result.Raw)}
	if result.Status == contract.DriverStatusPassed {
		res.Details = clip(result.Summary)
	} else {
		res.Details = clip(strings.Join(result.Reasons, "; "))
	}
	return res, nil
}
