package qualsim_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// bin is the qualsim binary TestMain builds.
var bin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "qualsim-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bin = filepath.Join(dir, "qualsim")
	build := exec.Command("go", "build", "-o", bin, "github.com/qualkit/qualkit/tools/cmd/qualsim")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build qualsim: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	// Nothing this test started may outlive it.
	if left := processesRunning(bin); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "processes of %s still running: %v\n", bin, left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// syncBuffer collects a process's output.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// proc is a qualsim process started by a test.
type proc struct {
	t              *testing.T
	cmd            *exec.Cmd
	addr           string
	stdout, stderr syncBuffer
	exited         chan struct{}
	state          *os.ProcessState
	client         *http.Client
}

// startProc runs qualsim with args plus --listen 127.0.0.1:0 --addr-file and waits until it has
// bound its socket (or exited). Cleanup kills it and any grandchild it left.
func startProc(t *testing.T, args ...string) *proc {
	t.Helper()
	addrFile := filepath.Join(t.TempDir(), "addr")
	p := &proc{t: t, exited: make(chan struct{}), client: &http.Client{Timeout: 30 * time.Second}}
	p.cmd = exec.Command(bin, append([]string{"--listen", "127.0.0.1:0", "--addr-file", addrFile}, args...)...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := p.cmd.Process.Pid
	go func() {
		p.cmd.Wait()
		p.state = p.cmd.ProcessState
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.client.CloseIdleConnections()
		syscall.Kill(-pid, syscall.SIGKILL)
		<-p.exited
		for _, g := range grandchildrenOf(pid) {
			syscall.Kill(g, syscall.SIGKILL)
			waitGone(t, g, 5*time.Second)
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if b, err := os.ReadFile(addrFile); err == nil {
			p.addr = strings.TrimSpace(string(b))
			return p
		}
		select {
		case <-p.exited:
			return p
		case <-time.After(2 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("qualsim did not bind within 10s; stderr:\n%s", p.stderr.String())
		}
	}
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

// url returns the address of path on the process.
func (p *proc) url(path string) string { return "http://" + p.addr + path }

// waitReady polls /v1/models until 200.
func (p *proc) waitReady() {
	p.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := p.get("/v1/models"); code == 200 {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("not ready within 10s; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (p *proc) get(path string) (int, string) {
	resp, err := p.client.Get(p.url(path))
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// post sends body and returns the status, the body read and the read error (a cut stream).
func (p *proc) post(path string, body map[string]any) (int, string, error) {
	data, _ := json.Marshal(body)
	resp, err := p.client.Post(p.url(path), "application/json", bytes.NewReader(data))
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// exitCode waits up to d for the process to exit and returns its exit code (-1 when a signal
// ended it).
func (p *proc) exitCode(d time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
		return p.state.ExitCode()
	case <-time.After(d):
		p.t.Fatalf("qualsim still running after %v; stderr:\n%s", d, p.stderr.String())
		return 0
	}
}

func (p *proc) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

func (p *proc) signal(sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		p.t.Fatal(err)
	}
}

// events splits an SSE body into its events (without the blank line).
func events(body string) []string {
	parts := strings.Split(body, "\n\n")
	if len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// /proc helpers.

// procStat returns the fields of /proc/PID/stat after the command name: index 0 is the state,
// 1 the ppid, 2 the process group, 3 the session.
func procStat(pid int) ([]string, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return nil, errors.New("malformed stat")
	}
	return strings.Fields(string(data[i+2:])), nil
}

func cmdline(pid int) []string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

func allPids() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid exists and is not a zombie.
func alive(pid int) bool {
	st, err := procStat(pid)
	return err == nil && st[0] != "Z"
}

// processesRunning lists the live processes running program.
func processesRunning(program string) []int {
	var out []int
	for _, pid := range allPids() {
		if c := cmdline(pid); len(c) > 0 && c[0] == program && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// grandchildrenOf finds, from /proc, the live grandchild processes qualsim `parent` started
// (whatever their parent is now).
func grandchildrenOf(parent int) []int {
	var out []int
	marker := "--parent-pid=" + strconv.Itoa(parent)
	for _, pid := range allPids() {
		c := cmdline(pid)
		if len(c) > 2 && c[0] == bin && c[1] == "grandchild" && c[2] == marker && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

func waitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still alive after %v", pid, d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// listenerInode returns the inode of the socket listening on addr, from /proc/net/tcp.
func listenerInode(t *testing.T, addr string) string {
	t.Helper()
	_, portText, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(portText)
	data, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("0100007F:%04X", port)
	for _, line := range strings.Split(string(data), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[1] == want && f[3] == "0A" {
			return f[9]
		}
	}
	t.Fatalf("no listener on %s in /proc/net/tcp", addr)
	return ""
}

// holdsSocket reports whether pid has the socket inode open.
func holdsSocket(pid int, inode string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && target == "socket:["+inode+"]" {
			return true
		}
	}
	return false
}

// sigMask returns a mask line (SigIgn, SigCgt, ...) of /proc/PID/status.
func sigMask(t *testing.T, pid int, name string) uint64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, name+":"); ok {
			m, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}
