package check

import (
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Cleanup: the owned server's lifecycle. Ready before the deadline, the port free before
// launch, the listener owned, a graceful shutdown (not forced) with an acceptable exit code, no
// residue, a complete record whose verdict is passed, and a record that agrees with the receipt,
// the launch recipe, the server binary and the server log.
func Cleanup(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckCleanup}
	rc := s.RC
	file := s.Receipt.Path
	if rc.Lifecycle == nil {
		serving := false
		for _, cr := range s.CaseResults {
			serving = serving || len(cr.Rows) > 0
		}
		for _, a := range rc.Artifacts {
			serving = serving || a.Kind == contract.ArtifactKindRequestRecords || a.Kind == contract.ArtifactKindServerLog
		}
		if serving {
			c.Add(file, "/lifecycle", reason.ErrNoLifecycle, "serving cases ran but the receipt binds no lifecycle record")
			return c.Result()
		}
		return c.Skipped("no owned server in this campaign")
	}
	path := rc.Lifecycle.Path
	l := s.Lifecycle
	if l == nil {
		c.Add(path, "", reason.ErrLifecycleIncomplete, "the lifecycle record could not be read (see the hashes and schemas checks): cleanup cannot be established")
		return c.Result()
	}
	CleanupRecord(c, path, l, LifecycleContextOf(s))
	readyBeforeRequests(c, s, path, l)
	return c.Result()
}

// LifecycleContextOf is what the receipt and the bound inputs of s give a lifecycle record to be
// checked against.
func LifecycleContextOf(s *load.Snapshot) LifecycleContext {
	rc := s.RC
	ctx := LifecycleContext{
		Recipes:       RecipesByDigest(s),
		RecipePaths:   map[string]string{},
		RecipeDigests: DigestsOfKind(rc, contract.ArtifactKindLaunchRecipe),
		Logs:          ArtifactsOfKind(rc, contract.ArtifactKindServerLog),
		Binaries:      DigestsOfKind(rc, contract.ArtifactKindServerBinary),
		BinaryFiles:   ArtifactsOfKind(rc, contract.ArtifactKindServerBinary),
		ModelID:       RunConfigModelID(s),
		ReceiptID:     rc.ReceiptID,
	}
	if rc.Lifecycle != nil {
		ctx.ReceiptVerdict = rc.Lifecycle.Verdict
	}
	for p := range s.Recipes {
		if f := s.Files[p]; f != nil && f.Present {
			ctx.RecipePaths[f.Digest] = p
		}
	}
	return ctx
}

// lifecycleContext is what a lifecycle record is checked against.
type LifecycleContext struct {
	ReceiptVerdict contract.LifecycleRefVerdict
	Recipes        map[string]*contract.LaunchRecipeDoc // by digest, those present locally
	RecipeDigests  []string
	// RecipePaths are the repository paths of the recipes present locally, by digest.
	RecipePaths map[string]string
	Logs        []contract.Artifact
	Binaries    []string
	// BinaryFiles are the server_binary artifacts.
	BinaryFiles []contract.Artifact
	// ModelID is qualrun run --model-id (the run configuration's), which overrides the recipe's
	// model id; "" when none was given.
	ModelID string
	// ReceiptID is the receipt's id (the run marker QUALKIT_RUN_ID).
	ReceiptID string
}

func DigestsOfKind(rc *contract.ReceiptDoc, kind contract.ArtifactKind) []string {
	var out []string
	for _, a := range ArtifactsOfKind(rc, kind) {
		out = append(out, a.Digest)
	}
	return out
}

func RecipesByDigest(s *load.Snapshot) map[string]*contract.LaunchRecipeDoc {
	out := map[string]*contract.LaunchRecipeDoc{}
	for p, r := range s.Recipes {
		if f := s.Files[p]; f != nil && f.Present {
			out[f.Digest] = r
		}
	}
	return out
}

// cleanupRecord checks one lifecycle record (a pure function: the table test drives it).
func CleanupRecord(c *finding.Collector, path string, l *contract.LifecycleRecordDoc, ctx LifecycleContext) {
	if !l.Port.FreeBeforeLaunch {
		c.Add(path, "/port/free_before_launch", reason.ErrPortTaken, "port %d had a listener before launch", l.Port.Port)
	}
	if l.Launch == nil {
		c.Add(path, "/launch", reason.ErrLifecycleIncomplete, "no launch identity")
	}
	switch r := l.Readiness; {
	case r == nil:
		c.Add(path, "/readiness", reason.ErrLifecycleIncomplete, "no readiness evidence")
	case !r.Ready:
		c.Add(path, "/readiness/ready", reason.ErrNotReady, "the server never listed model %s on /v1/models (child exit: %s)", r.ModelID, rowcheck.Deref(r.ChildExit))
	case r.TReadyNs == nil:
		c.Add(path, "/readiness/t_ready_ns", reason.ErrLifecycleIncomplete, "ready without the time readiness was observed")
	case r.ElapsedMs > r.DeadlineMs:
		c.Add(path, "/readiness/elapsed_ms", reason.ErrReadyLate, "ready after %.3f ms, the startup deadline was %.3f ms", r.ElapsedMs, r.DeadlineMs)
	}
	switch li := l.Listener; {
	case li == nil:
		c.Add(path, "/listener", reason.ErrLifecycleIncomplete, "no listener ownership evidence")
	case !li.Owned:
		c.Add(path, "/listener/owned", reason.ErrListenerNotOwned, "the listening socket was not held by the owned process tree (owners %v)", li.OwnerPIDs)
	case len(li.Inodes) == 0 || len(li.OwnerPIDs) == 0:
		c.Add(path, "/listener", reason.ErrListenerNotOwned, "owned, but no socket inode or owner pid was recorded")
	}
	switch sd := l.Shutdown; {
	case sd == nil:
		c.Add(path, "/shutdown", reason.ErrLifecycleIncomplete, "no shutdown evidence")
	default:
		if sd.Forced {
			c.Add(path, "/shutdown/forced", reason.ErrForcedShutdown, "SIGKILL was needed after %.3f ms", sd.ElapsedMs)
		}
		if !sd.Acceptable {
			c.Add(path, "/shutdown/acceptable", reason.ErrExitNotAcceptable, "exit code %s, signal %s", derefInt(sd.ExitCode), rowcheck.Deref(sd.ExitSignal))
		}
		if r := ctx.Recipes[l.Recipe.Digest]; r != nil && sd.Acceptable && (sd.ExitCode == nil || !slices.Contains(r.AcceptableExitCodes, *sd.ExitCode)) {
			c.Add(path, "/shutdown/exit_code", reason.ErrExitNotAcceptable, "exit code %s is not among the recipe's acceptable codes %v", derefInt(sd.ExitCode), r.AcceptableExitCodes)
		}
	}
	for i, p := range l.Residue.Processes {
		c.Add(path, finding.Pointer("residue", "processes", i), reason.ErrResidue, "process %d (%s, escaped %v) remained after shutdown", p.PID, p.Comm, p.Escaped)
	}
	for i, p := range l.Residue.Listeners {
		c.Add(path, finding.Pointer("residue", "listeners", i), reason.ErrResidue, "a listener (inode %d) remained on port %d", p.Inode, p.Port)
	}
	lifecyclePlausible(c, path, l, ctx.Recipes[l.Recipe.Digest], ctx.ModelID)
	lifecycleBound(c, path, l, ctx)
	lifecycleEnvironment(c, path, l, ctx.Recipes[l.Recipe.Digest], ctx.ReceiptID)
	processesAtSignal(c, path, l)
	if l.Verdict != contract.RecordVerdictPassed || len(l.Failures) > 0 {
		c.Add(path, "/verdict", reason.ErrLifecycleFailed, "verdict %s: %v", l.Verdict, l.Failures)
	}
	if ctx.ReceiptVerdict != "" && string(ctx.ReceiptVerdict) != string(l.Verdict) {
		c.Add(path, "/verdict", reason.ErrLifecycleMismatch, "the record says %s, the receipt says %s", l.Verdict, ctx.ReceiptVerdict)
	}
	if len(ctx.RecipeDigests) > 0 && !slices.Contains(ctx.RecipeDigests, l.Recipe.Digest) {
		c.Add(path, "/recipe/digest", reason.ErrLifecycleMismatch, "recipe %s is not the launch recipe the receipt binds %v", l.Recipe.Digest, ctx.RecipeDigests)
	}
	if la := l.Launch; la != nil {
		if len(ctx.Binaries) > 0 && !slices.Contains(ctx.Binaries, la.Executable.Digest) {
			c.Add(path, "/launch/executable/digest", reason.ErrLifecycleMismatch, "the launched executable %s is not the server binary the receipt binds %v", la.Executable.Digest, ctx.Binaries)
		}
		matched := len(ctx.Logs) == 0
		for _, lg := range ctx.Logs {
			matched = matched || (lg.Digest == la.Log.Digest && lg.Bytes == la.Log.Bytes)
		}
		if !matched {
			c.Add(path, "/launch/log", reason.ErrLifecycleMismatch, "the server log is recorded as %s (%d bytes), the receipt binds %s (%d bytes)", la.Log.Digest, la.Log.Bytes, ctx.Logs[0].Digest, ctx.Logs[0].Bytes)
		}
	}
}

func derefInt(v *int64) string {
	if v == nil {
		return "none" // not a contract value: the text of an absent value
	}
	return record.Itoa(*v)
}
