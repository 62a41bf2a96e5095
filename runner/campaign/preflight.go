package campaign

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/device"
	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

// Preflight errors. Each means nothing was launched and nothing was written.
var (
	// ErrWorkload: the workload file is unreadable, invalid, untracked or modified.
	ErrWorkload = errors.New("workload refused")
	// ErrSource: the source tree is not clean, or not at origin/main without the unsafe allowance.
	ErrSource = errors.New("source refused")
	// ErrArtifact: a bound artifact cannot be read or hashed.
	ErrArtifact = errors.New("artifact refused")
)

// Receipt roots: a receipt is written strictly below one of them, relative to the repository.
var ReceiptRoots = []string{"qualification/receipts/", ".qualification/receipts/"}

// RunsDir holds the raw evidence of each run, one directory per receipt id.
const RunsDir = ".qualification/runs"

// Config is everything qualrun run was asked to do.
type Config struct {
	// Workload is the workload file path (absolute, or relative to the working directory).
	Workload string
	Variant  string
	HostID   string
	// Output is the receipt path (relative to the working directory, or absolute), below a receipt root.
	Output string
	// Vars are NAME=VALUE assignments of typed variables.
	Vars []string
	// ModelDir, when set, binds every file of the model directory and gives ${model_path}.
	ModelDir string
	// ModelID overrides the launch recipe's model id (the id readiness and requests use).
	ModelID string
	// SourceDir is any directory inside the qualified repository (default: the workload's directory).
	SourceDir string
	// RuntimeManifest and ConfigFiles are extra files bound as artifacts.
	RuntimeManifest string
	ConfigFiles     []string
	// AllowUnpublishedUnsafe lets a run proceed when HEAD is not origin/main; the receipt is then
	// not publishable.
	AllowUnpublishedUnsafe bool
	// Command is qualrun's own argv, recorded in the receipt.
	Command []string
	// Version and BinaryDigest identify qualrun.
	Version, BinaryDigest string
	// DriverDeny lists containment mechanisms (driver.Mech*) the driver cases must treat as
	// unavailable: a test hook that can only take containment away (see driver.Options.Deny).
	DriverDeny []string
	// Keeper starts the owned server with a keeper that stops it if qualrun dies (see
	// lifecycle.Options.Keeper: the binary must dispatch lifecycle.KeeperArg to KeeperMain).
	Keeper bool
	// DeviceFixture, when set, is a fixture directory the device probes read instead of this host
	// (qualrun run's hidden --device-fixture, for tests): every device read from it is marked
	// fixture in the receipt and never becomes environment.device.
	DeviceFixture string
	// LoadTokenizer builds the token counter of a serving case's bound tokenizer file (an
	// absolute path, already hashed and matched to its declared digest) for the client-side
	// token ledger (docs/tokens.md); nil refuses a workload that binds one.
	LoadTokenizer func(path string) (load.TokenCounter, error)
	// Progress, when set, receives progress events (it must not block).
	Progress func(Event)
	Logger   *slog.Logger
	// Now is the clock (tests); defaults to time.Now.
	Now func() time.Time
}

// Event is one step of a campaign, for a progress display.
type Event struct {
	// Phase: preflight, launch, ready, case, row_start, requests, row_done, row, shutdown,
	// checks, receipt. row_start, requests and row_done are live (see servingProgress); row
	// follows once a row's records are written.
	Phase string
	// Message is a short human description.
	Message string
	// Done and Total count progress within the phase where that makes sense: rows (row_start,
	// row) or a row's measured requests (requests, row_done).
	Done, Total int
	// Failures counts the row's measured requests that failed so far (requests, row_done).
	Failures int
}

// Plan is a campaign that passed preflight.
type Plan struct {
	cfg         Config
	root        string // repository root
	workloadRel string
	workloadRaw []byte
	workload    *contract.WorkloadDoc
	variant     *contract.Variant
	vars        map[string]any
	placeholder map[string]string
	source      *source.Identity
	publishable bool
	reasons     []string
	recipe      *contract.LaunchRecipeDoc
	recipeRel   string
	recipeDir   string
	prompts     map[string][]load.Prompt   // by case id
	tools       map[string]*load.Tools     // by case id, for a case that declares tools
	traces      map[string]*load.TracePlan // by case id: a trace, planned lazily
	drivers     map[string]driver.Job      // by case id
	tokenizers  []tokenizerPin
	counters    map[string]load.TokenCounter // by case id
	driverPins  []driverPin
	files       []artifact.File
	artifacts   []contract.Artifact
	receiptID   string
	outputRel   string
	runRel      string
	started     time.Time // the wall clock (cfg.Now) at the start
	// startedMono is the monotonic start: the receipt's duration is measured from it, so a step
	// of the wall clock during the campaign does not change the duration (receipt.go).
	startedMono time.Time
	// redactor scrubs the values of the recipe's secrets from everything the run writes.
	redactor *redact.Redactor
	// secretFiles are the files the launch recipes name that are used but not bound by content
	// (launchFiles), recorded by path and reason in the effective run configuration.
	secretFiles []contract.EffectiveRunSecretFile
	// reservation holds the lock on the --output path (reserve.go) until Release.
	reservation    *os.File
	reservationRel string
	devices        device.Result
	// skip is why the variant is skipped before launch (device_requirement unmet, skip_policy
	// allow); "" when it runs.
	skip string
}

// ReceiptID is the receipt id the run will use.
func (p *Plan) ReceiptID() string { return p.receiptID }

// OutputPath is the receipt's path relative to the repository root.
func (p *Plan) OutputPath() string { return p.outputRel }

// RunDir is the raw evidence directory relative to the repository root.
func (p *Plan) RunDir() string { return p.runRel }

// Redactor scrubs the values of the campaign's secrets (the launch recipe's redacted variables
// and bearer token); what qualrun prints about the run goes through it too. Never nil.
func (p *Plan) Redactor() *redact.Redactor {
	if p.redactor == nil {
		return redact.New()
	}
	return p.redactor
}

// Root is the repository root.
func (p *Plan) Root() string { return p.root }

func (c *Config) progress(phase, msg string, done, total int) {
	if c.Progress != nil {
		c.Progress(Event{Phase: phase, Message: msg, Done: done, Total: total})
	}
}

// ReceiptIDFor names a receipt (schemas.ReceiptIDFor, which qualverify recomputes).
func ReceiptIDFor(start time.Time, backend, hostID, workloadID, variant string) string {
	return contract.ReceiptIDFor(start, backend, hostID, workloadID, variant)
}

// relTo returns path relative to root, refusing anything outside it.
func relTo(root, path string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s is outside the repository %s", path, root)
	}
	return filepath.ToSlash(rel), nil
}

var hostIDPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{1,63}$`)

// Preflight checks everything that can be checked before anything runs. It launches nothing and
// writes nothing; every error names what is wrong and how to fix it.
func Preflight(ctx context.Context, cfg Config) (plan *Plan, err error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p := &Plan{cfg: cfg, started: cfg.Now(), startedMono: time.Now(), prompts: map[string][]load.Prompt{}, tools: map[string]*load.Tools{}, traces: map[string]*load.TracePlan{}, drivers: map[string]driver.Job{}}
	if err := CheckHostID(cfg.HostID); err != nil {
		return nil, err
	}
	cfg.progress("preflight", "source identity", 0, 0)
	start := cfg.SourceDir
	if start == "" {
		start = filepath.Dir(cfg.Workload)
	}
	root, err := source.Root(start)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSource, err)
	}
	p.root = root

	// Workload: strict, valid, tracked and byte-identical to HEAD.
	if p.workloadRel, err = relTo(root, cfg.Workload); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkload, err)
	}
	if p.workloadRaw, err = readInput(filepath.Join(root, p.workloadRel), "workload", MaxWorkloadBytes); err != nil { // not a contract value: a word of the error message
		return nil, fmt.Errorf("%w: %w", ErrWorkload, err)
	}
	if err := schemas.CheckAs(p.workloadRaw, p.workloadRel, contract.Workload); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrWorkload, err)
	}
	var w contract.WorkloadDoc
	if err := jsonstrict.DecodeInto(p.workloadRaw, &w); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrWorkload, p.workloadRel, err)
	}
	p.workload = &w
	if err := source.CheckTracked(ctx, root, p.workloadRel); err != nil {
		return nil, fmt.Errorf("%w: %v; commit the workload before running it", ErrWorkload, err)
	}
	for i := range w.Variants {
		if w.Variants[i].ID == cfg.Variant {
			p.variant = &w.Variants[i]
		}
	}
	if p.variant == nil {
		var ids []string
		for _, v := range w.Variants {
			ids = append(ids, v.ID)
		}
		return nil, fmt.Errorf("%w: variant %q is not declared; this workload has: %s", ErrWorkload, cfg.Variant, strings.Join(ids, ", "))
	}
	if p.vars, err = ResolveVariables(w.Variables, cfg.Vars); err != nil {
		return nil, err
	}
	cfg.progress("preflight", "device probe", 0, 0)
	if err := p.probeDevices(); err != nil {
		return nil, err
	}
	p.placeholder = map[string]string{}
	for k, v := range p.vars {
		p.placeholder[k] = fmt.Sprint(v)
	}
	if w.Determinism.Seed != nil {
		p.placeholder["seed"] = strconv.FormatInt(*w.Determinism.Seed, 10)
	}
	if cfg.ModelDir != "" {
		abs, err := filepath.Abs(cfg.ModelDir)
		if err != nil {
			return nil, fmt.Errorf("%w: --model: %v", ErrArtifact, err)
		}
		p.placeholder["model_path"] = abs
	}

	// Output path rules and the run directory.
	p.receiptID = ReceiptIDFor(p.started, string(p.variant.Backend), cfg.HostID, w.ID, p.variant.ID)
	if err := p.checkOutput(); err != nil {
		return nil, err
	}

	// Every other input is a regular file within its limit, before anything reads or hashes it.
	if err := p.checkInputs(); err != nil {
		return nil, err
	}

	// Source identity.
	id, err := source.Inspect(ctx, root)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSource, err)
	}
	p.source = id
	if !id.Clean {
		return nil, fmt.Errorf("%w: the worktree is not clean (%s); commit or remove these and run again", ErrSource, summarize(id.Dirty, 8))
	}
	p.publishable = true
	if !id.AtOriginMain() {
		reason := "HEAD is not origin/main"
		if id.OriginMain == nil {
			reason = "there is no origin/main to compare HEAD with"
		}
		if !cfg.AllowUnpublishedUnsafe {
			return nil, fmt.Errorf("%w: %s: push HEAD to origin/main (performance publication requires it), or pass --allow-unpublished-unsafe to run anyway with publishable: false", ErrSource, reason)
		}
		p.publishable = false
		p.reasons = append(p.reasons, reason+" (--allow-unpublished-unsafe)")
	}

	// The output path is this run's from here on: a concurrent run with the same --output is
	// refused now, not at the end. Any later refusal gives it back.
	if err := p.reserve(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.Release()
		}
	}()

	// Cases: one launch recipe for every serving case, command placeholders resolvable, corpora.
	if err := p.resolveCases(ctx); err != nil {
		return nil, err
	}
	if err := p.checkServerAgreement(); err != nil {
		return nil, err
	}
	if err := p.checkRowRequests(); err != nil {
		return nil, err
	}

	// Artifacts.
	cfg.progress("preflight", "hashing artifacts", 0, len(p.files))
	if err := p.bindArtifacts(ctx); err != nil {
		return nil, err
	}
	if err := p.checkDriverPins(); err != nil {
		return nil, err
	}
	if err := p.loadTokenizers(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

func summarize(list []string, n int) string {
	if len(list) <= n {
		return strings.Join(list, ", ")
	}
	return strings.Join(list[:n], ", ") + fmt.Sprintf(" and %d more", len(list)-n)
}

func (p *Plan) checkOutput() error {
	out := p.cfg.Output
	if strings.Contains(filepath.ToSlash(out), "../") || strings.HasSuffix(out, "..") || out == ".." {
		return fmt.Errorf("%w: --output %q contains a .. element", ErrPath, out)
	}
	rel, err := relTo(p.root, out)
	if err != nil {
		return fmt.Errorf("%w: --output: %v", ErrPath, err)
	}
	under := false
	for _, r := range ReceiptRoots {
		if strings.HasPrefix(rel, r) && len(rel) > len(r) {
			under = true
		}
	}
	if !under {
		return fmt.Errorf("%w: --output %s must be below %s of the repository", ErrPath, rel, strings.Join(ReceiptRoots, " or "))
	}
	if !strings.HasSuffix(rel, ".json") {
		return fmt.Errorf("%w: --output %s must end in .json", ErrPath, rel)
	}
	if err := checkUnder(p.root, rel); err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(p.root, rel)); err == nil {
		return fmt.Errorf("%w: %s already exists; receipts are never replaced", ErrPath, rel)
	}
	p.outputRel = rel
	p.runRel = RunsDir + "/" + p.receiptID
	if err := checkUnder(p.root, p.runRel); err != nil {
		return err
	}
	if _, err := os.Lstat(filepath.Join(p.root, p.runRel)); err == nil {
		return fmt.Errorf("%w: run directory %s already exists", ErrPath, p.runRel)
	}
	return nil
}

func (p *Plan) resolveCases(ctx context.Context) error {
	for i, c := range p.variant.Cases {
		switch c.Kind {
		case contract.CaseKindServing:
			if p.recipe == nil {
				if err := p.loadRecipe(ctx, c.Launch); err != nil {
					return err
				}
			} else if c.Launch != p.recipeRel {
				return fmt.Errorf("%w: case %s launches %s but an earlier case launches %s: one owned server per campaign", ErrWorkload, c.ID, c.Launch, p.recipeRel)
			}
			if err := p.checkTraceSchedule(i, c); err != nil {
				return err
			}
			switch {
			case load.LazyTrace(*c.Corpus) && c.Corpus.LengthUnit == contract.TraceCorpusLengthUnitTokens:
				// Checked now, planned once its tokenizer is loaded (loadTokenizers).
				if err := load.CheckTrace(*c.Corpus, p.root); err != nil {
					return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, c.ID, err)
				}
			case load.LazyTrace(*c.Corpus): // its prompts are built when their request is sent
				tp, err := load.ResolveTrace(ctx, *c.Corpus, p.root)
				if err != nil {
					return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, c.ID, err)
				}
				p.traces[c.ID] = tp
			default:
				prompts, err := load.Resolve(*c.Corpus, p.root)
				if err != nil {
					return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, c.ID, err)
				}
				p.prompts[c.ID] = prompts
			}
			// A trace and a conversation corpus are bound like a corpus file: the requests are
			// built from them (cases may share one file).
			if s := c.Corpus.Source; (s == contract.CorpusSourceFile || s == contract.CorpusSourceTrace || s == contract.CorpusSourceConversations) &&
				!slices.ContainsFunc(p.files, func(f artifact.File) bool { return f.Path == c.Corpus.Path }) {
				p.files = append(p.files, artifact.File{Kind: contract.ArtifactKindCorpus, Path: c.Corpus.Path, Abs: filepath.Join(p.root, c.Corpus.Path)})
			}
			if err := p.resolveTokenizer(c); err != nil {
				return err
			}
			var tools *load.Tools
			if t := c.Tools; t != nil { // bound like a corpus file: the requests are built from it
				var err error
				if tools, err = load.ResolveTools(*t, p.root); err != nil {
					return fmt.Errorf("%w: case %s tools: %v", ErrWorkload, c.ID, err)
				}
				p.tools[c.ID] = tools
				if !slices.ContainsFunc(p.files, func(f artifact.File) bool { return f.Path == t.Path }) { // cases may share one file
					p.files = append(p.files, artifact.File{Kind: contract.ArtifactKindCorpus, Path: t.Path, Abs: filepath.Join(p.root, t.Path)})
				}
			}
			if err := load.CheckCaseTools(c, tools); err != nil {
				return fmt.Errorf("%w: %v", ErrWorkload, err)
			}
		case contract.CaseKindDriver:
			if err := p.resolveDriver(ctx, i, c); err != nil {
				return err
			}
		case contract.CaseKindCommand:
			for _, a := range c.Command {
				if _, err := substitute(a, p.placeholder); err != nil {
					return fmt.Errorf("case %s (variants/%s/cases/%d): %w", c.ID, p.variant.ID, i, err)
				}
			}
			for _, v := range c.Environment {
				if _, err := substitute(v, p.placeholder); err != nil {
					return fmt.Errorf("case %s: %w", c.ID, err)
				}
			}
		}
	}
	return nil
}

func (p *Plan) loadRecipe(ctx context.Context, rel string) error {
	raw, err := readInput(filepath.Join(p.root, rel), "launch recipe", MaxRecipeBytes)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrWorkload, err)
	}
	if err := schemas.CheckAs(raw, rel, contract.LaunchRecipe); err != nil {
		return fmt.Errorf("%w: %v", ErrWorkload, err)
	}
	if err := source.CheckTracked(ctx, p.root, rel); err != nil {
		return fmt.Errorf("%w: %v; commit the launch recipe", ErrWorkload, err)
	}
	var r contract.LaunchRecipeDoc
	if err := jsonstrict.DecodeInto(raw, &r); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrWorkload, rel, err)
	}
	if p.cfg.ModelID != "" {
		r.ModelID = p.cfg.ModelID
	}
	// A server with auth: its token must be in qualrun's environment before anything starts.
	if _, err := lifecycle.BearerToken(&r, nil); err != nil {
		return fmt.Errorf("launch recipe %s: %w", rel, err)
	}
	// Its secrets are scrubbed from every file the run writes: each must be long enough for that.
	secrets := lifecycle.Secrets(&r, nil)
	if err := lifecycle.CheckSecrets(secrets); err != nil {
		return fmt.Errorf("%w: launch recipe %s: %v", ErrWorkload, rel, err)
	}
	p.redactor = redact.New(secrets...)
	p.recipe, p.recipeRel = &r, rel
	p.recipeDir = filepath.Dir(filepath.Join(p.root, rel))
	p.files = append(p.files, artifact.File{Kind: contract.ArtifactKindLaunchRecipe, Path: rel, Abs: filepath.Join(p.root, rel)})
	prog, workDir, err := lifecycle.Program(&r, p.recipeDir, nil)
	if errors.Is(err, lifecycle.ErrShellEval) {
		return fmt.Errorf("%w: launch recipe %s: %v", ErrWorkload, rel, err)
	}
	if err != nil {
		return fmt.Errorf("%w: %v", ErrArtifact, err)
	}
	// Bind the file the program resolves to (a PATH entry is often a symlink).
	if real, err := filepath.EvalSymlinks(prog); err == nil {
		prog = real
	}

	p.files = append(p.files, artifact.File{Kind: contract.ArtifactKindServerBinary, Path: p.displayPath(prog), Abs: prog})
	bound, secret := p.launchFiles(ctx, &r, workDir)
	p.files = append(p.files, bound...)
	p.secretFiles = append(p.secretFiles, secret...)
	return nil
}

// displayPath names a file repository-relative when it is inside the repository, else absolute.
func (p *Plan) displayPath(path string) string {
	if rel, err := relTo(p.root, path); err == nil {
		return rel
	}
	abs, _ := filepath.Abs(path)
	return filepath.Clean(abs)
}

func (p *Plan) bindArtifacts(ctx context.Context) error {
	files := append([]artifact.File{{Kind: contract.ArtifactKindWorkload, Path: p.workloadRel, Abs: filepath.Join(p.root, p.workloadRel)}}, p.files...)
	if p.cfg.ModelDir != "" {
		model, err := artifact.ModelFiles(p.cfg.ModelDir)
		if err != nil {
			return fmt.Errorf("%w: --model: %v", ErrArtifact, err)
		}
		// A model directory inside the repository is bound by repository-relative paths, so that
		// qualverify re-hashes it from the evidence root; one outside keeps paths relative to
		// itself, the same on every host (qualverify --model-store DIR re-hashes those).
		for i := range model {
			if rel, err := relTo(p.root, model[i].Abs); err == nil {
				model[i].Path = rel
			}
		}
		files = append(files, model...)
	}
	if p.cfg.RuntimeManifest != "" {
		raw, err := readInput(p.cfg.RuntimeManifest, "--runtime-manifest", MaxRuntimeManifestBytes)
		if err != nil {
			return fmt.Errorf("%w: %w", ErrArtifact, err)
		}
		if err := schemas.CheckAs(raw, p.cfg.RuntimeManifest, contract.RuntimeManifest); err != nil {
			return fmt.Errorf("%w: %v", ErrArtifact, err)
		}
		files = append(files, artifact.File{Kind: contract.ArtifactKindRuntimeManifest, Path: p.displayPath(p.cfg.RuntimeManifest), Abs: p.cfg.RuntimeManifest})
	}
	for _, f := range p.cfg.ConfigFiles {
		files = append(files, artifact.File{Kind: contract.ArtifactKindConfigFile, Path: p.displayPath(f), Abs: f})
	}
	arts, err := artifact.Hash(ctx, files)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrArtifact, err)
	}
	p.files, p.artifacts = files, arts
	return nil
}

// checkTraceSchedule applies the bound trace's semantic rule (rules.CheckTraceSchedule): a
// replay scheduled past the case's timeout or int64 nanoseconds is refused, naming the entry,
// before any prompt is synthesised.
func (p *Plan) checkTraceSchedule(i int, c contract.Case) error {
	if c.Corpus == nil || c.Corpus.Source != contract.CorpusSourceTrace {
		return nil
	}
	entries, err := load.TraceEntries(*c.Corpus, p.root)
	if err != nil {
		return fmt.Errorf("%w: case %s corpus: %v", ErrWorkload, c.ID, err)
	}
	base := fmt.Sprintf("/variants/%d/cases/%d", slices.IndexFunc(p.workload.Variants, func(v contract.Variant) bool { return v.ID == p.variant.ID }), i)
	if ps := rules.CheckTraceSchedule(base, c, entries); len(ps) > 0 {
		return fmt.Errorf("%w: %s%s: case %s: %v", ErrWorkload, p.workloadRel, ps[0].Pointer, c.ID, ps[0].Err)
	}
	return nil
}
