package lifecycle

import (
	"fmt"
	"os"
	"os/exec"
	"sort"
	"syscall"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"golang.org/x/sys/unix"
)

// Group is one started process tree, owned the way a case command is: the leader runs in its own
// process group and, where the host allows, in a new cgroup v2 joined at clone time; this process
// is a child subreaper, so descendants that leave the group (setsid, double fork) stay visible.
// RunCommand and the evidence drivers (runner/driver) use it. Methods are for one goroutine at a
// time, except Exited, which any goroutine may watch.
type Group struct {
	t           *tree
	cmd         *exec.Cmd
	state       *os.ProcessState
	unsupported []string
	started     time.Time
	keeper      *keeper
}

// StartGroup starts cmd as the leader of a new process group (SysProcAttr.Setpgid is forced on;
// the caller may set other SysProcAttr fields, such as namespace flags). When the host refuses
// the cgroup at clone time, the leader is started from a copy of cmd without one and Unsupported
// says so; use the Group, not cmd, after StartGroup. A nil *Group
// comes with an error: nothing was started.
func StartGroup(cmd *exec.Cmd) (*Group, error) { return startGroup(cmd, nil) }

// guardPlan asks startGroup for a keeper (RunCommand's Keeper): argv0 re-executed as the keeper,
// the run id its markers carry, the grace between its SIGTERM and SIGKILL.
type guardPlan struct {
	argv0, runID string
	grace        time.Duration
}

// startGroup is StartGroup, with a keeper when guard is not nil. The keeper starts before the
// cgroup exists, told its planned name, and learns the leader's identity once it is started
// (as Launch's keeper does): this process killed at any moment leaves nothing a keeper would
// not stop or remove. A keeper that cannot start is said in Unsupported, its error first.
func startGroup(cmd *exec.Cmd, guard *guardPlan) (*Group, error) {
	fs, err := newFS()
	if err != nil {
		return nil, err
	}
	g := &Group{t: &tree{fs: fs, self: os.Getpid(), exited: make(chan struct{})}, cmd: cmd}
	if err := becomeSubreaper(); err != nil {
		g.unsupported = append(g.unsupported, "child subreaper: "+err.Error())
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cgDir, cgErr := planCgroup("")
	if guard != nil {
		if err := g.guard(*guard, cgDir); err != nil {
			g.unsupported = append(g.unsupported, "keeper: "+err.Error()+" (the command may outlive qualrun if qualrun is killed)")
		}
		launchStep("keeper")
	}
	var cg *cgroup
	if cgErr == nil {
		cg, _, cgErr = makeCgroup(cgDir, 0)
	}
	launchStep("cgroup")
	if cgErr == nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(cg.fd.Fd())
	} else {
		g.unsupported = append(g.unsupported, "cgroup v2 accounting: "+cgErr.Error())
	}
	g.started = time.Now()
	err = cmd.Start()
	if err != nil && cg != nil {
		// CLONE_INTO_CGROUP can be refused (old kernel, delegation): retry without the cgroup.
		_ = cg.remove()
		cg = nil
		cmd.SysProcAttr.UseCgroupFD = false
		cmd.SysProcAttr.CgroupFD = 0
		retry := &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir, Stdin: cmd.Stdin,
			Stdout: cmd.Stdout, Stderr: cmd.Stderr, ExtraFiles: cmd.ExtraFiles, SysProcAttr: cmd.SysProcAttr}
		g.started = time.Now()
		if err2 := retry.Start(); err2 != nil {
			g.keeper.done()
			return nil, fmt.Errorf("start %s: %w", cmd.Path, err2)
		}
		g.unsupported = append(g.unsupported, "cgroup v2 placement: "+err.Error())
		g.cmd, err = retry, nil
	}
	if err != nil {
		g.keeper.done()
		_ = cg.remove()
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	g.t.cg = cg
	run := g.cmd
	launchStep("started")
	if st, err := statOf(fs, run.Process.Pid); err == nil {
		g.t.id = st
	} else {
		g.t.id = procInfo{PID: run.Process.Pid, PGID: run.Process.Pid}
	}
	if err := g.keeper.announce(g.t.id.PID, g.t.id.StartTicks); err != nil {
		g.unsupported = append(g.unsupported, "keeper: "+err.Error())
	}
	go func() {
		_ = run.Wait()
		g.state = run.ProcessState
		close(g.t.exited)
	}()
	return g, nil
}

// Exited is closed when the leader has exited (and been reaped).
func (g *Group) Exited() <-chan struct{} { return g.t.exited }

// PID is the leader's process id (also the process group id).
func (g *Group) PID() int { return g.cmd.Process.Pid }

// Started is when the leader was started.
func (g *Group) Started() time.Time { return g.started }

// State is the leader's exit state once Exited is closed, else nil.
func (g *Group) State() *os.ProcessState {
	select {
	case <-g.t.exited:
		return g.state
	default:
		return nil
	}
}

// Unsupported lists the tracking the host could not give (subreaper, cgroup).
func (g *Group) Unsupported() []string { return append([]string(nil), g.unsupported...) }

// Terminate sends SIGTERM to the group (after re-checking the leader's identity) and waits up to
// grace for the leader to exit; if it is still running, every live process of the tree is sent
// SIGKILL (and the cgroup killed) and forced is true. It returns once the leader has exited.
func (g *Group) Terminate(grace time.Duration) (forced bool) {
	_ = g.t.signalGroup(unix.SIGTERM)
	select {
	case <-g.t.exited:
		return false
	case <-time.After(grace):
	}
	g.t.killAll()
	select {
	case <-g.t.exited:
	case <-time.After(KillWait):
	}
	return true
}

// Residue waits (after the leader has exited) up to EscapeSettle for the rest of the tree to
// exit, records what is still alive (Escaped: outside the leader's process group), kills it,
// reaps reparented orphans and removes the cgroup. Call it once, after Exited is closed.
func (g *Group) Residue() []contract.ResidueProcess {
	<-g.t.exited
	left := g.t.waitGone(time.Now().Add(EscapeSettle), func(procInfo) bool { return true })
	pids := make([]int, 0, len(left))
	for pid := range left {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	res := []contract.ResidueProcess{}
	for _, pid := range pids {
		res = append(res, contract.ResidueProcess{PID: int64(pid), Comm: left[pid].Comm, Escaped: left[pid].PGID != g.t.id.PGID})
	}
	if len(left) > 0 {
		g.t.killAll()
		g.t.waitGone(time.Now().Add(KillWait), func(procInfo) bool { return true })
	}
	g.t.reapOrphans()
	if g.t.cg != nil {
		if len(g.t.cg.pids()) > 0 {
			_ = g.t.cg.kill()
		}
		_ = g.t.cg.remove()
		g.t.cg = nil
	}
	g.keeper.done()
	g.keeper = nil
	return res
}

// guard starts the group's keeper, told the cgroup the group is about to get (cgDir, "" for
// none): if this process dies before Residue, the keeper stops the group (SIGTERM, grace,
// SIGKILL, cgroup.kill) and removes its cgroup.
func (g *Group) guard(p guardPlan, cgDir string) error {
	if p.runID == "" {
		p.runID = newRunID()
	}
	_, pid, ticks := ownerMarker(g.t.fs)
	k, err := startKeeper(p.argv0, keeperConfig{RunID: p.runID, OwnerPID: pid, OwnerTicks: ticks, ShutdownMs: p.grace.Milliseconds(), Cgroup: cgDir})
	if err != nil {
		return err
	}
	g.keeper = k
	g.t.notOurs = k.pid
	return nil
}

// ExitCode is the leader's exit code, 128+signal when a signal ended it, and the signal's name
// ("" for a normal exit). It is -1 before the leader has exited.
func (g *Group) ExitCode() (int, string) {
	st := g.State()
	if st == nil {
		return -1, ""
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), unix.SignalName(ws.Signal())
	}
	return st.ExitCode(), ""
}
