package check

import (
	"math"
	"net"
	"net/url"
	"slices"

	"strconv"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Bounds of the lifecycle plausibility rules: what the runner's own measurement allows.
const (
	// lifecycleClockSlackMs bounds how far a recorded elapsed time may differ from the difference
	// of the two monotonic offsets it was measured between (they are one subtraction apart).
	lifecycleClockSlackMs = 0.001
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
func lifecyclePlausible(c *finding.Collector, path string, l *contract.LifecycleRecordDoc, r *contract.LaunchRecipeDoc) {
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
		if rd.ModelID != r.ModelID {
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
