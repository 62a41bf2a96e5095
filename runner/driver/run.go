package driver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
	"golang.org/x/sys/unix"
)

// Limits of one driver run.
const (
	// MaxScriptBytes bounds the worker script (it is held in memory and in a memfd).
	MaxScriptBytes = 16 << 20
	// MaxRequestBytes bounds the driver request (qualkit.driver-request.v1).
	MaxRequestBytes = 256 << 10
	// MaxOutputBytes bounds the worker output (qualkit.driver-worker-output.v1).
	MaxOutputBytes = 16 << 20
	// MaxLogBytes bounds the worker log (stdout and stderr together); the rest is drained.
	MaxLogBytes = 16 << 20
	// DefaultGrace is the time between SIGTERM and SIGKILL when the deadline passes.
	DefaultGrace = 5 * time.Second
	// ProbeTimeout bounds each network probe of the guard.
	ProbeTimeout = 2 * time.Second
)

// Mechanism names the containment this package implements, as results record it.
const Mechanism = "linux-userns-netns-v1"

// GatePayload is the start gate's exact content.
const GatePayload = "go\n"

// StartGatePolicy is what the result's containment.start_gate records: the gate is created only
// after the isolation probe passed and every input was hashed.
const StartGatePolicy = "created_after_isolation_and_hashing"

// Mechanisms a host may lack. Options.Deny names them to simulate their absence.
const (
	MechUserNamespaces    = "user_namespaces"
	MechNetworkNamespaces = "network_namespaces"
	MechHashBoundExec     = "hash_bound_exec"
)

// Errors of Run.
var (
	// ErrRefused: an input does not match its pinned digest, or cannot be read or used. Nothing
	// was started and no start gate was created.
	ErrRefused = errors.New("driver refused")
	// ErrUnsupported: the host lacks a containment mechanism (see UnsupportedError).
	ErrUnsupported = errors.New("containment mechanism unsupported")
)

// UnsupportedError names a missing mechanism. Nothing was started.
type UnsupportedError struct {
	// Mechanism is one of the Mech* names.
	Mechanism string
	// Message is the line receipts list under unsupported, e.g.
	// "network isolation: user namespaces unavailable (max_user_namespaces is 0)".
	Message string
}

func (e *UnsupportedError) Error() string        { return e.Message }
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// Input is a file the worker reads, bound by digest.
type Input struct {
	// Path is what evidence records: repository-relative, or absolute outside the repository.
	Path string
	// Abs is the absolute path the worker receives.
	Abs string
	// Digest is the pinned digest; a mismatch is refused.
	Digest string
}

// Job is one worker run, with every placeholder already resolved.
type Job struct {
	// ID names the run (the case or spec id).
	ID string
	// Contract is the result contract the worker's output is for (QUALKIT_DRIVER_CONTRACT).
	Contract string
	// Executable is the absolute path of the worker executable (symlinks are resolved and the
	// resolved file is what runs and is recorded).
	Executable string
	// ExecutableDigest pins the executable when not empty.
	ExecutableDigest string
	// Script is the worker script; its Digest is the required pin.
	Script Input
	// Args is the argv tail after the script.
	Args []string
	// Request is the driver request file; Model the model file or directory (ModelDigest).
	Request, Model Input
	// Environment holds the declared extra variables.
	Environment map[string]string
	// Timeout bounds the run from the guard's start, on the monotonic clock.
	Timeout time.Duration
}

// Options configure Run.
type Options struct {
	// LogPath receives the worker's stdout and stderr (at most MaxLogBytes); created exclusively
	// (with its directory) once every input has been hashed and the mechanisms checked.
	LogPath string
	// WorkspaceDir, when set, is the worker's workspace; it must not exist. By default a new
	// directory under os.TempDir() is used. The workspace is removed after the run unless
	// KeepWorkspace is set.
	WorkspaceDir  string
	KeepWorkspace bool
	// Grace is the time between SIGTERM and SIGKILL after the deadline (default DefaultGrace).
	Grace time.Duration
	// Deny lists mechanisms (Mech*) to treat as missing. It can only take containment away,
	// never add or weaken it: a test hook to show what a host without them gets.
	Deny []string
	// GuardArgv0 is argv[0] of the re-executed guard (default os.Args[0]); a multi-call binary
	// (a testscript command) dispatches on it.
	GuardArgv0 string
	// Logger receives debug events; nil discards them.
	Logger *slog.Logger
}

// Bound is a file as it was bound: path and digest.
type Bound struct {
	Path, Digest string
}

// Outcome is what one run observed. Failures empty means: isolation proven, the gate opened,
// the worker ran the hashed bytes, exited 0 within the deadline, left nothing behind and wrote
// an output of at most MaxOutputBytes (its content is checked by Evaluate).
type Outcome struct {
	// Executable is the resolved executable path and its digest; Script the script's.
	Executable, Script Bound
	// Request is the request file's raw bytes (hashed, at most MaxRequestBytes), RequestDoc the
	// request it holds (valid against qualkit.driver-request.v1).
	Request    []byte
	RequestDoc *contract.DriverRequestDoc
	// Probe is what the guard observed before the gate opened (nil if it never reported).
	Probe *Probe
	// GateCreated is true once the start gate exists; HashBoundExec once the worker was exec'd
	// from the hashed descriptor.
	GateCreated, HashBoundExec bool
	// EnvironmentNames are the names of the worker's variables, sorted.
	EnvironmentNames []string
	// Elapsed is from the guard's start to the worker's exit.
	Elapsed time.Duration
	// ExitCode is the worker's exit code, nil when a signal ended it (Signal names it).
	ExitCode *int
	Signal   string
	// TimedOut: the deadline passed; Forced: SIGKILL was needed; Interrupted: ctx ended first.
	TimedOut, Forced, Interrupted bool
	// Residue describes processes left after the worker exited (they were killed).
	Residue []string
	// Output is the worker output's raw bytes (nil when there is none).
	Output []byte
	// Failures say why the run cannot pass, in the order found. When the worker wrote an output,
	// each of them is also a reason of the result's recomputed verdict (schemas.DriverStatus).
	Failures []string
	// Changed names inputs (request, model) whose bytes changed during the run: the caller fails
	// the run (a campaign's end check does the same for every bound artifact).
	Changed []string
	// Notes are observations that do not decide the verdict (a truncated log).
	Notes []string
	// Tracking lists process tracking the host could not give (cgroup v2, subreaper): informational.
	Tracking []string
	// LogTruncated: the worker wrote more than MaxLogBytes.
	LogTruncated bool
}

func (o *Outcome) fail(format string, a ...any) {
	o.Failures = append(o.Failures, fmt.Sprintf(format, a...))
}

// Run executes job as described in the package documentation. It returns an error wrapping
// ErrRefused (inputs) or an *UnsupportedError (a missing mechanism) when nothing was started;
// otherwise an Outcome whose Failures say what went wrong. A cancelled ctx terminates the worker
// like the deadline does and sets Interrupted.
func Run(ctx context.Context, job Job, opts Options) (*Outcome, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.GuardArgv0 == "" {
		opts.GuardArgv0 = os.Args[0]
	}
	if job.Timeout <= 0 {
		return nil, fmt.Errorf("%w: %s: no timeout", ErrRefused, job.ID)
	}
	if opts.LogPath == "" {
		return nil, fmt.Errorf("%w: %s: no log path", ErrRefused, job.ID)
	}
	out := &Outcome{}

	// 1. Every input hashed and compared before anything starts.
	exe, err := openExecutable(job.Executable)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	defer exe.f.Close()
	out.Executable = Bound{Path: exe.path, Digest: exe.digest}
	if job.ExecutableDigest != "" && job.ExecutableDigest != exe.digest {
		return nil, fmt.Errorf("%w: executable %s has digest %s, but %s is pinned; nothing was started and no start gate was created", ErrRefused, exe.path, exe.digest, job.ExecutableDigest)
	}
	script, err := readBounded(job.Script.Abs, MaxScriptBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: script: %v", ErrRefused, err)
	}
	out.Script = Bound{Path: job.Script.Path, Digest: evidence.DigestOf(script)}
	if out.Script.Digest != job.Script.Digest {
		return nil, fmt.Errorf("%w: script %s has digest %s, but %s is pinned (tampered or not updated); nothing was started and no start gate was created", ErrRefused, job.Script.Path, out.Script.Digest, job.Script.Digest)
	}
	if out.Request, err = readBounded(job.Request.Abs, MaxRequestBytes); err != nil {
		return nil, fmt.Errorf("%w: request: %v", ErrRefused, err)
	}
	if d := evidence.DigestOf(out.Request); d != job.Request.Digest {
		return nil, fmt.Errorf("%w: request %s has digest %s, but %s is pinned; nothing was started and no start gate was created", ErrRefused, job.Request.Path, d, job.Request.Digest)
	}
	if err := validDocument(out.Request, "request "+job.Request.Path, contract.DriverRequest); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	out.RequestDoc = &contract.DriverRequestDoc{}
	if err := jsonstrict.DecodeInto(out.Request, out.RequestDoc); err != nil {
		return nil, fmt.Errorf("%w: request %s: %v", ErrRefused, job.Request.Path, err)
	}
	if !contract.IsDriverResult(job.Contract) {
		return nil, fmt.Errorf("%w: %q is not a driver result contract", ErrRefused, job.Contract)
	}
	if d, err := ModelDigest(ctx, job.Model.Abs); err != nil {
		return nil, fmt.Errorf("%w: model: %v", ErrRefused, err)
	} else if d != job.Model.Digest {
		return nil, fmt.Errorf("%w: model %s has digest %s, but %s is pinned; nothing was started and no start gate was created", ErrRefused, job.Model.Path, d, job.Model.Digest)
	}

	// 2. Mechanisms.
	if err := checkMechanisms(opts.Deny); err != nil {
		return nil, err
	}
	memfd, err := sealedMemfd("qualkit-driver-script", script)
	if err != nil {
		return nil, &UnsupportedError{Mechanism: MechHashBoundExec, Message: "hash-bound exec: " + err.Error()}
	}
	defer memfd.Close()

	// 3. Workspace, environment, log.
	ws, err := newWorkspace(opts.WorkspaceDir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	if !opts.KeepWorkspace {
		defer os.RemoveAll(ws.dir)
	}
	env, names, err := ClosedEnvironment(ws, job)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	out.EnvironmentNames = names
	if err := os.MkdirAll(filepath.Dir(opts.LogPath), 0o755); err != nil {
		return nil, fmt.Errorf("%w: create the worker log's directory: %v", ErrRefused, err)
	}
	logf, err := os.OpenFile(opts.LogPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: create worker log: %v", ErrRefused, err)
	}
	defer logf.Close()

	canary, err := newCanary()
	if err != nil {
		return nil, fmt.Errorf("open the host loopback listener: %w", err)
	}
	defer canary.close()

	run := &running{job: job, opts: opts, out: out, ws: ws, canary: canary}
	if err := run.start(ctx, exe, memfd, env, logf); err != nil {
		return nil, err
	}
	run.supervise(ctx)
	return out, nil
}

// isolationAttr asks for a new user namespace (this uid and gid mapped to root, setgroups
// denied) and a new network namespace; the guard dies with its parent thread.
func isolationAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Cloneflags:                 unix.CLONE_NEWUSER | unix.CLONE_NEWNET,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
		GidMappingsEnableSetgroups: false,
		Pdeathsig:                  unix.SIGKILL,
	}
}

// CheckHost reports whether this host can contain a worker: every mechanism is present and a
// process can be started in a new user and network namespace (it starts /bin/true, or
// /usr/bin/true, that way). The error is an *UnsupportedError naming what is missing.
func CheckHost() error {
	if err := checkMechanisms(nil); err != nil {
		return err
	}
	probe := ""
	for _, p := range []string{"/bin/true", "/usr/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			probe = p
			break
		}
	}
	if probe == "" {
		return &UnsupportedError{Mechanism: MechUserNamespaces, Message: "network isolation: cannot check (no /bin/true to start in a namespace)"}
	}
	cmd := exec.Command(probe)
	cmd.SysProcAttr = isolationAttr()
	if err := cmd.Run(); err != nil {
		return &UnsupportedError{Mechanism: MechUserNamespaces, Message: "network isolation: cannot create a user and network namespace (" + err.Error() + ")"}
	}
	fd, err := unix.MemfdCreate("qualkit-check", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return &UnsupportedError{Mechanism: MechHashBoundExec, Message: "hash-bound exec: memfd_create: " + err.Error()}
	}
	unix.Close(fd)
	return nil
}

// checkMechanisms refuses early when a mechanism is missing or denied.
func checkMechanisms(deny []string) error {
	for _, d := range deny {
		switch d {
		case MechUserNamespaces:
			return &UnsupportedError{Mechanism: d, Message: "network isolation: user namespaces unavailable (denied by the test hook)"}
		case MechNetworkNamespaces:
			return &UnsupportedError{Mechanism: d, Message: "network isolation: network namespaces unavailable (denied by the test hook)"}
		case MechHashBoundExec:
			return &UnsupportedError{Mechanism: d, Message: "hash-bound exec: /proc/self/fd exec unavailable (denied by the test hook)"}
		}
	}
	if b, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(b)) == "0" {
		return &UnsupportedError{Mechanism: MechUserNamespaces, Message: "network isolation: user namespaces unavailable (/proc/sys/user/max_user_namespaces is 0)"}
	}
	if os.Getuid() != 0 {
		if b, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(b)) == "0" {
			return &UnsupportedError{Mechanism: MechUserNamespaces, Message: "network isolation: user namespaces unavailable to unprivileged users (/proc/sys/kernel/unprivileged_userns_clone is 0)"}
		}
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return &UnsupportedError{Mechanism: MechNetworkNamespaces, Message: "network isolation: network namespaces unavailable (" + err.Error() + ")"}
	}
	if _, err := os.Stat("/proc/self/fd/0"); err != nil {
		return &UnsupportedError{Mechanism: MechHashBoundExec, Message: "hash-bound exec: /proc/self/fd unavailable (" + err.Error() + ")"}
	}
	return nil
}

// workspace is the worker's private directory: the gate, the output, HOME and TMPDIR.
type workspace struct {
	dir, gate, output, home, tmp string
}

func newWorkspace(dir string) (*workspace, error) {
	var err error
	if dir == "" {
		dir, err = os.MkdirTemp("", "qualkit-driver-")
	} else {
		err = os.Mkdir(dir, 0o700)
	}
	if err != nil {
		return nil, fmt.Errorf("create workspace: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	ws := &workspace{dir: dir, gate: filepath.Join(dir, "start-gate"), output: filepath.Join(dir, "worker-output.json"),
		home: filepath.Join(dir, "home"), tmp: filepath.Join(dir, "tmp")}
	for _, d := range []string{ws.home, ws.tmp} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return nil, err
		}
	}
	return ws, nil
}

// ClosedEnvironment is the worker's whole environment: PATH=/usr/bin:/bin, LANG=C.UTF-8, HOME
// and TMPDIR inside the workspace, the offline flags (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE,
// HF_DATASETS_OFFLINE), deterministic Python (PYTHONDONTWRITEBYTECODE, PYTHONHASHSEED=0,
// PYTHONNOUSERSITE), the QUALKIT_* protocol variables and the declared environment. Nothing is
// inherited. Declared names may not replace these, nor look secret. It returns KEY=VALUE pairs
// and the sorted names.
func ClosedEnvironment(ws *workspace, job Job) ([]string, []string, error) {
	vals := map[string]string{
		"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "HOME": ws.home, "TMPDIR": ws.tmp,
		"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
		"PYTHONDONTWRITEBYTECODE": "1", "PYTHONHASHSEED": "0", "PYTHONNOUSERSITE": "1",
		"QUALKIT_START_GATE": ws.gate, "QUALKIT_DRIVER_REQUEST": job.Request.Abs, "QUALKIT_DRIVER_MODEL": job.Model.Abs,
		"QUALKIT_DRIVER_OUTPUT": ws.output, "QUALKIT_DRIVER_CONTRACT": job.Contract,
	}
	for k, v := range job.Environment {
		if _, owned := vals[k]; owned || strings.HasPrefix(k, "QUALKIT_") {
			return nil, nil, fmt.Errorf("environment %s is set by the runner and cannot be declared", k)
		}
		if why := rules.DriverEnvironmentRefusal(k); why != "" {
			return nil, nil, fmt.Errorf("environment: %s", why)
		}
		if strings.ContainsRune(k, '=') || strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			return nil, nil, fmt.Errorf("environment %q: bad name or value", k)
		}
		vals[k] = v
	}
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	env := make([]string, 0, len(names))
	for _, k := range names {
		env = append(env, k+"="+vals[k])
	}
	return env, names, nil
}

// canary is a listener on the host's loopback that the worker must never reach. It counts every
// connection accepted during the run.
type canary struct {
	ln       net.Listener
	accepted atomic.Int64
	done     chan struct{}
}

func newCanary() (*canary, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &canary{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			c.accepted.Add(1)
			conn.Close()
		}
	}()
	return c, nil
}

func (c *canary) port() int { return c.ln.Addr().(*net.TCPAddr).Port }

func (c *canary) close() int64 {
	c.ln.Close()
	<-c.done
	return c.accepted.Load()
}

// running is one started guard/worker.
type running struct {
	job      Job
	opts     Options
	out      *Outcome
	ws       *workspace
	canary   *canary
	group    *lifecycle.Group
	report   *os.File
	reportR  *bufio.Reader
	control  *os.File
	logDone  chan struct{}
	logClose func()
	deadline time.Time
}

// start launches the guard in its namespaces. An error means nothing runs.
func (r *running) start(ctx context.Context, exe *hashedExecutable, memfd *os.File, env []string, logf *os.File) error {
	reportR, reportW, err := os.Pipe()
	if err != nil {
		return err
	}
	controlR, controlW, err := os.Pipe()
	if err != nil {
		reportR.Close()
		reportW.Close()
		return err
	}
	logR, logW, err := os.Pipe()
	if err != nil {
		reportR.Close()
		reportW.Close()
		controlR.Close()
		controlW.Close()
		return err
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return err
	}
	defer devnull.Close()
	// argv[0] is the executable as declared (a venv's python finds its venv from it); the bytes
	// that run are the resolved file's, from the hashed descriptor.
	argv := append([]string{filepath.Clean(r.job.Executable), fmt.Sprintf("/proc/self/fd/%d", fdScript)}, r.job.Args...)
	cfg, _ := json.Marshal(guardConfig{CanaryPort: r.canary.port(), Gate: r.ws.gate, ExecutableDigest: r.out.Executable.Digest,
		ScriptDigest: r.out.Script.Digest, Argv: argv, ProbeTimeoutMs: ProbeTimeout.Milliseconds()})
	cmd := &exec.Cmd{
		Path: "/proc/self/exe", Args: []string{r.opts.GuardArgv0, GuardArg, string(cfg)}, Env: env, Dir: r.ws.dir,
		Stdin: devnull, Stdout: logW, Stderr: logW,
		ExtraFiles:  []*os.File{exe.f, memfd, reportW, controlR},
		SysProcAttr: isolationAttr(),
	}
	g, err := lifecycle.StartGroup(cmd)
	reportW.Close()
	controlR.Close()
	logW.Close()
	if err != nil {
		reportR.Close()
		controlW.Close()
		logR.Close()
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EUSERS) || errors.Is(err, unix.EACCES) {
			return &UnsupportedError{Mechanism: MechUserNamespaces, Message: "network isolation: cannot create a user and network namespace (" + err.Error() + ")"}
		}
		return fmt.Errorf("start the driver guard: %w", err)
	}
	r.group = g
	r.deadline = g.Started().Add(r.job.Timeout)
	r.report, r.reportR, r.control = reportR, bufio.NewReaderSize(reportR, 64<<10), controlW
	r.out.Tracking = g.Unsupported()
	r.logDone = make(chan struct{})
	r.logClose = func() { logR.Close() }
	go func() {
		defer close(r.logDone)
		defer logR.Close()
		n, _ := io.Copy(logf, io.LimitReader(logR, MaxLogBytes))
		extra, _ := io.Copy(io.Discard, logR)
		r.out.LogTruncated = n >= MaxLogBytes && extra > 0
	}()
	r.opts.Logger.Debug("driver guard started", "id", r.job.ID, "pid", g.PID())
	return nil
}

// supervise runs the protocol with the guard and waits for the worker within the deadline.
func (r *running) supervise(ctx context.Context) {
	out := r.out
	defer func() {
		r.report.Close()
		if r.control != nil {
			r.control.Close()
		}
	}()
	ok := r.openGate(ctx)
	if !ok {
		r.control.Close() // the guard reads EOF and exits without running anything
		r.control = nil
	}
	timer := time.NewTimer(time.Until(r.deadline))
	defer timer.Stop()
	select {
	case <-r.group.Exited():
	case <-timer.C:
		out.TimedOut = true
	case <-ctx.Done():
		out.Interrupted = true
	}
	if out.TimedOut || out.Interrupted {
		out.Forced = r.group.Terminate(r.opts.Grace)
	}
	<-r.group.Exited()
	out.Elapsed = time.Since(r.group.Started())
	for _, p := range r.group.Residue() {
		where := "in the worker's process group"
		if p.Escaped {
			where = "outside the worker's process group"
		}
		out.Residue = append(out.Residue, fmt.Sprintf("pid %d (%s) %s, still running after the worker exited (killed)", p.PID, p.Comm, where))
	}
	select {
	case <-r.logDone:
	case <-time.After(lifecycle.KillWait):
		out.Notes = append(out.Notes, "worker log: a process outside the worker's tree held the log open; it was closed")
		r.logClose()
		<-r.logDone
	}
	code, sig := r.group.ExitCode()
	if sig != "" {
		out.Signal = sig
	} else {
		out.ExitCode = &code
	}
	if n := r.canary.close(); n > 0 {
		if out.Probe != nil {
			out.Probe.HostLoopbackUnreachable = false
		}
		out.fail("isolation: %d connection(s) reached qualrun's listener on the host's loopback during the run", n)
	}
	if !ok {
		return
	}
	switch {
	case out.Interrupted:
		out.fail("interrupted: qualrun received SIGINT or SIGTERM; the worker was terminated")
	case out.TimedOut && out.Forced:
		out.fail("timeout: the worker ran past %s and ignored SIGTERM for %s; killed (forced)", r.job.Timeout, r.opts.Grace)
	case out.TimedOut:
		out.fail("timeout: the worker ran past %s; terminated with SIGTERM", r.job.Timeout)
	case sig != "":
		out.fail("the worker was killed by %s", sig)
	case code != 0:
		out.fail("the worker exited with code %d (see the worker log)", code)
	}
	if len(out.Residue) > 0 {
		out.fail("residue: %d process(es) left after the worker exited: %s", len(out.Residue), strings.Join(out.Residue, "; "))
	}
	if out.LogTruncated {
		out.Notes = append(out.Notes, fmt.Sprintf("the worker wrote more than %d bytes of log; the rest was discarded", MaxLogBytes))
	}
	r.readOutput()
	if d, err := ModelDigest(context.Background(), r.job.Model.Abs); err != nil || d != r.job.Model.Digest {
		out.Changed = append(out.Changed, fmt.Sprintf("model %s changed or disappeared during the run", r.job.Model.Path))
	}
	if b, err := readBounded(r.job.Request.Abs, MaxRequestBytes); err != nil || evidence.DigestOf(b) != r.job.Request.Digest {
		out.Changed = append(out.Changed, fmt.Sprintf("request %s changed or disappeared during the run", r.job.Request.Path))
	}
}

// openGate reads the probe, checks it, creates the gate and lets the guard exec the worker.
// It reports whether the worker was started.
func (r *running) openGate(ctx context.Context) bool {
	out := r.out
	_ = r.report.SetReadDeadline(r.deadline)
	type read struct {
		p   *Probe
		err error
	}
	ch := make(chan read, 1)
	go func() { p, err := readProbe(r.reportR); ch <- read{p, err} }()
	var got read
	select {
	case got = <-ch:
	case <-ctx.Done():
		out.Interrupted = true
		out.fail("interrupted before the start gate opened")
		return false
	}
	if got.err != nil {
		if errors.Is(got.err, os.ErrDeadlineExceeded) {
			out.fail("isolation probe: no report before the deadline (%s); no start gate was created", r.job.Timeout)
		} else {
			out.fail("isolation probe: the guard ended without a report (%v; see the worker log); no start gate was created", got.err)
		}
		return false
	}
	out.Probe = got.p
	if !got.p.passed() {
		out.fail("isolation not proven, so no start gate was created: %s", strings.Join(got.p.failures(), "; "))
		return false
	}
	if n := r.canary.accepted.Load(); n > 0 {
		out.Probe.HostLoopbackUnreachable = false
		out.fail("isolation not proven, so no start gate was created: the guard reached qualrun's host loopback listener (%d connection(s))", n)
		return false
	}
	if err := createGate(r.ws.gate); err != nil {
		out.fail("start gate: %v", err)
		return false
	}
	out.GateCreated = true
	if _, err := r.control.Write([]byte(GatePayload)); err != nil {
		out.fail("start gate: tell the guard: %v", err)
		return false
	}
	r.control.Close()
	r.control = nil
	// EOF on the report pipe: the exec succeeded (the pipe is close-on-exec). A line: the guard's reason.
	rest, err := io.ReadAll(io.LimitReader(r.reportR, 4096))
	switch {
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		out.fail("the guard did not exec the worker before the deadline")
		return false
	case len(rest) > 0:
		out.fail("the worker was not started: %s", strings.TrimSpace(string(rest)))
		return false
	}
	out.HashBoundExec = true
	return true
}

// createGate creates the start gate exclusively: mode 0600, "go\n", fsynced, directory fsynced.
// An existing gate (stale, or planted) is refused.
func createGate(path string) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("a stale start gate %s exists; refusing to start", path)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil { // whatever the umask
		f.Close()
		return err
	}
	if _, err := f.Write([]byte(GatePayload)); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// readOutput reads the worker output file: a regular file of at most MaxOutputBytes.
func (r *running) readOutput() {
	b, err := readBounded(r.ws.output, MaxOutputBytes)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			r.out.fail("the worker wrote no output (QUALKIT_DRIVER_OUTPUT)")
		} else {
			r.out.fail("worker output: %v", err)
		}
		return
	}
	r.out.Output = b
}
