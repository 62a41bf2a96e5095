package check

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"strconv"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Bounds of the lifecycle plausibility rules: what the runner's own measurement allows.
const (
	// lifecycleClockSlackMs bounds how far a recorded elapsed time may differ from the difference
	// of the two monotonic offsets it was measured between.
	// The runner computes it from the same two offsets (ready.go), so it agrees to the float's
	// rounding: half a nanosecond catches an offset edited by one.
	lifecycleClockSlackMs = 0.5e-6
	// lifecycleWallSlack bounds how far the wall-clock times of launch and shutdown may disagree
	// with their monotonic offsets (an NTP slew over one campaign; a step is said by the runner).
	lifecycleWallSlack = time.Second
	// shutdownSlackMs is the time the runner may spend after the shutdown deadline to see a group
	// that left on time gone (its last poll of the process table), before it would force it.
	shutdownSlackMs = 1000
)

// lifecyclePlausible checks a lifecycle record against itself (its monotonic offsets, its process
// tree) and, when the bound recipe is present, against what the recipe declared: the readiness
// deadline, path and model, the port, and the shutdown deadline. On 4822f1d a record re-signed
// with a 200 s readiness deadline against the recipe's 120 s, another port, a listener owner of
// PID 1 or a shutdown longer than the recipe's deadline verified.
func lifecyclePlausible(c *finding.Collector, path string, l *contract.LifecycleRecordDoc, r *contract.LaunchRecipeDoc, modelID string) {
	la, rd, sd := l.Launch, l.Readiness, l.Shutdown
	if la != nil {
		if la.PID < 2 || la.PGID != la.PID {
			c.Add(path, "/launch/pgid", reason.ErrLifecycleImplausible, "leader pid %d with process group %d: the runner starts the server as the leader of a new group (pgid = pid > 1)", la.PID, la.PGID)
		}
		if rd != nil && rd.Ready && rd.TReadyNs != nil {
			got := float64(*rd.TReadyNs-la.TStartNs) / float64(time.Millisecond)
			if math.Abs(got-rd.ElapsedMs) > lifecycleClockSlackMs {
				c.Add(path, "/readiness/elapsed_ms", reason.ErrLifecycleImplausible, "ready %.6f ms after launch, the offsets t_ready_ns - t_start_ns say %.6f ms", rd.ElapsedMs, got)
			}
		}
		if sd != nil {
			if rd != nil && rd.TReadyNs != nil && sd.TSentNs < *rd.TReadyNs {
				c.Add(path, "/shutdown/t_sent_ns", reason.ErrLifecycleImplausible, "SIGTERM sent at %d ns, before readiness at %d ns", sd.TSentNs, *rd.TReadyNs)
			}
			if sd.TSentNs < la.TStartNs {
				c.Add(path, "/shutdown/t_sent_ns", reason.ErrLifecycleImplausible, "SIGTERM sent at %d ns, before launch at %d ns", sd.TSentNs, la.TStartNs)
			}
			start, err1 := time.Parse(time.RFC3339Nano, la.StartedAt)
			sent, err2 := time.Parse(time.RFC3339Nano, sd.SentAt)
			if err1 == nil && err2 == nil {
				wall, mono := sent.Sub(start), time.Duration(sd.TSentNs-la.TStartNs)
				if d := wall - mono; d > lifecycleWallSlack || d < -lifecycleWallSlack {
					c.Add(path, "/shutdown/sent_at", reason.ErrLifecycleImplausible, "SIGTERM sent %s after launch by the wall clock, %s by the monotonic offsets", wall, mono)
				}
			}
		}
	}
	if li := l.Listener; li != nil && la != nil {
		tree := map[int64]bool{la.PID: true}
		if sd != nil {
			for _, p := range sd.ProcessesAtSignal {
				tree[p.PID] = true
			}
		}
		for i := range li.OwnerPIDs {
			if slices.Contains(li.OwnerPIDs[:i], li.OwnerPIDs[i]) {
				c.Add(path, finding.Pointer("listener", "owner_pids", i), reason.ErrLifecycleImplausible, "owner pid %d is listed twice", li.OwnerPIDs[i])
			}
		}
		for i := range li.Inodes {
			if slices.Contains(li.Inodes[:i], li.Inodes[i]) {
				c.Add(path, finding.Pointer("listener", "inodes", i), reason.ErrLifecycleImplausible, "socket inode %d is listed twice", li.Inodes[i])
			}
		}
		for i, pid := range li.OwnerPIDs {
			if pid < 2 || !tree[pid] {
				c.Add(path, finding.Pointer("listener", "owner_pids", i), reason.ErrListenerNotOwned, "owner pid %d is neither the server's leader %d nor a process of its tree at shutdown", pid, la.PID)
			}
		}
	}
	if rs := l.Residue; rs.Killed && len(rs.Processes) == 0 && len(rs.Listeners) == 0 {
		c.Add(path, "/residue/killed", reason.ErrLifecycleImplausible, "residue killed, but none was found")
	}
	if rd != nil && r != nil {
		if want := r.StartupTimeoutSeconds * 1000; rd.DeadlineMs != want {
			c.Add(path, "/readiness/deadline_ms", reason.ErrLifecycleMismatch, "readiness deadline %.3f ms, the recipe's startup_timeout_seconds is %g (%.3f ms)", rd.DeadlineMs, r.StartupTimeoutSeconds, want)
		}
		if rd.Path != r.Readiness.Path {
			c.Add(path, "/readiness/path", reason.ErrLifecycleMismatch, "readiness polled %s, the recipe declares %s", rd.Path, r.Readiness.Path)
		}
		if modelID != "" && rd.ModelID != modelID {
			c.Add(path, "/readiness/model_id", reason.ErrLifecycleMismatch, "readiness waited for model %s, the run configuration's --model-id is %s", rd.ModelID, modelID)
		} else if modelID == "" && rd.ModelID != r.ModelID {
			c.Add(path, "/readiness/model_id", reason.ErrLifecycleMismatch, "readiness waited for model %s, the recipe declares %s", rd.ModelID, r.ModelID)
		}
		if rd.Ready && rd.Probes > 1 && rd.ElapsedMs < float64(rd.Probes-1)*float64(r.Readiness.PollIntervalMs) {
			c.Add(path, "/readiness/probes", reason.ErrLifecycleImplausible, "%d probes %d ms apart cannot fit in %.3f ms", rd.Probes, r.Readiness.PollIntervalMs, rd.ElapsedMs)
		}
	}
	if r != nil {
		if host, port, ok := recipeHostPort(r.BaseURL); ok {
			if l.Port.Port != port {
				c.Add(path, "/port/port", reason.ErrLifecycleMismatch, "port %d, the recipe's base_url %s names %d", l.Port.Port, r.BaseURL, port)
			}
			if l.Port.Host != host {
				c.Add(path, "/port/host", reason.ErrLifecycleMismatch, "host %s, the recipe's base_url %s names %s", l.Port.Host, r.BaseURL, host)
			}
		}
		if sd != nil && !sd.Forced && sd.ElapsedMs > r.ShutdownTimeoutSeconds*1000+shutdownSlackMs {
			c.Add(path, "/shutdown/elapsed_ms", reason.ErrLifecycleImplausible, "a graceful shutdown of %.3f ms, beyond the recipe's shutdown deadline of %g s: the runner forces cleanup at the deadline", sd.ElapsedMs, r.ShutdownTimeoutSeconds)
		}
	}
}

// recipeHostPort is the host and port of a recipe's base URL (the scheme's port when it names none).
func recipeHostPort(base string) (string, int64, bool) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	host, p := u.Hostname(), u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	n, err := strconv.ParseInt(p, 10, 64)
	if err != nil {
		return "", 0, false
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return host, n, true
}

// lifecycleBound compares what a lifecycle record says was launched with the bound recipe it
// names: the recipe's id, the digest of its argv (argv_digest is sha256 of the command joined by
// NUL, as the runner computes it), the working directory (the recipe's, resolved against the
// recipe's directory in the host's checkout, whose root the server log's path gives), the
// executable argv[0] resolves to, the server log's path, and the server_binary artifact the
// receipt binds. On 38f126b a re-signed record with another argv digest, recipe id or working
// directory verified, and so did a receipt without its server binary.
func lifecycleBound(c *finding.Collector, path string, l *contract.LifecycleRecordDoc, ctx LifecycleContext) {
	r := ctx.Recipes[l.Recipe.Digest]
	if r != nil && l.Recipe.ID != r.ID {
		c.Add(path, "/recipe/id", reason.ErrLifecycleMismatch, "recipe id %s, the recipe of digest %s is %s", l.Recipe.ID, l.Recipe.Digest, r.ID)
	}
	la := l.Launch
	if la == nil {
		return
	}
	if len(ctx.BinaryFiles) == 0 {
		c.Add(path, "/launch/executable", reason.ErrLifecycleMismatch, "the server %s was launched, but the receipt binds no server_binary artifact", la.Executable.Path)
	}
	// The host's checkout root: the server log is written at <root>/<its artifact path>.
	root, rooted := "", false
	for _, lg := range ctx.Logs {
		if rel := "/" + lg.Path; strings.HasSuffix(la.Log.Path, rel) && lg.Digest == la.Log.Digest {
			root, rooted = strings.TrimSuffix(la.Log.Path, rel), true
		}
	}
	if len(ctx.Logs) > 0 && !rooted {
		c.Add(path, "/launch/log/path", reason.ErrLifecycleMismatch, "the server log was written at %s, which is not the server_log artifact %s below a checkout", la.Log.Path, ctx.Logs[0].Path)
	}
	// The server_binary artifact is the executable launched: its path (absolute, or in the
	// checkout) and digest. On the mutation closure's shapes an edited artifact path verified.
	if len(ctx.BinaryFiles) > 0 && !slices.ContainsFunc(ctx.BinaryFiles, func(a contract.Artifact) bool {
		return a.Digest == la.Executable.Digest && (a.Path == la.Executable.Path || (rooted && !filepath.IsAbs(a.Path) && filepath.Join(root, a.Path) == la.Executable.Path))
	}) {
		c.Add(path, "/launch/executable/path", reason.ErrLifecycleMismatch, "the launched executable %s (%s) is no server_binary artifact the receipt binds (at its path, with its digest)", la.Executable.Path, la.Executable.Digest)
	}
	if r == nil || len(r.Command) == 0 {
		return
	}
	if want := sha256Digest([]byte(strings.Join(r.Command, "\x00"))); la.ArgvDigest != want {
		c.Add(path, "/launch/argv_digest", reason.ErrLifecycleMismatch, "argv digest %s, the recipe's command %q hashes to %s", la.ArgvDigest, r.Command, want)
	}
	rel, known := ctx.RecipePaths[l.Recipe.Digest]
	wd := r.WorkingDirectory
	switch {
	case filepath.IsAbs(wd):
		wd = filepath.Clean(wd)
	case rooted && known:
		wd = filepath.Join(root, filepath.Dir(rel), wd)
	default:
		wd = ""
	}
	if wd != "" && la.WorkingDirectory != wd {
		c.Add(path, "/launch/working_directory", reason.ErrLifecycleMismatch, "working directory %s, the recipe %s's working_directory %s resolves to %s", la.WorkingDirectory, rel, r.WorkingDirectory, wd)
	}
	// The executable argv[0] names: relative to the working directory when it has a slash, else
	// found on a PATH (any absolute directory holding a file of that name).
	argv0 := r.Command[0]
	exe := la.Executable.Path
	switch {
	case strings.Contains(argv0, "/") && filepath.IsAbs(argv0):
		if exe != argv0 {
			c.Add(path, "/launch/executable/path", reason.ErrLifecycleMismatch, "executable %s, the recipe's argv[0] is %s", exe, argv0)
		}
	case strings.Contains(argv0, "/"):
		if want := filepath.Join(la.WorkingDirectory, argv0); exe != want {
			c.Add(path, "/launch/executable/path", reason.ErrLifecycleMismatch, "executable %s, the recipe's argv[0] %s in working directory %s is %s", exe, argv0, la.WorkingDirectory, want)
		}
		// A server binary inside the checkout is bound at its repository path (one outside it,
		// or reached through a symlink out of it, at an absolute path).
		if !filepath.IsAbs(r.WorkingDirectory) && known {
			want := filepath.ToSlash(filepath.Join(filepath.Dir(rel), r.WorkingDirectory, argv0))
			for i, a := range ctx.BinaryFiles {
				if !filepath.IsAbs(a.Path) && !strings.HasPrefix(want, "../") && a.Path != want {
					c.Add(path, "/launch/executable/path", reason.ErrLifecycleMismatch, "the receipt binds server_binary %d at %s, the recipe's argv[0] %s is %s in the repository", i, a.Path, argv0, want)
				}
			}
		}
	default:
		if filepath.Base(exe) != argv0 {
			c.Add(path, "/launch/executable/path", reason.ErrLifecycleMismatch, "executable %s, the recipe's argv[0] %s is a program found on a PATH", exe, argv0)
		}
	}
}

// sha256Digest is "sha256:" and the hex sha256 of b.
func sha256Digest(b []byte) string {
	h := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(h[:])
}

// readyBeforeRequests: every request of the campaign was scheduled after the server was seen ready
// and closed before SIGTERM was sent (the records' and the lifecycle record's offsets share the
// campaign's monotonic epoch; the runner sends nothing before readiness and stops the server after
// its last case). On 38f126b a re-signed t_ready_ns after the first request verified.
func readyBeforeRequests(c *finding.Collector, s *load.Snapshot, path string, l *contract.LifecycleRecordDoc) {
	rd, sd := l.Readiness, l.Shutdown
	if rd == nil || rd.TReadyNs == nil {
		return
	}
	var first, last *record.Record
	var firstPath, lastPath string
	for _, p := range sortedPaths(s.Files) {
		f := s.Files[p]
		if f.Records == nil {
			continue
		}
		for i := range f.Records.Records {
			r := &f.Records.Records[i]
			if first == nil || r.Sched < first.Sched {
				first, firstPath = r, p
			}
			if r.HasClose && (last == nil || r.Close > last.Close) {
				last, lastPath = r, p
			}
		}
	}
	if first != nil && first.Sched < *rd.TReadyNs {
		c.Add(path, "/readiness/t_ready_ns", reason.ErrLifecycleImplausible, "ready at %d ns, after request %d of %s was scheduled at %d ns", *rd.TReadyNs, first.Index, firstPath, first.Sched)
	}
	if sd != nil && last != nil && last.Close > sd.TSentNs {
		c.Add(path, "/shutdown/t_sent_ns", reason.ErrLifecycleImplausible, "SIGTERM sent at %d ns, before request %d of %s closed at %d ns", sd.TSentNs, last.Index, lastPath, last.Close)
	}
}
