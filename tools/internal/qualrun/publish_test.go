package qualrun

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci/ocitest"
)

const mainEnv = "QUALRUN_TEST_AS_MAIN"

// TestMain lets a test run qualrun as a real process: the test binary, started again with mainEnv
// set, is qualrun.
func TestMain(m *testing.M) {
	if os.Getenv(mainEnv) == "1" {
		os.Exit(Main(append([]string{"qualrun"}, os.Args[1:]...), os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// TestPublishInterruptedOrLate: a registry that never answers an upload. SIGINT or SIGTERM ends
// qualrun publish (exit 130, said on stderr); --registry-timeout ends it (exit 3).
func TestPublishInterruptedOrLate(t *testing.T) {
	h, stop, err := ocitest.Start("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	h.Set(func(h *ocitest.Hostile) { h.StallUploads = true })
	receipt := filepath.Join("../../../verify/testdata/frozen/v1", ".qualification/receipts/a-1.json")
	run := func(sig syscall.Signal, extra ...string) (int, string) {
		var before int // the registry's count is the whole test's: wait for this run's first request
		h.Set(func(h *ocitest.Hostile) { before = h.Requests })
		cmd := exec.Command(os.Args[0], append([]string{"publish", receipt, "--to", "oci://" + h.Host + "/r:t"}, extra...)...)
		cmd.Env = append(os.Environ(), mainEnv+"=1")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		if sig != 0 {
			// Wait until the push has reached the registry, then signal.
			for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				var n int
				h.Set(func(h *ocitest.Hostile) { n = h.Requests })
				if n > before {
					break
				}
			}
			time.Sleep(300 * time.Millisecond)
			cmd.Process.Signal(sig)
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v %v: qualrun publish did not end", sig, extra)
		}
		return cmd.ProcessState.ExitCode(), out.String()
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if code, out := run(sig); code != exitcode.Interrupted || !strings.Contains(out, "interrupted") {
			t.Errorf("%v: exit %d, want %d\n%s", sig, code, exitcode.Interrupted, out)
		}
	}
	start := time.Now()
	if code, out := run(0, "--registry-timeout", "1s"); code != exitcode.Internal || !strings.Contains(out, "deadline") || time.Since(start) > 20*time.Second {
		t.Errorf("--registry-timeout 1s: exit %d after %s\n%s", code, time.Since(start), out)
	} else {
		t.Logf("--registry-timeout 1s: exit %d after %s\n%s", code, time.Since(start), out)
	}
}
