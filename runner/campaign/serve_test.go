package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
)

// The serve tests run the real qualsim binary, built once, as an owned server on loopback ports
// of this package's range (19300-19399).
var (
	qualsimOnce                         sync.Once
	qualsimDir, qualsimPath, qualsimErr string
)

// TestMain removes the qualsim build, if a test made one.
func TestMain(m *testing.M) {
	code := m.Run()
	if qualsimDir != "" {
		os.RemoveAll(qualsimDir)
	}
	os.Exit(code)
}

func qualsimBinary(t *testing.T) string {
	t.Helper()
	qualsimOnce.Do(func() {
		var err error
		if qualsimDir, err = os.MkdirTemp("", "qualkit-campaign-qualsim"); err != nil {
			qualsimErr = err.Error()
			return
		}
		out := filepath.Join(qualsimDir, "qualsim")
		cmd := exec.Command("go", "build", "-o", out, "github.com/qualkit/qualkit/tools/cmd/qualsim")
		cmd.Dir = filepath.Join("..", "..")
		if b, err := cmd.CombinedOutput(); err != nil {
			qualsimErr = fmt.Sprintf("go build qualsim: %v\n%s", err, b)
			return
		}
		qualsimPath = out
	})
	if qualsimPath == "" {
		t.Fatal(qualsimErr)
	}
	return qualsimPath
}

// serveRecipe writes a launch recipe for qualsim on port with extra qualsim arguments.
func serveRecipe(t *testing.T, port int, args ...string) string {
	t.Helper()
	argv := append([]string{qualsimBinary(t), "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--model", "m-serve"}, args...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	doc := fmt.Sprintf(`{
  "schema": "qualkit.launch-recipe.v1", "id": "campaign-serve-test",
  "command": [%s], "working_directory": ".", "environment": {}, "environment_passthrough": [],
  "base_url": "http://127.0.0.1:%d", "model_id": "m-serve",
  "readiness": {"path": "/v1/models", "poll_interval_ms": 20, "probe_timeout_ms": 1000},
  "startup_timeout_seconds": 10, "shutdown_timeout_seconds": 5, "acceptable_exit_codes": [0],
  "isolation": {"pid_limit": null, "cgroup_accounting": "preferred"}
}
`, strings.Join(quoted, ", "), port)
	p := filepath.Join(t.TempDir(), "recipe.json")
	if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// checkRecord: a valid lifecycle record, and nothing of the server left on its port.
func checkRecord(t *testing.T, rec *contract.LifecycleRecordDoc, port int) {
	t.Helper()
	if len(rec.Residue.Processes) > 0 || len(rec.Residue.Listeners) > 0 {
		t.Errorf("residue %+v", rec.Residue)
	}
	if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err != nil {
		t.Errorf("port %d still taken after Serve: %v", port, err)
	} else {
		ln.Close()
	}
	b, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	if err := schemas.CheckAs(b, "lifecycle.json", contract.LifecycleRecord); err != nil {
		t.Fatalf("the record does not validate: %v", err)
	}
}

// Serve runs launch, readiness, listener ownership, shutdown and residue on a real qualsim and
// writes the scrubbed server log into LogDir.
func TestServeQualsimPasses(t *testing.T) {
	logDir := t.TempDir()
	plan, err := PrepareServe(ServeConfig{Recipe: serveRecipe(t, 19391, "--ttft", "1ms"), LogDir: logDir})
	if err != nil {
		t.Fatal(err)
	}
	out, err := plan.Serve(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rec := out.Record
	checkRecord(t, rec, 19391)
	if out.Interrupted || rec.Verdict != "passed" || !rec.Readiness.Ready || !rec.Listener.Owned || rec.Shutdown.Forced {
		t.Fatalf("interrupted %v, record %+v", out.Interrupted, rec)
	}
	logs, _ := filepath.Glob(filepath.Join(logDir, "campaign-serve-test-*.server.log"))
	if len(logs) != 1 || rec.Launch.Log.Path != logs[0] {
		t.Errorf("server logs %v, record names %s", logs, rec.Launch.Log.Path)
	}
}

// An interruption (a cancelled ctx whose cause names the signal) during readiness shuts the
// server down; the record names the signal, not the readiness error.
func TestServeInterruptedNamesTheSignal(t *testing.T) {
	plan, err := PrepareServe(ServeConfig{Recipe: serveRecipe(t, 19392, "--fault", "never-ready"), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(500*time.Millisecond, func() { cancel(&Interruption{Signal: "SIGHUP"}) })
	out, err := plan.Serve(ctx)
	if err != nil {
		t.Fatal(err)
	}
	checkRecord(t, out.Record, 19392)
	if !out.Interrupted || out.Record.Verdict != "failed" || len(out.Record.Failures) == 0 ||
		out.Record.Failures[0] != "interrupted: qualrun received SIGHUP" {
		t.Fatalf("interrupted %v, verdict %s, failures %q", out.Interrupted, out.Record.Verdict, out.Record.Failures)
	}
}

// A taken port launches nothing: Serve returns lifecycle.ErrPortTaken and no record.
func TestServePortTakenLaunchesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:19393")
	if err != nil {
		t.Skipf("port 19393: %v", err)
	}
	defer ln.Close()
	plan, err := PrepareServe(ServeConfig{Recipe: serveRecipe(t, 19393), LogDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	out, err := plan.Serve(context.Background())
	if out != nil || !errors.Is(err, lifecycle.ErrPortTaken) {
		t.Fatalf("Serve = %v, %v; want nothing launched and ErrPortTaken", out, err)
	}
}

// A recipe that cannot be used is an ErrInput error whose text names the file, not the class.
func TestPrepareServeRefusesUnusableRecipes(t *testing.T) {
	dir := t.TempDir()
	notRecipe := filepath.Join(dir, "request.json")
	if err := os.WriteFile(notRecipe, []byte(`{"schema": "qualkit.driver-request.v1", "id": "req", "input_token_ids": [1], "candidates": [], "paths": []}`), 0o644); err != nil {
		t.Fatal(err)
	}
	invalid := filepath.Join(dir, "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"schema": "qualkit.launch-recipe.v1", "id": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := mkfifo(fifo); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		notRecipe:                          "is a qualkit.driver-request.v1, not a launch recipe",
		invalid:                            "invalid launch recipe:\n" + invalid + ": ",
		fifo:                               "read launch recipe: ",
		filepath.Join(dir, "missing.json"): "give a regular file of at most",
	} {
		_, err := PrepareServe(ServeConfig{Recipe: path, LogDir: dir})
		if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), ErrInput.Error()) {
			t.Errorf("PrepareServe(%s) = %v; want ErrInput saying %q", filepath.Base(path), err, want)
		}
	}
}
