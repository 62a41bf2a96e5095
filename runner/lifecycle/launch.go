package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/procfs"
	"github.com/qualkit/qualkit/runner/redact"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"golang.org/x/sys/unix"
)

// Errors a launch can end with before any process exists; a *Server is never returned with them.
var (
	// ErrPortTaken: something already listens on the recipe's port.
	ErrPortTaken = errors.New("port already has a listener")
	// ErrRecipe: the recipe cannot be launched as written (working directory, program, address).
	ErrRecipe = errors.New("launch recipe cannot be launched")
	// ErrIsolation: the recipe requires isolation this host cannot provide.
	ErrIsolation = errors.New("required isolation unavailable")
	// ErrShellEval: argv[0] resolves to a shell that the argv makes evaluate a command string.
	ErrShellEval = errors.New("shell evaluation refused")
	// ErrIdentityChanged: the process behind the pid is no longer the one launched (pid reuse guard).
	ErrIdentityChanged = errors.New("owned process identity changed")
)

// Limits of the lifecycle.
const (
	// MaxModelsBody bounds a /v1/models response.
	MaxModelsBody = 1 << 20
	// LogTailBytes is how much of the server log an early-exit error quotes.
	LogTailBytes = 2048
	// EscapeSettle is how long escaped descendants get to exit after the group is gone.
	EscapeSettle = time.Second
	// KillWait bounds each wait after SIGKILL.
	KillWait = 10 * time.Second
)

// Options configure a launch.
type Options struct {
	// RecipeDir is the directory relative working directories resolve from (the recipe file's).
	RecipeDir string
	// RecipeDigest binds the recipe file in the record.
	RecipeDigest string
	// LogPath is the server log; it must not exist and is created exclusively.
	LogPath string
	// Epoch is the monotonic origin of every *_ns offset in the record (defaults to launch time).
	Epoch time.Time
	// LookupEnv reads qualrun's environment for environment_passthrough (defaults to os.LookupEnv).
	LookupEnv func(string) (string, bool)
	// Logger receives debug events; nil discards them.
	Logger *slog.Logger
	// RunID names the run in the server's environment markers (MarkerRunID) and in the keeper,
	// so that a server left behind can be named; "" makes one up.
	RunID string
	// Keeper starts a keeper (see KeeperMain) that stops the server if this process dies. The
	// binary must hand a KeeperArg process to KeeperMain first thing; KeeperArgv0 is its argv[0]
	// (default os.Args[0]; a multi-call binary, such as a testscript command, dispatches on it).
	Keeper      bool
	KeeperArgv0 string
	// Redactor scrubs secret values from the server's output as it is captured into the log
	// (scrub.go); nil: the recipe's Secrets.
	Redactor *redact.Redactor
}

// Server is one owned server process group. Methods are safe for one goroutine at a time, except
// Exited, which any goroutine may watch.
type Server struct {
	tree
	recipe  *contract.LaunchRecipeDoc
	opts    Options
	host    string
	port    int
	cmd     *exec.Cmd
	waitErr error
	state   *os.ProcessState
	log     *os.File
	scrub   *logScrubber // nil when the output goes straight to the log

	record      contract.LifecycleRecordDoc
	unsupported []string
	shutdown    sync.Once
	keeper      *keeper
}

// tree tracks one process and everything descended from it: its process group, its cgroup (when
// there is one), its descendants, and orphans reparented to this runner (a child subreaper).
type tree struct {
	fs     procfs.FS
	self   int
	id     procInfo // bound identity of the leader
	cg     *cgroup
	exited chan struct{}
	// notOurs is a child of this runner beside the server that is never part of it (the keeper).
	notOurs int
}

var subreaperOnce sync.Once
var subreaperErr error

// becomeSubreaper makes this process the reaper of orphaned descendants (PR_SET_CHILD_SUBREAPER),
// so a server's grandchild that double-forks or calls setsid is reparented here and stays visible.
func becomeSubreaper() error {
	subreaperOnce.Do(func() { subreaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
	return subreaperErr
}

// loopbackAddr parses the recipe's base URL into a loopback host and port.
func loopbackAddr(base string) (string, int, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", 0, fmt.Errorf("%w: base_url %q: %v", ErrRecipe, base, err)
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); (ip == nil || !ip.IsLoopback()) && host != "localhost" {
		return "", 0, fmt.Errorf("%w: base_url %q is not a loopback address", ErrRecipe, base)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("%w: base_url %q has no port in 1..65535", ErrRecipe, base)
	}
	return host, port, nil
}

// createLog creates the server log exclusively, refusing symlinks in the final component.
func createLog(path string) (*os.File, error) {
	if path == "" {
		return nil, fmt.Errorf("%w: no log path", ErrRecipe)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create server log: %w", err)
	}
	return f, nil
}

// environment builds the closed environment of the server and its record entries.
func environment(r *contract.LaunchRecipeDoc, lookup func(string) (string, bool)) ([]string, []contract.EnvEntry) {
	vals := map[string]string{}
	for k, v := range r.Environment {
		vals[k] = v
	}
	for _, k := range r.EnvironmentPassthrough {
		if v, ok := lookup(k); ok {
			vals[k] = v
		}
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	env := make([]string, 0, len(names))
	entries := make([]contract.EnvEntry, 0, len(names))
	for _, k := range names {
		v := vals[k]
		env = append(env, k+"="+v)
		e := contract.EnvEntry{Name: k, Digest: evidence.DigestOf([]byte(v))}
		if r.RedactsEnv(k) {
			e.Redacted = true
		} else {
			v := v
			e.Value = &v
		}
		entries = append(entries, e)
	}
	return env, entries
}

// resolveProgram finds the file argv[0] names: relative to the working directory when it has a
// slash, else on the server's PATH (or qualrun's when the recipe passes none through).
func resolveProgram(argv0, workDir string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		p := argv0
		if !filepath.IsAbs(p) {
			p = filepath.Join(workDir, p)
		}
		return p, nil
	}
	path := os.Getenv("PATH")
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, argv0)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: program %q not found on PATH", ErrRecipe, argv0)
}

// Program resolves the file a recipe's argv[0] names (as Launch will run it) and its working
// directory, without starting anything, so the caller can bind the binary before launch.
func Program(r *contract.LaunchRecipeDoc, recipeDir string, lookupEnv func(string) (string, bool)) (prog, workDir string, err error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	workDir = r.WorkingDirectory
	if !filepath.IsAbs(workDir) {
		workDir = filepath.Join(recipeDir, workDir)
	}
	if st, err := os.Stat(workDir); err != nil || !st.IsDir() {
		return "", "", fmt.Errorf("%w: working_directory %s is not a directory", ErrRecipe, workDir)
	}
	env, _ := environment(r, lookupEnv)
	prog, err = resolveProgram(r.Command[0], workDir, env)
	if err == nil {
		err = resolvedShellEval(prog, r.Command)
	}
	return prog, workDir, err
}

// Launch checks the port, then starts the recipe's server in a new process group and binds its
// identity. Failures before a process exists return an error and a nil *Server (nothing was
// launched; ErrPortTaken is among them). After that, Launch returns the *Server even with an
// error, and the caller must call Shutdown.
func Launch(ctx context.Context, r *contract.LaunchRecipeDoc, opts Options) (*Server, error) {
	if opts.LookupEnv == nil {
		opts.LookupEnv = os.LookupEnv
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	fs, err := newFS()
	if err != nil {
		return nil, err
	}
	host, port, err := loopbackAddr(r.BaseURL)
	if err != nil {
		return nil, err
	}
	if _, err := BearerToken(r, opts.LookupEnv); err != nil {
		return nil, err
	}
	if opts.Redactor == nil {
		opts.Redactor = redact.New(Secrets(r, opts.LookupEnv)...)
	}
	s := &Server{tree: tree{fs: fs, exited: make(chan struct{}), self: os.Getpid()}, recipe: r, opts: opts, host: host, port: port}
	s.record = contract.LifecycleRecordDoc{
		Schema:      contract.LifecycleRecordSchema,
		Recipe:      contract.RecipeRef{ID: r.ID, Digest: opts.RecipeDigest},
		Port:        contract.PortCheck{Host: host, Port: int64(port)},
		Unsupported: []string{},
		Failures:    []string{},
		Residue:     contract.Residue{Processes: []contract.ResidueProcess{}, Listeners: []contract.ResidueListener{}},
	}
	taken, err := listeners(fs, port)
	if err != nil {
		return nil, err
	}
	if len(taken) > 0 {
		return nil, fmt.Errorf("%w: port %d (socket inodes %v); stop whatever serves there first", ErrPortTaken, port, taken)
	}
	s.record.Port.FreeBeforeLaunch = true

	prog, workDir, err := Program(r, opts.RecipeDir, opts.LookupEnv)
	if err != nil {
		return nil, err
	}
	env, entries := environment(r, opts.LookupEnv)
	if opts.RunID == "" {
		opts.RunID = newRunID()
		s.opts.RunID = opts.RunID
	}
	owner, ownerPID, ownerTicks := ownerMarker(fs)
	env, entries = markEnv(env, entries, opts.RunID, owner)
	progDigest, _, err := evidence.DigestFile(prog)
	if err != nil {
		return nil, fmt.Errorf("%w: program %s: %v", ErrRecipe, prog, err)
	}

	if err := becomeSubreaper(); err != nil {
		s.unsupported = append(s.unsupported, "child subreaper: "+err.Error())
	}
	// The keeper starts before the cgroup exists, told its planned name: qualrun killed at any
	// moment after the cgroup is created leaves a keeper that removes it (the keeper removes a
	// cgroup that never came to be as a no-op).
	accounting := r.Isolation.CgroupAccounting != contract.IsolationCgroupAccountingOff
	var cgDir string
	var cgErr error
	if accounting {
		cgDir, cgErr = planCgroup(opts.RunID)
	}
	if opts.Keeper {
		cfg := keeperConfig{RunID: opts.RunID, OwnerPID: ownerPID, OwnerTicks: ownerTicks,
			ShutdownMs: int64(r.ShutdownTimeoutSeconds * 1000), Cgroup: cgDir}
		k, err := startKeeper(opts.KeeperArgv0, cfg)
		if err != nil {
			s.unsupported = append(s.unsupported, "keeper: "+err.Error()+" (the server may outlive qualrun if qualrun is killed)")
		}
		s.keeper = k
		if k != nil {
			s.notOurs = k.pid
		}
		launchStep("keeper")
	}
	if accounting {
		limit := int64(0)
		if r.Isolation.PIDLimit != nil {
			limit = *r.Isolation.PIDLimit
		}
		var cg *cgroup
		var notes []string
		if cgErr == nil {
			cg, notes, cgErr = makeCgroup(cgDir, limit)
		}
		switch {
		case cgErr != nil && r.Isolation.CgroupAccounting == contract.IsolationCgroupAccountingRequired:
			s.keeper.done()
			return nil, fmt.Errorf("%w: cgroup v2 accounting: %v", ErrIsolation, cgErr)
		case cgErr != nil:
			s.unsupported = append(s.unsupported, "cgroup v2 accounting: "+cgErr.Error())
			if r.Isolation.PIDLimit != nil {
				s.unsupported = append(s.unsupported, "pid_limit: needs a cgroup")
			}
		default:
			s.cg = cg
			s.unsupported = append(s.unsupported, notes...)
		}
	} else if r.Isolation.PIDLimit != nil {
		s.unsupported = append(s.unsupported, "pid_limit: cgroup_accounting is off")
	}
	launchStep("cgroup")
	if err := os.MkdirAll(filepath.Dir(opts.LogPath), 0o755); err != nil {
		s.keeper.done()
		s.cg.remove()
		return nil, fmt.Errorf("create server log directory: %w", err)
	}
	logf, err := createLog(opts.LogPath)
	if err != nil {
		s.keeper.done()
		s.cg.remove()
		return nil, err
	}
	s.log = logf
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		logf.Close()
		s.keeper.done()
		s.cg.remove()
		return nil, err
	}
	defer devnull.Close()
	sink, err := s.logSink(logf)
	if err != nil {
		logf.Close()
		s.keeper.done()
		s.cg.remove()
		return nil, err
	}

	cmd := &exec.Cmd{Path: prog, Args: r.Command, Dir: workDir, Env: env, Stdin: devnull, Stdout: sink, Stderr: sink}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if s.cg != nil {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = int(s.cg.fd.Fd())
	}
	if opts.Epoch.IsZero() {
		opts.Epoch = time.Now()
		s.opts.Epoch = opts.Epoch
	}
	startedAt := time.Now()
	if err := cmd.Start(); err != nil && s.cg != nil {
		// CLONE_INTO_CGROUP can be refused (old kernel, delegation): run without the cgroup and say so.
		s.unsupported = append(s.unsupported, "cgroup v2 placement: "+err.Error())
		s.cg.remove()
		s.cg = nil
		cmd = &exec.Cmd{Path: prog, Args: r.Command, Dir: workDir, Env: env, Stdin: devnull, Stdout: sink, Stderr: sink, SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
		err = cmd.Start()
		if err != nil {
			s.closeSink(sink)
			s.drainLog(LogDrain)
			logf.Close()
			s.keeper.done()
			return nil, fmt.Errorf("%w: start %s: %v", ErrRecipe, prog, err)
		}
	} else if err != nil {
		s.closeSink(sink)
		s.drainLog(LogDrain)
		logf.Close()
		s.keeper.done()
		s.cg.remove()
		return nil, fmt.Errorf("%w: start %s: %v", ErrRecipe, prog, err)
	}
	s.closeSink(sink)
	s.cmd = cmd
	launchStep("started")

	launch := &contract.Launch{
		StartedAt:        startedAt.UTC().Format(time.RFC3339Nano),
		TStartNs:         s.offset(startedAt),
		ArgvDigest:       evidence.DigestOf([]byte(strings.Join(r.Command, "\x00"))),
		Executable:       contract.Executable{Path: prog, Digest: progDigest},
		WorkingDirectory: workDir,
		Environment:      entries,
		PID:              int64(cmd.Process.Pid),
		PGID:             int64(cmd.Process.Pid),
	}
	if s.cg != nil {
		dir := s.cg.dir
		launch.Cgroup = &dir
	}
	s.record.Launch = launch
	// The identity is bound before the leader is waited for: a leader that exits at once stays a
	// zombie until then, so its stat and cmdline (empty) are still there to read, and the launch
	// record is whole (it was left without a boot id and a cmdline digest when the waiter reaped
	// the leader first: TestExitBeforeReadyFailsFast, once in CI).
	bindErr := s.bind()
	go func() {
		s.waitErr = cmd.Wait()
		s.state = cmd.ProcessState
		close(s.exited)
	}()
	if bindErr != nil {
		return s, bindErr
	}
	if err := s.keeper.announce(s.id.PID, s.id.StartTicks); err != nil {
		s.unsupported = append(s.unsupported, "keeper: "+err.Error())
	}
	return s, nil
}

// launchStep marks a moment of Launch, or of a group's start (startGroup), by name ("keeper": the
// keeper started; "cgroup": the cgroup made; "started": the server or the group's leader started,
// its identity not yet told to the keeper). It does nothing; the keeper tests replace it to kill
// the launching process at each moment.
var launchStep = func(string) {}

// offset converts a time to nanoseconds since the epoch on the monotonic clock.
func (s *Server) offset(t time.Time) int64 {
	d := t.Sub(s.opts.Epoch)
	if d < 0 {
		return 0
	}
	return int64(d)
}

// bind records the identity of the leader: stat (pgid, start ticks), boot id, cmdline digest.
func (s *Server) bind() error {
	pid := s.cmd.Process.Pid
	st, err := statOf(s.fs, pid)
	if err != nil {
		return fmt.Errorf("bind identity of pid %d: %w", pid, err)
	}
	if st.PGID != pid {
		return fmt.Errorf("bind identity of pid %d: process group %d is not its own", pid, st.PGID)
	}
	s.id = st
	boot, err := bootID()
	if err != nil {
		return err
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return fmt.Errorf("bind identity of pid %d: %w", pid, err)
	}
	s.record.Launch.StartTimeTicks = int64(st.StartTicks)
	s.record.Launch.BootID = boot
	s.record.Launch.CmdlineDigest = evidence.DigestOf(cmdline)
	return nil
}

// checkIdentity re-reads the leader's stat and refuses if it is no longer the bound process.
// A leader that has exited (and been reaped) is not an identity change.
func (s *tree) checkIdentity() error {
	if !s.bound() {
		return ErrUnbound
	}
	select {
	case <-s.exited:
		return nil
	default:
	}
	st, err := statOf(s.fs, s.id.PID)
	if err != nil {
		return nil // gone between the check and now
	}
	if st.StartTicks != s.id.StartTicks || st.PGID != s.id.PGID {
		return fmt.Errorf("%w: pid %d now has start %d and group %d, bound %d and %d", ErrIdentityChanged, st.PID, st.StartTicks, st.PGID, s.id.StartTicks, s.id.PGID)
	}
	return nil
}

// ErrUnbound: the leader's identity was never bound (it could not be read after the start), so
// nothing is signalled by process group: a group id of 0 would signal qualrun's own group, and
// -1 every process it may signal (stop 32's CI was ended by such a SIGTERM).
var ErrUnbound = errors.New("the server's identity was never bound")

// bound reports whether the leader's identity was bound: a pid and a group of its own, above 1.
func (s *tree) bound() bool { return s.id.PID > 1 && s.id.PGID > 1 }

// Exited is closed when the leader process has exited.
func (s *tree) Exited() <-chan struct{} { return s.exited }

// PID is the leader's process id (also the process group id).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Port is the server's TCP port.
func (s *Server) Port() int { return s.port }

// BaseURL is the recipe's base URL.
func (s *Server) BaseURL() string { return strings.TrimRight(s.recipe.BaseURL, "/") }

// exitStatus describes how the leader ended, for messages.
func (s *Server) exitStatus() string {
	if s.state == nil {
		return "still running"
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by " + unix.SignalName(ws.Signal())
	}
	return fmt.Sprintf("exit code %d", s.state.ExitCode())
}

// ownedTree returns every live process that belongs to the server: in its cgroup, in its process
// group, descended from its leader, or an orphan reparented to this runner (subreaper) that is not
// the leader itself.
func (s *tree) ownedTree() (procTable, error) {
	all, err := scanProcs(s.fs)
	if err != nil {
		return nil, err
	}
	owned := procTable{}
	inCgroup := map[int]bool{}
	if s.cg != nil {
		for _, p := range s.cg.pids() {
			inCgroup[p] = true
		}
	}
	leader := s.id.PID
	if !s.bound() {
		// Without a bound leader only the cgroup says what is the server's: group 0 and
		// "descends from pid 0" would take in kernel threads and this runner's other children.
		for pid, p := range all {
			if inCgroup[pid] && pid != s.self && pid != s.notOurs {
				owned[pid] = p
			}
		}
		return owned, nil
	}
	var descends func(p procInfo, depth int) bool
	descends = func(p procInfo, depth int) bool {
		if p.PID == leader {
			return true
		}
		if depth > 64 || p.PPID <= 1 {
			return false
		}
		if p.PPID == s.self {
			// Reparented to us: ours unless it is the runner's own tool (none run beside a server).
			return p.StartTicks >= s.id.StartTicks
		}
		parent, ok := all[p.PPID]
		return ok && descends(parent, depth+1)
	}
	for pid, p := range all {
		if pid == s.self || (s.notOurs > 0 && pid == s.notOurs) {
			continue
		}
		if inCgroup[pid] || p.PGID == s.id.PGID || descends(p, 0) {
			owned[pid] = p
		}
	}
	return owned, nil
}

func (s *tree) liveOwned() (procTable, error) {
	t, err := s.ownedTree()
	if err != nil {
		return nil, err
	}
	for pid, p := range t {
		if p.zombie() {
			delete(t, pid)
		}
	}
	return t, nil
}
