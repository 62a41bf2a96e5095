package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// ErrInterrupted: the campaign was stopped by its context (a signal); the server was shut down
// and an interrupted receipt (verdict "interrupted", never publishable) binds what was written.
var ErrInterrupted = errors.New("campaign interrupted")

// Limits of case execution.
const (
	// CaptureLimit caps each command output stream.
	CaptureLimit = 16 << 20
	// MaxCaseResultBytes caps a command-produced case result file.
	MaxCaseResultBytes = 4 << 20
	// TerminationGrace is the time a timed-out command group gets between SIGTERM and SIGKILL.
	TerminationGrace = 5 * time.Second
)

// Outcome is a finished campaign.
type Outcome struct {
	Receipt *contract.ReceiptDoc
	// ReceiptPath and RunDir are relative to the repository root.
	ReceiptPath, RunDir string
}

// run is the state of one campaign run.
type run struct {
	p        *Plan
	epoch    time.Time
	evidence []artifact.File
	results  []contract.Result
	notes    []string
	unsup    []string
	server   *lifecycle.Server
	srvErr   error
	life     *contract.LifecycleRecordDoc
	// phase is what the run is doing, for an interruption's record (mu guards it and atPhase).
	mu      sync.Mutex
	phase   string
	atPhase string
	// interruption is set when a signal interrupted the campaign.
	interruption *contract.Interruption
	// saturated names the serving case executions that passed with degraded rows because they
	// declare measures_saturation: the receipt is then not publishable as a rate claim.
	saturated []string
	// lagging names the serving case executions with degraded closed-loop rows: noted in the
	// receipt (laggingRows).
	lagging []string
}

func (r *run) abs(rel string) string { return filepath.Join(r.p.root, rel) }

// scrub replaces the values of the campaign's secrets in bytes about to become evidence (before
// they are hashed), with markers naming their variables.
func (r *run) scrub(b []byte) []byte { return r.p.Redactor().Bytes(b) }

// writeJSON writes v (indented, newline-terminated) as new evidence and records it as an artifact.
func (r *run) writeJSON(rel string, kind contract.ArtifactKind, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := writeNew(r.p.root, rel, r.scrub(append(b, '\n'))); err != nil {
		return err
	}
	r.evidence = append(r.evidence, artifact.File{Kind: kind, Path: rel, Abs: r.abs(rel)})
	return nil
}

// Run executes the campaign. When ctx ends first (qualrun gives it an *Interruption cause) it
// stops traffic, shuts the server down, writes an interrupted receipt that binds every file
// written so far and returns it with ErrInterrupted; any other error means the evidence could
// not be written.
func (p *Plan) Run(ctx context.Context) (*Outcome, error) {
	defer p.Release()
	r := &run{p: p, epoch: time.Now()}
	if p.recipe != nil {
		if _, err := lifecycle.BearerToken(p.recipe, nil); err != nil {
			return nil, fmt.Errorf("launch recipe %s: %w", p.recipeRel, err)
		}
	}
	cfg, err := p.effectiveConfig()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(r.abs(RunsDir), 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", RunsDir, err)
	}
	if err := checkUnder(p.root, p.runRel); err != nil {
		return nil, err
	}
	if err := os.Mkdir(r.abs(p.runRel), 0o755); err != nil {
		return nil, fmt.Errorf("create run directory %s: %w", p.runRel, err)
	}
	if err := r.writeJSON(p.runRel+"/effective-run-config.json", contract.ArtifactKindConfigFile, cfg); err != nil {
		return nil, err
	}
	r.notes = append(r.notes, secretFileNotes(p.secretFiles)...)
	stopWatch := r.watchInterrupt(ctx)
	defer stopWatch()
	if p.recipe != nil && p.skip == "" {
		r.launch(ctx)
	}
	interrupted := r.cases(ctx)
	if interrupted {
		r.interrupted(ctx)
	}
	r.setPhase("shutdown")
	if r.server != nil {
		p.cfg.progress("shutdown", "stopping the server", 0, 0)
		if interrupted {
			r.server.Fail(fmt.Errorf("interrupted: qualrun received %s during %s", r.interruption.Signal, r.interruption.Phase))
		}
		r.life = r.server.Shutdown(context.WithoutCancel(ctx))
		r.unsup = append(r.unsup, r.life.Unsupported...)
		if err := r.writeJSON(p.runRel+"/lifecycle.json", contract.ArtifactKindLifecycleRecord, r.life); err != nil {
			return nil, err
		}
		r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindServerLog, Path: p.runRel + "/server.log", Abs: r.abs(p.runRel + "/server.log")})
		r.notes = append(r.notes, scrubbedNotes(p.runRel+"/server.log", r.server.ScrubbedLog())...)
	}
	// What remains only writes and checks what happened: a late signal no longer cuts it short.
	ctx = context.WithoutCancel(ctx)
	r.setPhase("end checks")
	p.cfg.progress("checks", "source and artifacts unchanged", 0, 0)
	r.endChecks(ctx)
	p.cfg.progress("receipt", "writing the receipt", 0, 0)
	rc, err := r.receipt(ctx)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Receipt: rc, ReceiptPath: p.outputRel, RunDir: p.runRel}
	if interrupted {
		return out, ErrInterrupted
	}
	return out, nil
}

// effectiveConfig is the campaign's effective run configuration (qualkit.effective-run-config.v1),
// checked against its contract: one that does not validate is a qualkit bug, never written.
func (p *Plan) effectiveConfig() (*contract.EffectiveRunConfigDoc, error) {
	doc := &contract.EffectiveRunConfigDoc{
		Schema:          contract.EffectiveRunConfigSchema,
		Workload:        contract.EffectiveRunWorkload{ID: p.workload.ID, Path: p.workloadRel, Variant: p.variant.ID},
		Variables:       p.vars,
		Seed:            p.workload.Determinism.Seed,
		EffectiveConfig: p.variant.EffectiveConfig,
		ModelDir:        optional(p.cfg.ModelDir),
		ModelID:         optional(p.cfg.ModelID),
		SecretFiles:     p.secretFiles,
		Qualrun:         contract.EffectiveRunQualrun{Command: p.cfg.Command, Version: p.cfg.Version},
	}
	if doc.Variables == nil {
		doc.Variables = map[string]any{}
	}
	if doc.EffectiveConfig == nil {
		doc.EffectiveConfig = contract.Config{}
	}
	b, err := json.Marshal(doc)
	if err == nil {
		err = schemas.CheckAs(b, p.runRel+"/effective-run-config.json", contract.EffectiveRunConfig)
	}
	if err != nil {
		return nil, fmt.Errorf("the effective run configuration does not validate (a qualkit bug; nothing was run): %w", err)
	}
	return doc, nil
}

// optional is nil for "" (not given), else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// launch starts the owned server (lifecycle.Start: launch, readiness, listener ownership).
func (r *run) launch(ctx context.Context) {
	p := r.p
	p.cfg.progress("launch", "launching "+p.recipe.ID, 0, 0)
	r.setPhase("launch")
	digest := ""
	for _, a := range p.artifacts {
		if a.Kind == contract.ArtifactKindLaunchRecipe {
			digest = a.Digest
		}
	}
	srv, err := lifecycle.Start(ctx, p.recipe, lifecycle.Options{
		RecipeDir: p.recipeDir, RecipeDigest: digest, LogPath: r.abs(p.runRel + "/server.log"),
		Epoch: r.epoch, Logger: p.cfg.Logger, RunID: p.receiptID, Keeper: p.cfg.Keeper, Redactor: p.Redactor(),
	}, func(*lifecycle.Server) { r.setPhase("readiness") })
	r.server = srv
	if srv == nil {
		r.srvErr = fmt.Errorf("server launch: %w", err)
		return
	}
	if err != nil {
		r.srvErr = fmt.Errorf("server startup: %w", err)
		return
	}
	p.cfg.progress("ready", "server ready", 0, 0)
}

// cases runs every case in declared order, determinism.repetitions times. It reports whether the
// campaign was interrupted.
func (r *run) cases(ctx context.Context) bool {
	p := r.p
	if p.skip != "" {
		r.skipped()
		return false
	}
	reps := int(p.workload.Determinism.Repetitions)
	for rep := 0; rep < reps; rep++ {
		for i, c := range p.variant.Cases {
			if ctx.Err() != nil {
				return true
			}
			dir := fmt.Sprintf("%s/cases/%03d-%s-r%03d", p.runRel, i, c.ID, rep)
			r.setPhase(fmt.Sprintf("case %s repetition %d", c.ID, rep))
			p.cfg.progress("case", fmt.Sprintf("%s (repetition %d of %d)", c.ID, rep+1, reps), i, len(p.variant.Cases))
			var res contract.Result
			var err error
			switch c.Kind {
			case contract.CaseKindServing:
				res, err = r.serving(ctx, c, rep, dir)
			case contract.CaseKindDriver:
				res, err = r.driverCase(ctx, c, rep, dir)
			default:
				res, err = r.command(ctx, c, rep, dir)
			}
			if err != nil {
				res = failedResult(c, rep, "evidence: "+err.Error())
			}
			r.results = append(r.results, res)
			if ctx.Err() != nil {
				return true
			}
		}
	}
	return false
}

func failedResult(c contract.Case, rep int, details string) contract.Result {
	return contract.Result{ID: c.ID, Repetition: int64(rep), Required: c.Required, Status: contract.StatusFailed, Metrics: []contract.Metric{}, Details: clip(details)}
}

// clip bounds details to the contract's 2048 characters.
func clip(s string) *string {
	if r := []rune(s); len(r) > 2048 {
		s = string(r[:2045]) + "..."
	}
	return &s
}

// writeCaseResult validates and writes a case result, returning its reference.
func (r *run) writeCaseResult(dir string, cr *contract.CaseResultDoc) (*contract.FileRef, error) {
	rel := dir + "/case-result.json"
	b, err := json.MarshalIndent(cr, "", "  ")
	if err != nil {
		return nil, err
	}
	b = r.scrub(append(b, '\n'))
	if err := schemas.CheckAs(b, rel, contract.CaseResult); err != nil {
		return nil, fmt.Errorf("runner case result does not validate: %w", err)
	}
	if err := writeNew(r.p.root, rel, b); err != nil {
		return nil, err
	}
	r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindCaseResult, Path: rel, Abs: r.abs(rel)})
	return &contract.FileRef{Path: rel, Digest: evidence.DigestOf(b)}, nil
}

func (r *run) serving(ctx context.Context, c contract.Case, rep int, dir string) (contract.Result, error) {
	p := r.p
	start := time.Now()
	cr := &contract.CaseResultDoc{Schema: contract.CaseResultSchema, CaseID: c.ID, EffectiveConfig: p.variant.EffectiveConfig,
		Metrics: []contract.Metric{}, Tolerances: []contract.Tolerance{}, Rows: []contract.Row{}}
	if cr.EffectiveConfig == nil {
		cr.EffectiveConfig = contract.Config{}
	}
	finish := func(status contract.Status, details string) (contract.Result, error) {
		cr.Status = status
		cr.DurationSeconds = time.Since(start).Seconds()
		if details != "" {
			cr.Details = clip(details)
		}
		ref, err := r.writeCaseResult(dir, cr)
		if err != nil {
			return contract.Result{}, err
		}
		return contract.Result{ID: c.ID, Repetition: int64(rep), Required: c.Required, Status: status,
			DurationSeconds: cr.DurationSeconds, Metrics: cr.Metrics, CaseResult: ref, Details: cr.Details}, nil
	}
	if r.srvErr != nil {
		return finish(contract.StatusFailed, r.srvErr.Error())
	}
	seed := int64(0)
	if p.workload.Determinism.Seed != nil {
		seed = *p.workload.Determinism.Seed
	}
	// timeout_seconds bounds the whole case (every row, repetition and warmup) on the monotonic
	// clock: a case over it stops, keeps the records so far and fails (see stopped). Records go
	// to disk as each request ends (recordFiles), so an interruption keeps them too.
	cctx, cancel := context.WithTimeout(ctx, time.Duration(c.TimeoutSeconds)*time.Second)
	defer cancel()
	pauses, stopPauses := watchPauses()
	defer stopPauses()
	rows := newRowFiles(r, dir)
	tel := r.startTelemetry(c)
	plan := load.Plan{CaseID: c.ID, Case: c, BaseURL: r.server.BaseURL(), ModelID: p.recipe.ModelID,
		Prompts: p.prompts[c.ID], Trace: p.traces[c.ID], Seed: seed, Epoch: r.epoch, ScrapeMetrics: true, ScrubPage: p.Redactor().Bytes, TokenEnv: p.recipe.TokenEnv(), CacheResetPath: cacheResetPath(p.recipe),
		Tokens: p.counters[c.ID], Tools: p.tools[c.ID],
		Progress: p.cfg.servingProgress(c.ID, len(c.Concurrency)*int(c.Repetitions))}
	var res *load.Result
	var capacity *contract.Capacity
	var err error
	if c.CapacitySearch != nil {
		plan.Progress = p.cfg.servingProgress(c.ID, int(c.CapacitySearch.MaxSteps))
		res, capacity, err = capacitySearch(cctx, plan, load.WithRecordSink(rows.add))
	} else {
		res, err = load.Run(cctx, plan, load.WithRecordSink(rows.add))
	}
	tel.stop()
	timedOut := ctx.Err() == nil && errors.Is(cctx.Err(), context.DeadlineExceeded)
	interrupted := ctx.Err() != nil
	if err != nil && !timedOut && !interrupted {
		if cerr := rows.closeAll(); cerr != nil {
			return contract.Result{}, cerr
		}
		return finish(contract.StatusFailed, "load: "+err.Error())
	}
	if res == nil {
		res = &load.Result{}
	}
	switch {
	case interrupted:
		cr.Stopped = &contract.Stopped{Reason: contract.StoppedReasonInterrupted, AfterSeconds: time.Since(start).Seconds()}
	case timedOut:
		cr.Stopped = &contract.Stopped{Reason: contract.StoppedReasonTimeout, AfterSeconds: time.Since(start).Seconds()}
	}
	failures := int64(0)
	var requests int64
	for _, row := range res.Rows {
		ref, ferr := rows.finish(contract.RowKey{Concurrency: row.Row.Concurrency, Repetition: row.Row.Repetition})
		if ferr != nil {
			return contract.Result{}, ferr
		}
		row.Row.Records = ref
		if err := r.telemetryRow(tel, ref.Path, &row.Row, row.Records); err != nil {
			return contract.Result{}, err
		}
		if err := r.scrapeRow(ref.Path, &row.Row, row.Telemetry); err != nil {
			return contract.Result{}, err
		}
		cr.Rows = append(cr.Rows, row.Row)
		failures += countedFailures(c, row.Row)
		requests += row.Row.Requests
		p.cfg.progress("row", fmt.Sprintf("%s c=%d r=%d: %d/%d ok", c.ID, row.Row.Concurrency, row.Row.Repetition, row.Row.Successes, row.Row.Requests), len(cr.Rows), len(c.Concurrency)*int(c.Repetitions))
	}
	if cerr := rows.closeAll(); cerr != nil {
		return contract.Result{}, cerr
	}
	if interrupted {
		cr.Metrics = append(metric.CaseCountMetrics(cr.Rows), metric.CaseMetrics(cr.Rows)...)
		return finish(contract.StatusFailed, fmt.Sprintf("interrupted by %s after %.1f s: %d of %d rows ran (the last one cut short); their request records are kept",
			interruptSignal(ctx), cr.Stopped.AfterSeconds, len(cr.Rows), len(c.Concurrency)*int(c.Repetitions)))
	}
	cr.Metrics = append(metric.CaseCountMetrics(cr.Rows), metric.CaseMetrics(cr.Rows)...)
	if cr.Stopped != nil {
		return finish(contract.StatusFailed, fmt.Sprintf("stopped by the case's timeout_seconds %d after %.3f s: %d of %d rows ran (the last may be partial), %d requests recorded; raise timeout_seconds or declare fewer requests", c.TimeoutSeconds, cr.Stopped.AfterSeconds, len(cr.Rows), len(c.Concurrency)*int(c.Repetitions), requests))
	}
	var problems []string
	if n := pauses(); n > 0 {
		problems = append(problems, fmt.Sprintf("qualrun was stopped and continued (SIGCONT) during this case (%d time(s)): the pause is in its timings and no request went out meanwhile, so its rows are not measurements of the server; rerun without stopping qualrun (Ctrl-Z, SIGSTOP, a debugger)", n))
	}
	if failures > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d requests failed (see the request records)", failures, requests))
	}
	if stopped := stoppedRows(cr.Rows); stopped != "" && !stopMeasures(c) {
		problems = append(problems, stopped+"; declare stop.measurement: true if the stop is what the case measures (a capacity probe)")
	}
	if degraded := degradedRows(cr.Rows); degraded != "" {
		if !measuresSaturation(c) {
			problems = append(problems, degraded+"; the case does not measure its declared load ("+degradedHint(cr.Rows)+")")
		} else {
			r.saturated = append(r.saturated, fmt.Sprintf("case %s (repetition %d) measures saturation: %s", c.ID, rep, degraded))
		}
	}
	if contra := cacheContradictions(cr.Rows); contra != "" {
		problems = append(problems, contra)
	}
	if over := tokenLedgerExceeded(cr.Rows); over != "" {
		problems = append(problems, over)
	}
	if lagging := laggingRows(cr.Rows); lagging != "" && !measuresSaturation(c) {
		r.lagging = append(r.lagging, fmt.Sprintf("case %s (repetition %d): %s", c.ID, rep, lagging))
	}
	caseFigures(cr, c, res.Rows, capacity)
	if len(problems) > 0 {
		return finish(contract.StatusFailed, strings.Join(problems, "; "))
	}
	return finish(contract.StatusPassed, "")
}

// endChecks re-checks the source tree and every bound artifact; a change fails every required result.
func (r *run) endChecks(ctx context.Context) {
	p := r.p
	var problems []string
	if id, err := inspectAgain(ctx, p); err != nil {
		problems = append(problems, err.Error())
	} else if id != "" {
		problems = append(problems, id)
	}
	problems = append(problems, r.leakProblems()...)
	var changes []artifact.Change
	var err error
	if r.interruption == nil { // an interrupted run is not kept waiting for a re-hash of every input
		changes, err = artifact.Recheck(ctx, p.files, p.artifacts)
	}
	if err != nil {
		problems = append(problems, "artifact re-check: "+err.Error())
	}
	for _, ch := range changes {
		switch {
		case errors.Is(ch.Err, artifact.ErrChanged):
			problems = append(problems, fmt.Sprintf("artifact %s (%s) changed during the run: %s, now %s", ch.Artifact.Path, ch.Artifact.Kind, ch.Artifact.Digest, ch.Now))
		case errors.Is(ch.Err, artifact.ErrGone):
			problems = append(problems, fmt.Sprintf("artifact %s (%s) disappeared during the run", ch.Artifact.Path, ch.Artifact.Kind))
		default:
			problems = append(problems, fmt.Sprintf("artifact %s (%s) could not be re-read: %v", ch.Artifact.Path, ch.Artifact.Kind, ch.Err))
		}
	}
	if len(problems) == 0 {
		return
	}
	msg := "end check: " + strings.Join(problems, "; ")
	r.notes = append(r.notes, clipString(msg, 2048))
	for i := range r.results {
		if r.results[i].Required {
			r.results[i].Status = contract.StatusFailed
			d := msg
			if r.results[i].Details != nil {
				d = *r.results[i].Details + "; " + msg
			}
			r.results[i].Details = clip(d)
		}
	}
}

func clipString(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// inspectAgain compares the source identity now with the one bound at preflight. Files the run
// itself writes (under .qualification/ and the receipt) do not count.
func inspectAgain(ctx context.Context, p *Plan) (string, error) {
	id, err := sourceInspect(ctx, p.root)
	if err != nil {
		return "", fmt.Errorf("source re-check: %w", err)
	}
	if id.Commit != p.source.Commit || id.Tree != p.source.Tree {
		return fmt.Sprintf("source changed during the run: HEAD %s (tree %s), was %s (tree %s)", id.Commit, id.Tree, p.source.Commit, p.source.Tree), nil
	}
	var dirty []string
	for _, d := range id.Dirty {
		if strings.HasPrefix(d, ".qualification/") || d == p.outputRel {
			continue
		}
		dirty = append(dirty, d)
	}
	if len(dirty) > 0 {
		sort.Strings(dirty)
		return "the worktree changed during the run: " + summarize(dirty, 8), nil
	}
	return "", nil
}

// stopMeasures reports whether the case declares its stop rules as its measurement.
func stopMeasures(c contract.Case) bool {
	return c.Stop != nil && c.Stop.Measurement != nil && *c.Stop.Measurement
}

// countedFailures are the row's failed requests that fail its case: not those cut at a duration
// row's grace deadline (the row ended as declared), nor those of a row a stop rule ended when
// the case declares the stop as its measurement.
func countedFailures(c contract.Case, row contract.Row) int64 {
	return row.Failures - metric.ExcusedFailures(row, stopMeasures(c))
}

// stoppedRows names the rows a stop rule ended ("" when none).
func stoppedRows(rows []contract.Row) string {
	var out []string
	for _, r := range rows {
		if r.Ended != nil && metric.StopsRow(r.Ended.Reason) {
			out = append(out, fmt.Sprintf("row c%d-r%d stopped by its %s rule after %.3f s (%d of its %d requests failed)", r.Concurrency, r.Repetition, r.Ended.Reason, r.Ended.AfterSeconds, r.Failures, r.Requests))
		}
	}
	return strings.Join(out, "; ")
}

// cacheResetPath is the recipe's cache_reset path, "" when it declares none (docs/caching.md).
func cacheResetPath(r *contract.LaunchRecipeDoc) string {
	if r == nil || r.CacheReset == nil {
		return ""
	}
	return r.CacheReset.Path
}
