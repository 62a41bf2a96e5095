package load

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"go.uber.org/goleak"
)

// qualsimBin is the qualsim binary TestMain builds; "" when the build failed (the tests that need
// the real process then fail with the build's output).
var qualsimBin, qualsimBuildErr = "", ""

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "qualkit-load-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	qualsimBin, qualsimBuildErr = buildQualsim(dir)
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildQualsim(dir string) (string, string) {
	out := filepath.Join(dir, "qualsim")
	cmd := exec.Command("go", "build", "-o", out, "github.com/qualkit/qualkit/tools/cmd/qualsim")
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Sprintf("go build qualsim: %v\n%s", err, b)
	}
	return out, ""
}

// qualsimProc is a qualsim process on a free loopback port.
type qualsimProc struct {
	url         string
	groundTruth string
	cmd         *exec.Cmd
	exited      chan struct{}
}

// startQualsim runs the qualsim binary with args (plus --listen and --addr-file) and waits until
// /health answers 200. gt asks for a ground-truth log.
func startQualsim(t testing.TB, gt bool, args ...string) *qualsimProc {
	t.Helper()
	p := launchQualsim(t, gt, args...)
	waitHealthy(t, p.url)
	return p
}

// startQualsimNoWait starts qualsim and waits only for its address.
func startQualsimNoWait(t testing.TB, args ...string) *qualsimProc {
	t.Helper()
	return launchQualsim(t, false, args...)
}

func launchQualsim(t testing.TB, gt bool, args ...string) *qualsimProc {
	t.Helper()
	if qualsimBin == "" {
		t.Fatal(qualsimBuildErr)
	}
	dir := t.TempDir()
	p := &qualsimProc{exited: make(chan struct{})}
	argv := []string{"--addr-file", filepath.Join(dir, "addr"), "--log-level", "error"}
	if !slices.Contains(args, "--listen") {
		argv = append(argv, "--listen", "127.0.0.1:0")
	}
	if gt {
		p.groundTruth = filepath.Join(dir, "gt.jsonl")
		argv = append(argv, "--ground-truth", p.groundTruth)
	}
	p.cmd = exec.Command(qualsimBin, append(argv, args...)...)
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.stop(t) })
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(filepath.Join(dir, "addr"))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			p.url = "http://" + strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("qualsim did not write its address")
		}
		time.Sleep(5 * time.Millisecond)
	}
	return p
}

// stop sends SIGTERM and waits (the ground-truth log is complete afterwards).
func (p *qualsimProc) stop(t testing.TB) {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
		t.Error("qualsim did not stop on SIGTERM")
	}
}

func waitHealthy(t testing.TB, url string) {
	t.Helper()
	addr := strings.TrimPrefix(url, "http://")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			fmt.Fprintf(c, "GET /health HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", addr)
			line, _ := bufio.NewReader(c).ReadString('\n')
			c.Close()
			if strings.Contains(line, " 200 ") {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("%s not healthy after 10s", url)
}

// startSim serves cfg in this process on a loopback port (for tests that need only an endpoint).
func startSim(t testing.TB, cfg sim.Config) string {
	t.Helper()
	srv, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sim: %v", err)
		}
	})
	url := "http://" + ln.Addr().String()
	waitHealthy(t, url)
	return url
}

// fastSim is the default qualsim configuration with fast timing.
func fastSim() sim.Config {
	c := sim.DefaultConfig()
	c.Timing.TTFT = time.Millisecond
	c.Timing.TokenInterval = 200 * time.Microsecond
	c.Slots = 64
	c.ShutdownGrace = time.Second
	return c
}

func chatBody(maxTokens int) []byte {
	return []byte(fmt.Sprintf(`{"model":"qualsim-tiny","messages":[{"role":"user","content":"hello there"}],"max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`, maxTokens))
}
