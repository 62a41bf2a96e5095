package driver

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/evidence"
)

// TestMain hands a re-executed guard to GuardMain before the tests run: Run starts the guard by
// re-executing this test binary.
func TestMain(m *testing.M) {
	if IsGuard(os.Args) {
		os.Exit(GuardMain(os.Args))
	}
	os.Exit(m.Run())
}

// repoRoot is the repository root (runner/driver is two levels down).
func repoRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// python3 is the interpreter the reference worker runs with: /usr/bin/python3, else python3 on PATH.
func python3(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	p, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 not found: the reference worker needs it (CI installs Debian's python3)")
		}
		t.Skip("python3 not found: the reference worker needs it")
	}
	return p
}

// requireIsolation skips when this host cannot create the namespaces (the unsupported path has
// its own tests that run everywhere). Under CI=true it fails instead: CI must exercise isolation.
func requireIsolation(t *testing.T) {
	t.Helper()
	if err := CheckHost(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("this host cannot isolate a worker, and CI must test isolation: %v", err)
		}
		t.Skipf("this host cannot isolate a worker: %v", err)
	}
}

func fileDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evidence.DigestOf(b)
}

// referenceJob is a job for the reference worker in mode with the committed request and model.
func referenceJob(t *testing.T, contract string, args ...string) Job {
	t.Helper()
	root := repoRoot(t)
	ref := filepath.Join(root, "drivers", "reference")
	script := filepath.Join(ref, "worker.py")
	req := filepath.Join(ref, "request.json")
	model := filepath.Join(ref, "tiny-model.json")
	return Job{
		ID: "reference", Contract: contract, Executable: python3(t),
		Script:  Input{Path: "drivers/reference/worker.py", Abs: script, Digest: fileDigest(t, script)},
		Args:    args,
		Request: Input{Path: "drivers/reference/request.json", Abs: req, Digest: fileDigest(t, req)},
		Model:   Input{Path: "drivers/reference/tiny-model.json", Abs: model, Digest: fileDigest(t, model)},
		Timeout: 30 * time.Second,
	}
}

func testOptions(t *testing.T) Options {
	dir := t.TempDir()
	return Options{LogPath: filepath.Join(dir, "worker.log"), WorkspaceDir: filepath.Join(dir, "ws"), KeepWorkspace: true}
}

func logOf(t *testing.T, o Options) string {
	b, _ := os.ReadFile(o.LogPath)
	return string(b)
}

var bg = context.Background()
