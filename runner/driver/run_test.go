package driver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/evidence"
)

func TestReferenceWorkerRunsIsolatedBehindTheGate(t *testing.T) {
	requireIsolation(t)
	job := referenceJob(t, "qualkit.next-token-result.v2", "--mode", "next-token")
	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failures) > 0 {
		t.Fatalf("failures %v\nlog:\n%s", out.Failures, logOf(t, o))
	}
	p := out.Probe
	if p == nil || !slices.Equal(p.Interfaces, []string{"lo"}) || !p.OutsideUnreachable || !p.LoopbackBind || !p.HostLoopbackUnreachable {
		t.Fatalf("probe %+v", p)
	}
	if !out.GateCreated || !out.HashBoundExec || out.ExitCode == nil || *out.ExitCode != 0 || out.TimedOut || out.Forced || len(out.Residue) > 0 {
		t.Fatalf("outcome %+v", out)
	}
	if !strings.Contains(string(out.Output), `"qualkit.driver-worker-output.v1"`) {
		t.Fatalf("output %s", out.Output)
	}
	gate := filepath.Join(o.WorkspaceDir, "start-gate")
	st, err := os.Lstat(gate)
	if err != nil || st.Mode().Perm() != 0o600 || !st.Mode().IsRegular() {
		t.Fatalf("gate %v %v", st, err)
	}
	if b, _ := os.ReadFile(gate); string(b) != "go\n" {
		t.Fatalf("gate payload %q", b)
	}
	if out.Executable.Path != mustEval(t, job.Executable) || out.Executable.Digest != fileDigest(t, out.Executable.Path) {
		t.Fatalf("executable %+v", out.Executable)
	}
	if out.Script.Digest != job.Script.Digest {
		t.Fatalf("script %+v", out.Script)
	}
}

func mustEval(t *testing.T, p string) string {
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// listener is a listener on the host's loopback that counts the connections it accepts.
type listener struct {
	ln       net.Listener
	accepted atomic.Int64
}

func hostListener(t *testing.T) *listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := &listener{ln: ln}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			l.accepted.Add(1)
			c.Close()
		}
	}()
	return l
}

func (l *listener) port() string { return strconv.Itoa(l.ln.Addr().(*net.TCPAddr).Port) }

// TestWorkerCannotReachHostLoopback: isolation is real. The same worker that reaches a host
// listener when run directly cannot reach it when the driver runs it.
func TestWorkerCannotReachHostLoopback(t *testing.T) {
	requireIsolation(t)
	l := hostListener(t)
	job := referenceJob(t, "qualkit.next-token-result.v2", "--mode", "next-token", "--probe-connect", l.port())

	// Control: outside the namespace, the probe reaches the listener and the worker says so.
	dir := t.TempDir()
	gate := filepath.Join(dir, "gate")
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	direct := exec.Command(job.Executable, append([]string{job.Script.Abs}, job.Args...)...)
	direct.Env = []string{"QUALKIT_START_GATE=" + gate, "QUALKIT_DRIVER_CONTRACT=" + job.Contract}
	outb, err := direct.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 4 || l.accepted.Load() != 1 {
		t.Fatalf("direct run: %v (accepted %d)\n%s", err, l.accepted.Load(), outb)
	}

	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failures) > 0 || out.ExitCode == nil || *out.ExitCode != 0 {
		t.Fatalf("failures %v exit %v\nlog:\n%s", out.Failures, out.ExitCode, logOf(t, o))
	}
	if n := l.accepted.Load(); n != 1 {
		t.Fatalf("the isolated worker reached the host listener (%d connections)", n)
	}
	if log := logOf(t, o); !strings.Contains(log, "probe: 127.0.0.1:"+l.port()+" unreachable") {
		t.Fatalf("log:\n%s", log)
	}
}

// TestWorkerRefusesToStartWithoutTheGate runs the reference worker directly, before (or
// without) a valid gate: it must refuse with exit 3 and write nothing.
func TestWorkerRefusesToStartWithoutTheGate(t *testing.T) {
	job := referenceJob(t, "qualkit.next-token-result.v2", "--mode", "next-token")
	valid := func(dir string) string {
		p := filepath.Join(dir, "gate")
		if err := os.WriteFile(p, []byte("go\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name string
		gate func(dir string) string
		want string
	}{
		{"unset", func(string) string { return "" }, "QUALKIT_START_GATE is not set"},
		{"not yet created", func(dir string) string { return filepath.Join(dir, "gate") }, "must not start before"},
		{"group readable", func(dir string) string { p := valid(dir); os.Chmod(p, 0o640); return p }, "mode 0640"},
		{"wrong payload", func(dir string) string {
			p := filepath.Join(dir, "gate")
			os.WriteFile(p, []byte("go"), 0o600)
			return p
		}, "payload"},
		{"symlink", func(dir string) string {
			p := filepath.Join(dir, "link")
			os.Symlink(valid(dir), p)
			return p
		}, "not a regular file"},
		{"two links", func(dir string) string {
			p := valid(dir)
			os.Link(p, filepath.Join(dir, "other"))
			return p
		}, "2 links"},
		{"directory", func(dir string) string { return dir }, "not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			gate := c.gate(dir)
			outPath := filepath.Join(dir, "out.json")
			cmd := exec.Command(job.Executable, job.Script.Abs, "--mode", "next-token")
			cmd.Env = []string{"QUALKIT_START_GATE=" + gate, "QUALKIT_DRIVER_REQUEST=" + job.Request.Abs, "QUALKIT_DRIVER_MODEL=" + job.Model.Abs,
				"QUALKIT_DRIVER_OUTPUT=" + outPath, "QUALKIT_DRIVER_CONTRACT=" + job.Contract}
			b, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 || !strings.Contains(string(b), c.want) {
				t.Fatalf("%v\n%s", err, b)
			}
			if _, err := os.Stat(outPath); err == nil {
				t.Fatal("the refused worker wrote an output")
			}
		})
	}
	// And with a valid gate the same invocation runs (the cases above fail for the gate alone).
	dir := t.TempDir()
	cmd := exec.Command(job.Executable, job.Script.Abs, "--mode", "next-token")
	cmd.Env = []string{"QUALKIT_START_GATE=" + valid(dir), "QUALKIT_DRIVER_REQUEST=" + job.Request.Abs, "QUALKIT_DRIVER_MODEL=" + job.Model.Abs,
		"QUALKIT_DRIVER_OUTPUT=" + filepath.Join(dir, "out.json"), "QUALKIT_DRIVER_CONTRACT=" + job.Contract}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("valid gate: %v\n%s", err, b)
	}
}

// misbehaveJob runs testdata/misbehave.py with args.
func misbehaveJob(t *testing.T, timeout time.Duration, args ...string) Job {
	job := referenceJob(t, "qualkit.next-token-result.v2")
	script := filepath.Join(repoRoot(t), "runner", "driver", "testdata", "misbehave.py")
	job.Script = Input{Path: "runner/driver/testdata/misbehave.py", Abs: script, Digest: fileDigest(t, script)}
	job.Args = args
	job.Timeout = timeout
	return job
}

// alive lists live processes whose command line contains marker.
func alive(marker string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(raw), marker) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, e.Name()+": "+strings.ReplaceAll(string(raw), "\x00", " "))
	}
	return out
}

func TestOverrunIsTerminatedWithItsGroup(t *testing.T) {
	requireIsolation(t)
	marker := fmt.Sprintf("60.%d", time.Now().UnixNano()%1e6)
	job := misbehaveJob(t, time.Second, "sleep", marker)
	o := testOptions(t)
	start := time.Now()
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || out.Forced || out.Signal != "SIGTERM" || len(out.Residue) > 0 {
		t.Fatalf("outcome %+v", out)
	}
	if len(out.Failures) != 2 || !strings.Contains(out.Failures[0], "timeout: the worker ran past 1s") || !strings.Contains(out.Failures[1], "no output") {
		t.Fatalf("failures %q", out.Failures)
	}
	if el := time.Since(start); el > 5*time.Second || out.Elapsed < time.Second {
		t.Fatalf("took %s (elapsed %s)", el, out.Elapsed)
	}
	if left := alive(marker); len(left) > 0 {
		t.Fatalf("still running: %v", left)
	}
}

func TestOverrunIgnoringSigtermIsKilled(t *testing.T) {
	requireIsolation(t)
	job := misbehaveJob(t, time.Second, "ignore-term")
	o := testOptions(t)
	o.Grace = 300 * time.Millisecond
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	if !out.TimedOut || !out.Forced || out.Signal != "SIGKILL" || len(out.Residue) > 0 || !strings.Contains(out.Failures[0], "ignored SIGTERM") {
		t.Fatalf("outcome %+v\nlog:\n%s", out, logOf(t, o))
	}
}

func TestEscapedDescendantIsResidue(t *testing.T) {
	requireIsolation(t)
	marker := fmt.Sprintf("m-%d-%d", os.Getpid(), time.Now().UnixNano())
	job := misbehaveJob(t, 20*time.Second, "setsid-child", marker)
	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Residue) != 1 || !strings.Contains(out.Residue[0], "outside the worker's process group") {
		t.Fatalf("residue %q\nlog:\n%s", out.Residue, logOf(t, o))
	}
	if len(out.Failures) != 1 || !strings.HasPrefix(out.Failures[0], "residue: 1 process(es)") {
		t.Fatalf("failures %q", out.Failures)
	}
	if left := alive(marker); len(left) > 0 {
		t.Fatalf("still running: %v", left)
	}
}

// TestTamperedInputsAreRefusedBeforeTheGate: a digest mismatch starts nothing; the workspace
// (and so the gate) is never created.
func TestTamperedInputsAreRefusedBeforeTheGate(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(j *Job)
		want   string
	}{
		{"script", func(j *Job) { j.Script.Digest = evidence.DigestOf([]byte("the reviewed script")) }, "script drivers/reference/worker.py has digest"},
		{"executable", func(j *Job) { j.ExecutableDigest = evidence.DigestOf([]byte("another python")) }, "is pinned"},
		{"request", func(j *Job) { j.Request.Digest = evidence.DigestOf(nil) }, "request drivers/reference/request.json has digest"},
		{"model", func(j *Job) { j.Model.Digest = evidence.DigestOf(nil) }, "model drivers/reference/tiny-model.json has digest"},
	} {
		t.Run(c.name, func(t *testing.T) {
			job := referenceJob(t, "qualkit.next-token-result.v2", "--mode", "next-token")
			c.tamper(&job)
			o := testOptions(t)
			out, err := Run(bg, job, o)
			if !errors.Is(err, ErrRefused) || out != nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "no start gate was created") {
				t.Fatalf("%v %+v", err, out)
			}
			for _, p := range []string{o.WorkspaceDir, filepath.Join(o.WorkspaceDir, "start-gate"), o.LogPath} {
				if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s exists after a refusal", p)
				}
			}
		})
	}
}

// TestMissingMechanismIsUnsupported runs on every host: a denied mechanism is named, and nothing
// is started or created.
func TestMissingMechanismIsUnsupported(t *testing.T) {
	for _, m := range []string{MechUserNamespaces, MechNetworkNamespaces, MechHashBoundExec} {
		job := referenceJob(t, "qualkit.next-token-result.v2", "--mode", "next-token")
		o := testOptions(t)
		o.Deny = []string{m}
		out, err := Run(bg, job, o)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) || ue.Mechanism != m || out != nil {
			t.Fatalf("%s: %v %+v", m, err, out)
		}
		if _, err := os.Lstat(o.WorkspaceDir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s: workspace created", m)
		}
	}
}

func TestEnvironmentIsClosed(t *testing.T) {
	requireIsolation(t)
	t.Setenv("HF_TOKEN", "hf_secret_value")
	t.Setenv("QUALKIT_PASSWORD", "secret")
	job := misbehaveJob(t, 20*time.Second, "env")
	job.Environment = map[string]string{"CUDA_VISIBLE_DEVICES": "0"}
	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil || len(out.Failures) > 0 {
		t.Fatalf("%v %v", err, out.Failures)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(logOf(t, o)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		names = append(names, k)
		if strings.Contains(v, "secret") {
			t.Errorf("a secret reached the worker: %s", line)
		}
	}
	want := []string{"CUDA_VISIBLE_DEVICES", "HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "HOME", "LANG", "PATH", "PYTHONDONTWRITEBYTECODE",
		"PYTHONHASHSEED", "PYTHONNOUSERSITE", "QUALKIT_DRIVER_CONTRACT", "QUALKIT_DRIVER_MODEL", "QUALKIT_DRIVER_OUTPUT",
		"QUALKIT_DRIVER_REQUEST", "QUALKIT_START_GATE", "TMPDIR", "TRANSFORMERS_OFFLINE"}
	// Python adds LC_CTYPE when it coerces the C locale; nothing else may appear.
	names = slices.DeleteFunc(names, func(s string) bool { return s == "LC_CTYPE" })
	if !slices.Equal(names, want) || !slices.Equal(out.EnvironmentNames, want) {
		t.Fatalf("worker saw %v\nrecorded %v\nwant %v", names, out.EnvironmentNames, want)
	}
	for _, bad := range []map[string]string{{"HF_TOKEN": "x"}, {"MY_API_KEY": "x"}, {"PATH": "/opt/bin"}, {"QUALKIT_START_GATE": "/tmp/x"}} {
		j := job
		j.Environment = bad
		if _, _, err := ClosedEnvironment(&workspace{}, j); err == nil {
			t.Errorf("declared %v accepted", bad)
		}
	}
}

func TestWorkerRunsTheHashedBytesWithoutCapabilities(t *testing.T) {
	requireIsolation(t)
	job := misbehaveJob(t, 20*time.Second, "identity")
	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil || len(out.Failures) > 0 {
		t.Fatalf("%v %v\n%s", err, out.Failures, logOf(t, o))
	}
	log := logOf(t, o)
	size, _ := os.Stat(job.Script.Abs)
	for _, want := range []string{
		// The bytes are the resolved file's; argv[0] (so sys.executable, and a venv) is the declared path.
		"argv=['/proc/self/fd/4', 'identity']", "uid=0", "exe=" + mustEval(t, job.Executable), "executable=" + job.Executable + "\n",
		"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1",
		fmt.Sprintf("script_bytes=%d", size.Size()),
	} {
		if !strings.Contains(log, want) {
			t.Errorf("log lacks %q:\n%s", want, log)
		}
	}
}

func TestWorkerExitCodeFails(t *testing.T) {
	requireIsolation(t)
	out, err := Run(bg, misbehaveJob(t, 20*time.Second, "exit", "7"), testOptions(t))
	if err != nil || out.ExitCode == nil || *out.ExitCode != 7 || len(out.Failures) == 0 || out.Failures[0] != "the worker exited with code 7 (see the worker log)" {
		t.Fatalf("%v %+v", err, out)
	}
}

func TestGuardRefusesToRunByHand(t *testing.T) {
	cmd := exec.Command("/proc/self/exe", GuardArg, `{"argv":["/bin/true","x"]}`)
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != guardRefused || !strings.Contains(string(b), "never by hand") {
		t.Fatalf("%v\n%s", err, b)
	}
}
