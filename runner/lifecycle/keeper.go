package lifecycle

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"golang.org/x/sys/unix"
)

// KeeperArg is the hidden first argument that turns the calling binary into a server keeper.
// Launch (with Options.Keeper) starts the keeper by re-executing its own binary (/proc/self/exe)
// with it, the way the evidence drivers start their guard; the binary's main must hand such a
// process to KeeperMain before anything else (qualrun.Main does; so must the TestMain of every
// test binary that launches with a keeper).
const KeeperArg = "__qualkit-server-keeper-v1__"

// The environment markers every owned server (and whatever it starts, unless it clears its
// environment) carries, so that a server left behind by a dead qualrun can be found and named.
const (
	// MarkerRunID holds the run id (a campaign's receipt id, or serve's run id).
	MarkerRunID = "QUALKIT_RUN_ID"
	// MarkerOwner holds "<pid>:<start ticks>" of the qualrun that owns the server.
	MarkerOwner = "QUALKIT_OWNER"
)

// Keeper limits.
const (
	// keeperKillWait bounds the keeper's wait after SIGKILL before it removes the cgroup and exits.
	keeperKillWait = 5 * time.Second
	// keeperPoll is how often the keeper looks for what is left.
	keeperPoll = 25 * time.Millisecond
	// keeperReleaseWait bounds how long qualrun waits for a released keeper to exit.
	keeperReleaseWait = 5 * time.Second
	// maxEnviron bounds the bytes read of another process's /proc/<pid>/environ.
	maxEnviron = 1 << 20
	// keeperFD is the control pipe's read end in the keeper (ExtraFiles[0]).
	keeperFD = 3
)

// keeperDeathSignal is the keeper's parent-death signal. Its default action is to be ignored:
// qualrun killed while the keeper is still starting (before its runtime catches signals) must
// not kill the keeper with the cgroup it was told of still on the host (SIGUSR1 did, in CI); the
// control pipe's EOF then tells the keeper, which cleans up once it runs.
const keeperDeathSignal = unix.SIGWINCH

// KeeperDeadline is how long after qualrun's death a keeper may take to leave nothing of the
// server: the recipe's shutdown deadline (SIGTERM, as in a normal shutdown), then SIGKILL and a
// bounded wait for the kernel.
func KeeperDeadline(r *contract.LaunchRecipeDoc) time.Duration {
	return time.Duration(r.ShutdownTimeoutSeconds*float64(time.Second)) + keeperKillWait + time.Second
}

// keeperConfig is what Launch tells the keeper (argv[2], JSON).
type keeperConfig struct {
	RunID string `json:"run_id"`
	// OwnerPID and OwnerTicks identify the qualrun that started the keeper.
	OwnerPID   int    `json:"owner_pid"`
	OwnerTicks uint64 `json:"owner_ticks"`
	// Cgroup is the server's cgroup v2 directory ("" without one).
	Cgroup string `json:"cgroup"`
	// ShutdownMs is the recipe's shutdown deadline.
	ShutdownMs int64 `json:"shutdown_ms"`
}

// IsKeeper reports whether args (os.Args) start a server keeper.
func IsKeeper(args []string) bool { return len(args) >= 2 && args[1] == KeeperArg }

// KeeperMain is the keeper: a small process, started by qualrun before the server, in a session
// of its own (a terminal's SIGINT or SIGHUP does not reach it), that learns the server's
// identity over a pipe and watches qualrun two ways: the pipe (EOF without "done" means qualrun
// died, whatever killed it) and PR_SET_PDEATHSIG (keeperDeathSignal when qualrun's thread that
// started it dies). Either way it stops the server as a shutdown would: SIGTERM to the process group, the
// recipe's shutdown deadline, then SIGKILL to the group, to the cgroup (cgroup.kill) and to every
// process carrying the run's marker; then it removes the cgroup and exits. Told "done", it exits
// at once: qualrun shut the server down itself. SIGTERM to the keeper also makes it clean up.
//
// Run by hand, or without the pipe, it refuses to do anything.
func KeeperMain(args []string) int {
	signal.Ignore(unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGPIPE)
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, unix.SIGTERM, keeperDeathSignal)
	const byHand = "qualkit server keeper: an internal entry point of qualrun, started by qualrun, never by hand"
	var st unix.Stat_t
	if !IsKeeper(args) || len(args) != 3 || len(args[2]) > 1<<16 || unix.Fstat(keeperFD, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO {
		fmt.Fprintln(os.Stderr, byHand)
		return 125
	}
	var cfg keeperConfig
	if err := json.Unmarshal([]byte(args[2]), &cfg); err != nil || cfg.OwnerPID < 1 {
		fmt.Fprintln(os.Stderr, byHand)
		return 125
	}
	// Started through /proc/self/exe, its name would be "exe": name the main thread for ps.
	_ = os.WriteFile(fmt.Sprintf("/proc/self/task/%d/comm", os.Getpid()), []byte("qualrun-keeper"), 0)
	k := &keeperState{cfg: cfg}
	if fs, err := newFS(); err == nil {
		k.fs = &fs
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(os.NewFile(keeperFD, "control"))
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	// If qualrun died before PR_SET_PDEATHSIG took effect, the pipe's EOF still tells.
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				k.cleanup()
				return 0
			}
			f := strings.Fields(line)
			switch {
			case len(f) == 1 && f[0] == "done": // not a contract value: the keeper pipe's line
				return 0
			case len(f) == 3 && f[0] == "server":
				pid, err1 := strconv.Atoi(f[1])
				ticks, err2 := strconv.ParseUint(f[2], 10, 64)
				if err1 == nil && err2 == nil && pid > 1 {
					k.leader, k.leaderTicks = pid, ticks
				}
			}
		case <-sigs:
			k.cleanup()
			return 0
		}
	}
}

type keeperState struct {
	cfg         keeperConfig
	fs          *procfs.FS
	leader      int
	leaderTicks uint64
}

// targets lists the live processes the keeper must stop: the leader (same start time), its
// process group, the cgroup's members and every process carrying the run's markers.
func (k *keeperState) targets() map[int]uint64 {
	out := map[int]uint64{}
	if k.fs == nil {
		return out
	}
	all, err := scanProcs(*k.fs)
	if err != nil {
		return out
	}
	self := os.Getpid()
	inCgroup := map[int]bool{}
	if k.cfg.Cgroup != "" {
		for _, p := range (&cgroup{dir: k.cfg.Cgroup}).pids() {
			inCgroup[p] = true
		}
	}
	leaderAlive := false
	if k.leader > 0 {
		if p, ok := all[k.leader]; ok && p.StartTicks == k.leaderTicks && !p.zombie() {
			leaderAlive = true
		}
	}
	for pid, p := range all {
		if pid == self || p.zombie() {
			continue
		}
		switch {
		case inCgroup[pid]:
		case k.leader > 0 && pid == k.leader && p.StartTicks == k.leaderTicks:
		case leaderAlive && p.PGID == k.leader:
		case k.marked(pid):
		default:
			continue
		}
		out[pid] = p.StartTicks
	}
	return out
}

// marked reports whether pid's environment carries this run's markers.
func (k *keeperState) marked(pid int) bool {
	run, owner, ok := processMarkers(pid)
	return ok && run == k.cfg.RunID && owner == fmt.Sprintf("%d:%d", k.cfg.OwnerPID, k.cfg.OwnerTicks)
}

func (k *keeperState) signal(sig unix.Signal) {
	for pid, ticks := range k.targets() {
		if cur, err := statOf(*k.fs, pid); err == nil && cur.StartTicks == ticks {
			_ = unix.Kill(pid, sig)
		}
	}
}

// cleanup stops whatever is left of the server and removes its cgroup.
func (k *keeperState) cleanup() {
	if k.fs == nil {
		if k.cfg.Cgroup != "" {
			_ = (&cgroup{dir: k.cfg.Cgroup}).kill()
		}
		return
	}
	deadline := time.Now().Add(time.Duration(k.cfg.ShutdownMs) * time.Millisecond)
	if k.leader > 0 {
		if cur, err := statOf(*k.fs, k.leader); err == nil && cur.StartTicks == k.leaderTicks {
			_ = unix.Kill(-k.leader, unix.SIGTERM)
		}
	} else {
		// qualrun died before it told the server's identity: what the cgroup and the run's
		// markers find is the server, and each is asked to stop.
		k.signal(unix.SIGTERM)
	}
	for len(k.targets()) > 0 && time.Now().Before(deadline) {
		time.Sleep(keeperPoll)
	}
	if len(k.targets()) > 0 {
		k.signal(unix.SIGKILL)
		if k.cfg.Cgroup != "" {
			_ = (&cgroup{dir: k.cfg.Cgroup}).kill()
		}
		end := time.Now().Add(keeperKillWait)
		for len(k.targets()) > 0 && time.Now().Before(end) {
			time.Sleep(keeperPoll)
			k.signal(unix.SIGKILL)
		}
	}
	if k.cfg.Cgroup != "" {
		_ = removeCgroupDir(k.cfg.Cgroup)
	}
}

// removeCgroupDir removes an empty cgroup directory, waiting briefly for the kernel to drain it.
func removeCgroupDir(dir string) error {
	var err error
	for i := 0; i < 50; i++ {
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// processMarkers reads the run markers from a process's environment (bounded).
func processMarkers(pid int) (runID, owner string, ok bool) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		return "", "", false
	}
	defer f.Close()
	buf, _ := io.ReadAll(io.LimitReader(f, maxEnviron))
	for _, kv := range strings.Split(string(buf), "\x00") {
		if v, found := strings.CutPrefix(kv, MarkerRunID+"="); found {
			runID = v
		} else if v, found := strings.CutPrefix(kv, MarkerOwner+"="); found {
			owner = v
		}
	}
	return runID, owner, runID != ""
}

// keeper is qualrun's side of a started keeper.
type keeper struct {
	pid     int
	ctl     *os.File // write end of the control pipe
	exited  chan struct{}
	release chan struct{}
	started time.Time
	// died says how the keeper ended on its own (before done), set before exited closes.
	died string
}

// ownerMarker is "<pid>:<start ticks>" of this process.
func ownerMarker(fs procfs.FS) (string, int, uint64) {
	pid := os.Getpid()
	st, err := statOf(fs, pid)
	if err != nil {
		return strconv.Itoa(pid) + ":0", pid, 0
	}
	return fmt.Sprintf("%d:%d", pid, st.StartTicks), pid, st.StartTicks
}

// startKeeper re-executes this binary as the server's keeper, named argv0 (os.Args[0] when "").
// The keeper is started from a goroutine locked to its OS thread that lives until the keeper is
// released: PR_SET_PDEATHSIG fires when the thread that forked the child exits, so that thread
// must outlive the server.
func startKeeper(argv0 string, cfg keeperConfig) (*keeper, error) {
	if argv0 == "" {
		argv0 = os.Args[0]
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("keeper pipe: %w", err)
	}
	k := &keeper{ctl: wr, exited: make(chan struct{}), release: make(chan struct{}), started: time.Now()}
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
		if err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		cmd := &exec.Cmd{Path: "/proc/self/exe", Args: []string{argv0, KeeperArg, string(b)},
			Stdin: devnull, Stdout: devnull, Stderr: devnull, ExtraFiles: []*os.File{rd},
			SysProcAttr: &syscall.SysProcAttr{Setsid: true, Pdeathsig: keeperDeathSignal}}
		err = cmd.Start()
		rd.Close()
		devnull.Close()
		if err != nil {
			started <- err
			runtime.UnlockOSThread()
			return
		}
		k.pid = cmd.Process.Pid
		started <- nil
		waited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(waited) }()
		select {
		case <-waited:
			k.died = fmt.Sprintf("%s after %.1fs", cmd.ProcessState, time.Since(k.started).Seconds())
		case <-k.release:
			// Still locked: the keeper was told "done" and is exiting; wait for it (bounded).
			select {
			case <-waited:
			case <-time.After(keeperReleaseWait):
				_ = cmd.Process.Kill()
				<-waited
			}
		}
		close(k.exited)
		runtime.UnlockOSThread()
	}()
	if err := <-started; err != nil {
		wr.Close()
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	return k, nil
}

// announce tells the keeper the server's identity.
func (k *keeper) announce(pid int, ticks uint64) error {
	if k == nil {
		return nil
	}
	_, err := fmt.Fprintf(k.ctl, "server %d %d\n", pid, ticks)
	return err
}

// lost says, before done, whether the keeper already ended on its own (killed alone, say): from
// then on qualrun's death would have left what (the server, the command) running. "" when it is
// still on guard.
func (k *keeper) lost(what string) string {
	if k == nil {
		return ""
	}
	select {
	case <-k.exited:
		return fmt.Sprintf("keeper: exited during the run (pid %d, %s): from then on qualrun's death would have left %s running", k.pid, k.died, what)
	default:
		return ""
	}
}

// done releases the keeper (the server is gone, qualrun checked it) and waits for it to exit.
func (k *keeper) done() {
	if k == nil {
		return
	}
	_, _ = k.ctl.Write([]byte("done\n"))
	k.ctl.Close()
	close(k.release)
	<-k.exited
}

// markEnv adds the run markers to the server's environment and its record entries (sorted).
func markEnv(env []string, entries []contract.EnvEntry, runID, owner string) ([]string, []contract.EnvEntry) {
	set := map[string]string{MarkerRunID: runID, MarkerOwner: owner}
	outEnv := make([]string, 0, len(env)+2)
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ours := set[k]; !ours {
			outEnv = append(outEnv, kv)
		}
	}
	outEntries := make([]contract.EnvEntry, 0, len(entries)+2)
	for _, e := range entries {
		if _, ours := set[e.Name]; !ours {
			outEntries = append(outEntries, e)
		}
	}
	for _, k := range []string{MarkerOwner, MarkerRunID} {
		v := set[k]
		outEnv = append(outEnv, k+"="+v)
		outEntries = append(outEntries, contract.EnvEntry{Name: k, Value: &v, Digest: evidence.DigestOf([]byte(v))})
	}
	sortEntries(outEntries)
	return outEnv, outEntries
}

func sortEntries(e []contract.EnvEntry) {
	for i := 1; i < len(e); i++ {
		for j := i; j > 0 && e[j].Name < e[j-1].Name; j-- {
			e[j], e[j-1] = e[j-1], e[j]
		}
	}
}

// newRunID makes a run id for a launch that was given none.
func newRunID() string {
	return fmt.Sprintf("serve-%s-%d", time.Now().UTC().Format("20060102t150405z"), os.Getpid())
}
