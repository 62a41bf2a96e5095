package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/opencontainers/go-digest"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// File is what reading one file learned. Checks are pure functions of these facts.
type File struct {
	Path  string
	Kind  contract.ArtifactKind // artifact kind (or the role a reference gives it); "" for the receipt and its attestations
	Local bool                  // a repository-relative path (absolute paths are outside the evidence)
	// present: the file exists and was read; readErr: it exists (or its path is unsafe) and could
	// not be read. Neither: it does not exist.
	Present bool
	ReadErr error
	// wantBytes is the size the receipt records for the file (-1: none): a streamed file (request
	// records, logs) of another size is refused by fstat before a byte is read (ErrSizeMismatch),
	// so a sparse 8 GiB file in a 3 KiB binding costs nothing. JSON documents are read whole within
	// MaxDocumentBytes anyway, and then reported by digest.
	wantBytes int64
	Digest    string
	Size      int64
	// contract is the schema id found in a JSON contract file; violations its problems.
	Contract   string
	Violations []schemas.Violation
	checked    schemas.Outcome // the check's outcome (its parsed tree), for decoding once
	Raw        []byte          // kept for JSON contract files and corpora
	Records    *record.Set     // request records
}

// contractOfKind is the contract the files of an artifact kind carry (contract.Kinds):
// anyDriverResult for a driver result, "" for none.
func contractOfKind(kind contract.ArtifactKind) string {
	info := contract.Kinds[kind]
	if info.AnyDriverResult {
		return anyDriverResult
	}
	return info.Contract
}

// anyDriverResult is the role of a driver result file: any version-2 evidence result.
const anyDriverResult = "driver-result"

// acceptsContract reports whether a file bound in the role want (a contract name, or
// anyDriverResult) may carry contract got. A receipt result's case_result binds a case result or,
// for a driver case, a driver result.
func acceptsContract(want, got string) bool {
	switch want {
	case "", got:
		return true
	case anyDriverResult:
		return contract.IsDriverResult(got)
	case contract.CaseResult:
		return contract.IsDriverResult(got)
	}
	return false
}

// Snapshot is everything Verify read, for the checks.
type Snapshot struct {
	Evidence Evidence
	Policy   policy.Policy
	Relax    map[policy.Relaxation]bool
	// skipSign: Compare without pinned keys (a comparison does not need a signer).
	SkipSign bool

	Receipt *File
	RC      *contract.ReceiptDoc
	RCTree  map[string]any

	Files       map[string]*File
	CaseResults map[string]*contract.CaseResultDoc
	// driverResults are the version-2 evidence results bound as case results, by path.
	DriverResults map[string]*DriverResult
	Lifecycle     *contract.LifecycleRecordDoc
	Workload      *contract.WorkloadDoc
	Recipes       map[string]*contract.LaunchRecipeDoc // by path

	// runEntries are the files below the run directory, every one of which the receipt must bind.
	RunEntries []runEntry
	RunWalkErr error

	Attestations []*Attestation
	Links        []*InTotoLink // the campaign's in-toto links (intoto.go; checked by check/intoto.go)
	Checkout     *gitobj.Checkout
	CheckoutErr  error
	Tree         treeFacts
	Signer       string
	// Identity is the keyless signer when Policy.Keyless verified the bundle (keyless.go).
	Identity *policy.SignerIdentity
	keylessState

	Warnings     []string
	LateWarnings []string
}

func (s *Snapshot) ReceiptID() string {
	if s.RC != nil {
		return s.RC.ReceiptID
	}
	return ""
}

// runDir is the receipt's raw evidence directory.
func (s *Snapshot) RunDir() string { return ".qualification/runs/" + s.ReceiptID() + "/" }

// mustExist reports whether an artifact is evidence that has to be present.
func (s *Snapshot) MustExist(a contract.Artifact) bool {
	return contract.Kinds[a.Kind].Evidence || (s.RC != nil && strings.HasPrefix(a.Path, s.RunDir()))
}

func (s *Snapshot) Subjects() []Subject {
	out := []Subject{}
	switch {
	case s.Receipt != nil && s.Receipt.Present:
		out = append(out, Subject{Path: s.Receipt.Path, Digest: s.Receipt.Digest, Contract: s.Receipt.Contract})
	case s.Receipt != nil:
		out = append(out, Subject{Path: s.Receipt.Path}) // refused before it was read: no digest
	}
	for _, a := range s.Attestations {
		if a.digest != "" {
			out = append(out, Subject{Path: a.Path, Digest: a.digest})
		}
	}
	seen := map[string]bool{}
	add := func(p string) {
		if f := s.Files[p]; f != nil && f.Present && !seen[p] {
			seen[p] = true
			out = append(out, Subject{Path: p, Digest: f.Digest, Contract: f.Contract})
		}
	}
	if s.RC != nil {
		for _, a := range s.RC.Artifacts {
			add(a.Path)
		}
	}
	paths := make([]string, 0, len(s.Files))
	for p := range s.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		add(p)
	}
	return out
}

// Load reads the receipt, its attestations and every file it references, hashing and validating
// each. It returns an error only when the receipt itself cannot be read.
// Options are what loading needs of the options: the relaxations on, the files read in
// parallel, the model store, and whether signatures are skipped (Compare without keys).
type Options struct {
	Relax      map[policy.Relaxation]bool
	Workers    int
	SkipSign   bool
	ModelStore string
}

func Load(ctx context.Context, ev Evidence, pol policy.Policy, cfg Options) (*Snapshot, error) {
	s := &Snapshot{Evidence: ev, Policy: pol, Relax: cfg.Relax, SkipSign: cfg.SkipSign,
		Files: map[string]*File{}, CaseResults: map[string]*contract.CaseResultDoc{}, Recipes: map[string]*contract.LaunchRecipeDoc{},
		DriverResults: map[string]*DriverResult{}}
	root, err := openRoot(ev.Root)
	if err != nil {
		return nil, err
	}
	defer root.Close()

	// The receipt. One that exists but cannot be read safely (a FIFO, a symlink, larger than
	// MaxDocumentBytes) is a finding of the schemas check, and every other check is skipped.
	rf := &File{Path: ev.Receipt, Local: true, wantBytes: -1}
	if err := readWhole(root, rf, limits.MaxDocumentBytes); err != nil {
		return nil, fmt.Errorf("%w: receipt %s: %v", ErrEvidence, ev.Receipt, err)
	}
	if !rf.Present && rf.ReadErr == nil {
		return nil, fmt.Errorf("%w: receipt %s does not exist", ErrEvidence, ev.Receipt)
	}
	s.Receipt = rf
	if rf.ReadErr != nil {
		return s, nil
	}
	if err := validate(rf, contract.Receipt); err != nil {
		return nil, err
	}
	if len(rf.Violations) == 0 {
		rc, err := schemas.DecodeChecked[contract.ReceiptDoc](rf.Raw, rf.checked)
		if err != nil {
			return nil, fmt.Errorf("decode receipt %s: %w", ev.Receipt, err)
		}
		s.RC = rc
		s.RCTree = rf.checked.Tree
	}

	// The attestations.
	for _, a := range []struct{ kind, path string }{{"envelope", ev.Envelope}, {"bundle", ev.Bundle}} {
		if a.path == "" {
			continue
		}
		f := &File{Path: a.path, Local: true, wantBytes: -1}
		if err := readWhole(root, f, limits.MaxAttestationBytes); err != nil {
			return nil, err
		}
		if !f.Present {
			at := &Attestation{Kind: a.kind, Path: a.path, ReadErr: f.ReadErr}
			if f.ReadErr == nil {
				at.ReadErr = fmt.Errorf("%w: %s", reason.ErrMissingFile, a.path)
			}
			s.Attestations = append(s.Attestations, at)
			continue
		}
		at := s.readKeyless(a.kind, a.path, f.Raw, pol) // keyless.go: ReadAttestation with the pinned keys unless pol.Keyless
		s.Warnings = append(s.Warnings, at.warnings...)
		s.Attestations = append(s.Attestations, at)
		if at.Signer != "" && s.Signer == "" {
			s.Signer = at.Signer
		}
	}

	s.finishKeyless()                                    // keyless.go
	s.Links = loadInTotoLinks(ev.Root, root, ev.Receipt) // intoto.go
	if s.RC == nil {
		return s, nil
	}
	rc := s.RC

	// Every artifact, reference and subject, in parallel.
	want := map[string]contract.ArtifactKind{} // path -> kind
	sizes := map[string]int64{}                // path -> the bytes its first artifact listing records
	for _, a := range rc.Artifacts {
		if _, ok := sizes[a.Path]; !ok {
			sizes[a.Path] = a.Bytes
		}
	}
	var order []string
	need := func(p string, kind contract.ArtifactKind) {
		if p == "" {
			return
		}
		if _, ok := want[p]; !ok {
			order = append(order, p)
			want[p] = kind
		} else if contractOfKind(want[p]) == "" && contractOfKind(kind) != "" {
			want[p] = kind
		}
	}
	for _, a := range rc.Artifacts {
		need(a.Path, a.Kind)
	}
	for _, r := range rc.Results {
		if r.CaseResult != nil {
			need(r.CaseResult.Path, contract.ArtifactKindCaseResult)
		}
	}
	if rc.Lifecycle != nil {
		need(rc.Lifecycle.Path, contract.ArtifactKindLifecycleRecord)
	}
	for _, a := range s.Attestations {
		if a.Stmt != nil {
			for _, sub := range a.Stmt.Subjects {
				if sub.Name != ev.Receipt {
					need(sub.Name, "")
				}
			}
		}
	}
	if err := s.readAll(ctx, root, order, want, sizes, cfg); err != nil {
		return nil, err
	}
	if cfg.ModelStore != "" {
		if err := s.readModelStore(ctx, cfg.ModelStore, rc.Artifacts); err != nil {
			return nil, err
		}
	}
	// Rows may reference record files the artifact list forgot.
	order = order[:0]
	for _, p := range slices.Sorted(MapKeys(s.CaseResults)) {
		for _, row := range s.CaseResults[p].Rows {
			if _, ok := s.Files[row.Records.Path]; !ok {
				need(row.Records.Path, contract.ArtifactKindRequestRecords)
			}
		}
	}
	if err := s.readAll(ctx, root, order, want, sizes, cfg); err != nil {
		return nil, err
	}
	for _, a := range rc.Artifacts {
		f := s.Files[a.Path]
		switch {
		case ReadInput(a.Kind) && (!f.Local || (!f.Present && f.ReadErr == nil)):
			// An input the checks read: a finding of the hashes check (missing_input) unless
			// allow-missing-inputs-unsafe is on; then what was not checked is said.
			if s.Relax[policy.RelaxMissingInputs] {
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s is not present locally (%s): %s", a.Kind, a.Path, policy.RelaxMissingInputs, NotCheckedWithout(a.Kind)))
			}
		case !f.Local:
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s is outside the repository: not re-hashed", a.Kind, a.Path))
		case !f.Present && f.ReadErr == nil && !s.MustExist(a) && isModelKind(a.Kind) && cfg.ModelStore != "":
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s is in neither the repository nor the model store %s: not re-hashed", a.Kind, a.Path, cfg.ModelStore))
		case !f.Present && f.ReadErr == nil && !s.MustExist(a) && isModelKind(a.Kind):
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s is not present locally: not re-hashed (a model directory outside the repository is recorded relative to itself: --model-store DIR re-hashes it from your copy)", a.Kind, a.Path))
		case !f.Present && f.ReadErr == nil && !s.MustExist(a):
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s %s is not present locally: not re-hashed", a.Kind, a.Path))
		}
	}
	if p := rc.Workload.Path; p != "" {
		// The workload decides SLOs, declared metrics and the comparison policy: only the bytes the
		// receipt binds are used.
		switch f := s.Files[p]; {
		case f == nil || !f.Present || len(f.Violations) > 0 || f.Contract != contract.WorkloadSchema:
		case f.Digest != rc.Workload.Digest:
			s.Warnings = append(s.Warnings, fmt.Sprintf("workload %s is not the file the receipt binds: not used", p))
		default:
			var w contract.WorkloadDoc
			if err := jsonstrict.DecodeInto(f.Raw, &w); err == nil {
				s.Workload = &w
			}
		}
	}
	if s.Workload == nil {
		s.Warnings = append(s.Warnings, fmt.Sprintf("workload %s is not available: %s", rc.Workload.Path, NotCheckedWithout(contract.ArtifactKindWorkload)))
	}
	s.RunEntries, s.RunWalkErr = listRunDir(ev.Root, s.RunDir())
	s.Checkout, s.CheckoutErr = gitobj.ReadCheckout(ev.Root)
	s.recomputeTree(ctx)
	return s, nil
}

// treeFacts is the receipt's source tree recomputed from the checkout's git objects.
type treeFacts struct {
	Tree, Hash string
	// unavailable says why the tree hash was not recomputed ("" when it was).
	Unavailable string
	// inputs are the blobs the commit holds at the paths of the bound inputs (inputs.go; checked by check/inputs.go).
	Inputs map[string]InputBlob
}

// recomputeTree reads the receipt's commit from the evidence root's git objects and computes its
// tree's qualkit-source-tree-v1 hash. When the root is no checkout, or the commit is not in its
// objects, it says so (a warning); a corrupt object is a failure to recompute, said the same way.
func (s *Snapshot) recomputeTree(ctx context.Context) {
	src := s.RC.Source
	switch {
	case s.Checkout == nil || s.CheckoutErr != nil:
		s.Tree.Unavailable = "the evidence root is not a git checkout"
	case !gitobj.ObjectName.MatchString(src.Commit):
		s.Tree.Unavailable = "the commit is malformed"
	}
	if s.Tree.Unavailable == "" {
		g, err := gitobj.Open(s.Checkout.CommonDir)
		if err != nil {
			s.Tree.Unavailable = fmt.Sprintf("the checkout's objects cannot be read: %v", err)
		} else {
			defer g.Close()
			if s.Tree.Tree, err = g.CommitTree(src.Commit); err == nil {
				s.Tree.Hash, err = g.SourceTreeHash(ctx, s.Tree.Tree)
			}
			if err == nil {
				s.lookupInputs(g)
			}
			switch {
			case errors.Is(err, gitobj.ErrObjectMissing):
				s.Tree.Unavailable = fmt.Sprintf("commit %s (or an object of its tree) is not in the checkout's objects (%v)", src.Commit, err)
			case err != nil:
				s.Tree.Unavailable = fmt.Sprintf("the tree of commit %s cannot be read: %v", src.Commit, err)
			}
		}
	}
	if s.Tree.Unavailable != "" {
		s.Tree.Tree, s.Tree.Hash, s.Tree.Inputs = "", "", nil
		s.Warnings = append(s.Warnings, fmt.Sprintf("source tree hash not recomputed: %s", s.Tree.Unavailable))
	}
}

// ReadInput reports whether an artifact kind is a bound input whose content the checks read (not
// only re-hash): without it they cannot be carried out, so its absence is a finding
// (ErrMissingInput), not a warning, unless policy.RelaxMissingInputs is on.
func ReadInput(kind contract.ArtifactKind) bool {
	switch kind {
	case contract.ArtifactKindWorkload, contract.ArtifactKindLaunchRecipe, contract.ArtifactKindCorpus:
		return true
	}
	return false
}

// CommitInput reports whether a bound input of kind at a repository path is compared with the
// blob the receipt's commit holds there: every ReadInput kind (which must be the commit's), and a
// config file (a file a recipe's command reads, e.g. a server's --config), which must be the
// commit's where the commit holds a file at its path (an untracked or ignored one is not).
func CommitInput(kind contract.ArtifactKind) bool {
	return ReadInput(kind) || kind == contract.ArtifactKindConfigFile
}

// NotCheckedWithout says what is not checked without a bound input of kind.
func NotCheckedWithout(kind contract.ArtifactKind) string {
	switch kind {
	case contract.ArtifactKindWorkload:
		return "the required cases, the campaign verdict, SLO metrics, declared metrics, the corpus, the row grid, the comparison policy and its metric rules were not checked"
	case contract.ArtifactKindLaunchRecipe:
		return "the lifecycle record was not compared with the recipe's readiness, deadlines and acceptable exit codes"
	case contract.ArtifactKindCorpus:
		return "the rows' prompt sets were not recomputed from the corpus"
	}
	return "not re-hashed"
}

// runEntry is one non-directory entry below the run directory.
type runEntry struct {
	Path string // relative to the evidence root
	Mode fs.FileMode
}

// listRunDir lists every non-directory entry below the run directory (symlinks are listed, not
// followed), at most MaxRunDirEntries; nil when the directory does not exist.
func listRunDir(root, runDir string) ([]runEntry, error) {
	var out []runEntry
	if !fs.ValidPath(strings.TrimSuffix(runDir, "/")) {
		return nil, fmt.Errorf("%q is not a clean repository-relative directory", runDir)
	}
	base := filepath.Join(root, filepath.FromSlash(runDir))
	if st, err := os.Lstat(base); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	} else if !st.IsDir() {
		return []runEntry{{Path: strings.TrimSuffix(runDir, "/"), Mode: st.Mode()}}, nil
	}
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if len(out) >= limits.MaxRunDirEntries {
			return fmt.Errorf("more than %d files below %s", limits.MaxRunDirEntries, runDir)
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		out = append(out, runEntry{Path: filepath.ToSlash(rel), Mode: d.Type()})
		return nil
	})
	return out, err
}

func MapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// readAll reads paths with at most cfg.workers in parallel.
func (s *Snapshot) readAll(ctx context.Context, root *os.File, paths []string, kinds map[string]contract.ArtifactKind, sizes map[string]int64, cfg Options) error {
	var mu sync.Mutex
	var firstErr error
	sem := make(chan struct{}, max(1, cfg.Workers))
	var wg sync.WaitGroup
	for _, p := range paths {
		if _, done := s.Files[p]; done {
			continue
		}
		f := &File{Path: p, Kind: kinds[p], Local: !strings.HasPrefix(p, "/"), wantBytes: -1}
		if n, ok := sizes[p]; ok {
			f.wantBytes = n
		}
		s.Files[p] = f
		if !f.Local {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := readFile(ctx, root, f); err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return firstErr
	}
	for _, p := range paths {
		f := s.Files[p]
		if f.Present && contract.IsDriverResult(f.Contract) && acceptsContract(contractOfKind(f.Kind), strings.TrimPrefix(f.Contract, "qualkit.")) && onlySemantic(f.Violations) {
			// Decoded even when a semantic rule fails (a self-hash, an outcome): the tolerances
			// check recomputes every number against the workload and says what differs.
			if dr, err := DecodeDriverResult(f.Contract, f.Raw); err == nil {
				s.DriverResults[p] = dr
			}
			continue
		}
		if !f.Present || len(f.Violations) > 0 {
			continue
		}
		switch f.Kind {
		case contract.ArtifactKindCaseResult:
			var cr contract.CaseResultDoc
			if err := jsonstrict.DecodeInto(f.Raw, &cr); err == nil {
				s.CaseResults[p] = &cr
			}
		case contract.ArtifactKindLifecycleRecord:
			var lr contract.LifecycleRecordDoc
			if err := jsonstrict.DecodeInto(f.Raw, &lr); err == nil && s.Lifecycle == nil {
				s.Lifecycle = &lr
			}
		case contract.ArtifactKindLaunchRecipe:
			var lr contract.LaunchRecipeDoc
			if err := jsonstrict.DecodeInto(f.Raw, &lr); err == nil {
				s.Recipes[p] = &lr
			}
		}
	}
	return nil
}

// readFile reads one file by its kind: JSON contracts whole and validated, request records
// streamed line by line, everything else streamed through sha256. The error is non-nil only when
// the read could not be carried out (a cancelled context, an internal validation error).
// isModelKind reports whether kind is a file of a model directory (artifact.ModelKind's kinds).
func isModelKind(kind contract.ArtifactKind) bool {
	switch kind {
	case contract.ArtifactKindModelWeight, contract.ArtifactKindModelConfig, contract.ArtifactKindTokenizer,
		contract.ArtifactKindChatTemplate, contract.ArtifactKindModelFile:
		return true
	}
	return false
}

// readModelStore reads, beneath the model store dir, every model file the receipt binds that the
// evidence root does not have (WithModelStore). What it finds is hashed and checked like any
// bound file; what it does not find stays absent (a warning says so).
func (s *Snapshot) readModelStore(ctx context.Context, dir string, arts []contract.Artifact) error {
	store, err := openRoot(dir)
	if err != nil {
		return fmt.Errorf("model store %s: %w", dir, err)
	}
	defer store.Close()
	for _, a := range arts {
		f := s.Files[a.Path]
		if f == nil || !f.Local || f.Present || f.ReadErr != nil || !isModelKind(a.Kind) {
			continue
		}
		if err := readFile(ctx, store, f); err != nil {
			return err
		}
	}
	return nil
}

func readFile(ctx context.Context, root *os.File, f *File) error {
	switch {
	case f.Kind == contract.ArtifactKindRequestRecords:
		fh, ok := openEvidence(root, f, limits.MaxRecordsFileBytes, true)
		if !ok {
			return nil
		}
		defer fh.Close()
		d, n, set, err := record.Read(ctx, fh)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f.ReadErr = fmt.Errorf("%w: %v", reason.ErrUnreadableFile, err)
			return nil
		}
		f.Present, f.Digest, f.Size, f.Records, f.Contract = true, d, n, set, contract.RequestRecordSchema
		return nil
	case IsRunConfig(f):
		// A campaign's effective-run-config.json: checked against its contract when it names one
		// (qualkit.effective-run-config.v1); files written before that contract existed carry no
		// schema member and are bound by digest and size only.
		if err := readWhole(root, f, limits.MaxDocumentBytes); err != nil {
			return err
		}
		if f.Present && !unversionedObject(f.Raw) {
			return validate(f, contract.EffectiveRunConfig)
		}
		return nil
	case f.Kind == contract.ArtifactKindDeviceTelemetry:
		return readWhole(root, f, limits.MaxTelemetryBytes)
	case f.Kind == contract.ArtifactKindServerMetrics:
		return readWhole(root, f, limits.MaxScrapeBytes)
	case f.Kind == contract.ArtifactKindCorpus:
		// A corpus, trace or tools file: bound by digest, read whole for the checks that regenerate
		// prompts and bodies, up to what the runner accepts.
		return readWhole(root, f, limits.MaxCorpusFileBytes)
	case contractOfKind(f.Kind) != "":
		if err := readWhole(root, f, limits.MaxDocumentBytes); err != nil {
			return err
		}
		if f.Present {
			return validate(f, contractOfKind(f.Kind))
		}
		return nil
	default:
		fh, ok := openEvidence(root, f, -1, true)
		if !ok {
			return nil
		}
		defer fh.Close()
		d, err := digest.SHA256.FromReader(&ctxReader{ctx: ctx, r: fh})
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			f.ReadErr = fmt.Errorf("%w: %v", reason.ErrUnreadableFile, err)
			return nil
		}
		st, err := fh.Stat()
		if err != nil {
			f.ReadErr = fmt.Errorf("%w: %v", reason.ErrUnreadableFile, err)
			return nil
		}
		f.Present, f.Digest, f.Size = true, d.String(), st.Size()
		return nil
	}
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// openRoot opens the evidence root directory without blocking (a FIFO in its place cannot hang
// the verifier).
func openRoot(dir string) (*os.File, error) {
	root, err := os.OpenFile(dir, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: open root %s: %v", ErrEvidence, dir, err)
	}
	return root, nil
}

// openEvidence opens a repository-relative regular file below root: without blocking, following
// no symlink in any component, within limit bytes (limit < 0: none) and, when exactSize, of the
// size the receipt records (f.wantBytes), each checked with fstat before a byte is read (schemas.OpenBeneath). On
// failure it records why in f (nothing when the file does not exist) and returns false.
func openEvidence(root *os.File, f *File, limit int64, exactSize bool) (*os.File, bool) {
	fh, size, err := evidence.OpenBeneath(root, f.Path, limit)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, false
	case errors.Is(err, evidence.ErrSymlink):
		f.ReadErr = fmt.Errorf("%w: %s: a symbolic link in the path (evidence is read through real directories and regular files only)", reason.ErrUnreadableFile, f.Path)
		return nil, false
	case errors.Is(err, evidence.ErrOutside):
		f.ReadErr = fmt.Errorf("%w: %q is not a clean repository-relative path", reason.ErrUnreadableFile, f.Path)
		return nil, false
	case err != nil:
		f.ReadErr = fmt.Errorf("%w: %v", reason.ErrUnreadableFile, err)
		return nil, false
	}
	if exactSize && f.wantBytes >= 0 && size != f.wantBytes {
		fh.Close()
		f.Size = size
		f.ReadErr = fmt.Errorf("%w: %s is %d bytes, the receipt records %d: not read", reason.ErrSizeMismatch, f.Path, size, f.wantBytes)
		return nil, false
	}
	return fh, true
}

// readWhole reads a bounded file into f.raw and hashes it.
func readWhole(root *os.File, f *File, limit int64) error {
	fh, ok := openEvidence(root, f, limit, false)
	if !ok {
		return nil
	}
	defer fh.Close()
	raw, err := io.ReadAll(io.LimitReader(fh, limit+1))
	if err != nil {
		f.ReadErr = fmt.Errorf("%w: %v", reason.ErrUnreadableFile, err)
		return nil
	}
	if int64(len(raw)) > limit {
		f.ReadErr = fmt.Errorf("%w: %s is larger than %d bytes", reason.ErrUnreadableFile, f.Path, limit)
		return nil
	}
	f.Present, f.Raw, f.Size, f.Digest = true, raw, int64(len(raw)), evidence.DigestOf(raw)
	return nil
}

// IsRunConfig reports whether f is a campaign's effective run configuration (a config_file the
// campaign wrote beside its evidence).
func IsRunConfig(f *File) bool {
	return f.Kind == contract.ArtifactKindConfigFile && path.Base(f.Path) == "effective-run-config.json" && strings.HasPrefix(f.Path, ".qualification/runs/")
}

// unversionedObject reports whether raw is a well-formed JSON object without a "schema" member.
func unversionedObject(raw []byte) bool {
	doc, err := jsonstrict.Parse(raw)
	if err != nil {
		return false
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	_, named := m["schema"]
	return !named
}

// validate checks a whole JSON file against its contract; want is the contract name its role
// needs ("" for any).
func validate(f *File, want string) error {
	out, err := schemas.CheckDocument(f.Raw)
	if err != nil {
		return fmt.Errorf("check %s: %w", f.Path, err)
	}
	f.Contract = out.Contract.SchemaID
	f.Violations = out.Violations
	f.checked = out
	if out.Valid() && !acceptsContract(want, out.Contract.Name) {
		what := "a qualkit." + want
		if want == anyDriverResult {
			what = "a driver result (" + strings.Join(contract.DriverResults, ", ") + ")"
		}
		f.Violations = []schemas.Violation{{Pointer: "/schema", Err: fmt.Errorf("%w: %s where %s is bound", reason.ErrWrongContract, out.Contract.SchemaID, what)}}
	}
	return nil
}

// onlySemantic reports whether every violation is a semantic rule (the document matches its
// schema, so its typed form can be read).
func onlySemantic(vs []schemas.Violation) bool {
	for _, v := range vs {
		if !errors.Is(v, schemas.ErrSemantic) {
			return false
		}
	}
	return true
}

// Variant returns the receipt's variant in the workload, when both are available.
func (s *Snapshot) Variant() *contract.Variant {
	if s.Workload == nil || s.RC == nil {
		return nil
	}
	for i := range s.Workload.Variants {
		if s.Workload.Variants[i].ID == s.RC.Workload.Variant {
			return &s.Workload.Variants[i]
		}
	}
	return nil
}

// Case returns the variant's case of that id (nil when there is none).
func (s *Snapshot) Case(id string) *contract.Case {
	v := s.Variant()
	if v == nil {
		return nil
	}
	for i := range v.Cases {
		if v.Cases[i].ID == id {
			return &v.Cases[i]
		}
	}
	return nil
}
