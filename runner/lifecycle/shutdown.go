package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"syscall"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"golang.org/x/sys/unix"
)

const pollEvery = 20 * time.Millisecond

// waitGone polls until no live process of the set selected by which remains, or until deadline.
func (s *tree) waitGone(deadline time.Time, which func(procInfo) bool) procTable {
	for {
		live, err := s.liveOwned()
		left := procTable{}
		if err == nil {
			for pid, p := range live {
				if which(p) {
					left[pid] = p
				}
			}
		}
		if len(left) == 0 || !time.Now().Before(deadline) {
			return left
		}
		time.Sleep(pollEvery)
	}
}

func (s *tree) inGroup(p procInfo) bool { return p.PGID == s.id.PGID }

// signalGroup sends sig to the server's process group after re-checking the leader's identity.
func (s *tree) signalGroup(sig syscall.Signal) error {
	if err := s.checkIdentity(); err != nil {
		return err
	}
	if !s.bound() { // checkIdentity refuses it; never signal group 0 or -1
		return ErrUnbound
	}
	if err := unix.Kill(-s.id.PGID, sig); err != nil && err != unix.ESRCH {
		return fmt.Errorf("signal group %d with %s: %w", s.id.PGID, unix.SignalName(sig), err)
	}
	return nil
}

// killAll SIGKILLs every live owned process (group members and escaped descendants) and the cgroup.
func (s *tree) killAll() {
	live, err := s.liveOwned()
	if err == nil {
		for pid, p := range live {
			// Re-check each target right before the signal: same start time, still ours.
			if cur, err := statOf(s.fs, pid); err == nil && cur.StartTicks == p.StartTicks {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
	}
	if s.bound() && s.checkIdentity() == nil {
		_ = unix.Kill(-s.id.PGID, unix.SIGKILL)
	}
	if s.cg != nil {
		_ = s.cg.kill()
	}
}

// reapOrphans collects the exit status of processes reparented to this runner (subreaper) so they
// do not linger as zombies.
func (s *tree) reapOrphans() {
	all, err := scanProcs(s.fs)
	if err != nil {
		return
	}
	for pid, p := range all {
		if p.PPID == s.self && pid != s.id.PID && p.zombie() && p.StartTicks >= s.id.StartTicks {
			var ws unix.WaitStatus
			_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		}
	}
}

// Shutdown stops the server: SIGTERM to the group, a wait of up to the recipe's shutdown deadline
// for the leader and the group, then SIGKILL (recorded as forced: a failure, never a success).
// Escaped descendants get EscapeSettle to exit; whatever remains, and any listener left on the
// port, is recorded as residue and killed. Shutdown is idempotent and always completes: a
// cancelled ctx only skips the graceful wait. It returns the complete lifecycle record.
func (s *Server) Shutdown(ctx context.Context) *contract.LifecycleRecordDoc {
	s.shutdown.Do(func() { s.stop(ctx) })
	return &s.record
}

func (s *Server) stop(ctx context.Context) {
	r := s.recipe
	sd := &contract.Shutdown{Signal: "SIGTERM"}
	s.record.Shutdown = sd
	exitedBefore := false
	select {
	case <-s.exited:
		exitedBefore = true
	default:
	}
	sd.ProcessesAtSignal = s.snapshot()
	sent := time.Now()
	sd.SentAt = sent.UTC().Format(time.RFC3339Nano)
	sd.TSentNs = s.offset(sent)
	if err := s.signalGroup(unix.SIGTERM); err != nil {
		s.fail("shutdown: " + err.Error())
	}
	deadline := sent.Add(time.Duration(r.ShutdownTimeoutSeconds * float64(time.Second)))
	timer := time.NewTimer(time.Until(deadline))
	select {
	case <-s.exited:
	case <-timer.C:
	case <-ctx.Done():
	}
	timer.Stop()
	groupLeft := s.waitGone(deadline, s.inGroup)
	select {
	case <-s.exited:
	default:
		groupLeft[s.id.PID] = s.id
	}
	if len(groupLeft) > 0 {
		sd.Forced = true
		s.killAll()
		select {
		case <-s.exited:
		case <-time.After(KillWait):
			s.fail(fmt.Sprintf("shutdown: leader pid %d survived SIGKILL for %s", s.id.PID, KillWait))
		}
		if left := s.waitGone(time.Now().Add(KillWait), s.inGroup); len(left) > 0 {
			s.fail(fmt.Sprintf("shutdown: process group %d survived SIGTERM and SIGKILL", s.id.PGID))
		}
	}
	sd.ElapsedMs = float64(time.Since(sent)) / float64(time.Millisecond)
	if s.state != nil {
		if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			name := unix.SignalName(ws.Signal())
			sd.ExitSignal = &name
			// A leader that dies of SIGTERM reports 128+15 = 143 by shell convention.
			code := int64(128 + int(ws.Signal()))
			sd.ExitCode = &code
		} else {
			code := int64(s.state.ExitCode())
			sd.ExitCode = &code
		}
	}
	sd.Acceptable = !sd.Forced && !exitedBefore && sd.ExitCode != nil && slices.Contains(r.AcceptableExitCodes, *sd.ExitCode)
	switch {
	case exitedBefore:
		s.fail(fmt.Sprintf("shutdown: the server had already exited (%s) before SIGTERM", s.exitStatus()))
	case sd.Forced:
		s.fail(fmt.Sprintf("shutdown: forced: the process group did not exit within %.0f s of SIGTERM", r.ShutdownTimeoutSeconds))
	case !sd.Acceptable:
		s.fail(fmt.Sprintf("shutdown: %s is not an acceptable exit code %v", s.exitStatus(), r.AcceptableExitCodes))
	}
	s.collectResidue()
	s.finish()
}

// collectResidue records whatever of the server is still alive, and listeners left on its port,
// then kills it and checks again.
func (s *Server) collectResidue() {
	res := &s.record.Residue
	left := s.waitGone(time.Now().Add(EscapeSettle), func(procInfo) bool { return true })
	pids := make([]int, 0, len(left))
	for pid := range left {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		p := left[pid]
		res.Processes = append(res.Processes, contract.ResidueProcess{PID: int64(pid), Comm: p.Comm, Escaped: p.PGID != s.id.PGID})
	}
	inodes, err := listeners(s.fs, s.port)
	if err != nil {
		s.fail("residue: " + err.Error())
	}
	for _, in := range inodes {
		res.Listeners = append(res.Listeners, contract.ResidueListener{Port: int64(s.port), Inode: int64(in)})
	}
	if len(res.Processes) > 0 {
		s.fail(fmt.Sprintf("residue: %d process(es) of the server still running after shutdown", len(res.Processes)))
	}
	if len(res.Listeners) > 0 {
		s.fail(fmt.Sprintf("residue: port %d still has a listener after shutdown", s.port))
	}
	if len(res.Processes) > 0 || len(res.Listeners) > 0 {
		res.Killed = true
		s.killAll()
		if still := s.waitGone(time.Now().Add(KillWait), func(procInfo) bool { return true }); len(still) > 0 {
			s.fail(fmt.Sprintf("residue: %d process(es) survived SIGKILL", len(still)))
		}
	}
	s.reapOrphans()
}

// snapshot lists the live processes of the owned tree, sorted by pid (nil when none or unreadable).
func (s *Server) snapshot() []contract.GroupProcess {
	live, err := s.liveOwned()
	if err != nil || len(live) == 0 {
		return nil
	}
	out := make([]contract.GroupProcess, 0, len(live))
	for pid, p := range live {
		out = append(out, contract.GroupProcess{PID: int64(pid), PPID: int64(p.PPID), Comm: p.Comm, Escaped: p.PGID != s.id.PGID})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}

// fail adds a failure to the record.
func (s *Server) fail(msg string) { s.record.Failures = append(s.record.Failures, msg) }

// Fail records a failure observed by the caller (readiness, ownership, traffic) in the lifecycle record.
func (s *Server) Fail(err error) { s.fail(err.Error()) }

// finish closes and hashes the log, removes the cgroup and sets the verdict.
func (s *Server) finish() {
	s.drainLog(LogDrain)
	if s.log != nil {
		if err := s.log.Sync(); err != nil {
			s.fail("server log: fsync: " + err.Error())
		}
		s.log.Close()
	}
	if d, n, err := evidence.DigestFile(s.opts.LogPath); err == nil {
		s.record.Launch.Log = contract.Log{Path: s.opts.LogPath, Digest: d, Bytes: n}
	} else {
		s.fail("server log: " + err.Error())
	}
	if s.cg != nil {
		if left := s.cg.pids(); len(left) > 0 {
			_ = s.cg.kill()
		}
		if err := s.cg.remove(); err != nil {
			s.fail("cgroup: " + err.Error())
		}
	}
	if rd := s.record.Readiness; rd == nil || !rd.Ready {
		if !containsPrefix(s.record.Failures, "readiness") {
			s.fail("readiness: the server was never ready")
		}
	}
	if l := s.record.Listener; l == nil || !l.Owned {
		if !containsPrefix(s.record.Failures, "listener") {
			s.fail("listener: ownership was not established")
		}
	}
	if why := s.keeper.lost("the server"); why != "" {
		s.unsupported = append(s.unsupported, why)
	}
	s.record.Unsupported = append(s.record.Unsupported, s.unsupported...)
	// The server is gone and checked: the keeper has nothing left to guard.
	s.keeper.done()
	if len(s.record.Failures) == 0 {
		s.record.Verdict = contract.RecordVerdictPassed
	} else {
		s.record.Verdict = contract.RecordVerdictFailed
	}
}

func containsPrefix(list []string, prefix string) bool {
	for _, x := range list {
		if len(x) >= len(prefix) && x[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}
