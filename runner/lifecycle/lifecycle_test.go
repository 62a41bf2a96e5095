package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// The test binary doubles as a tiny server, so every test runs real processes on real sockets.
// (The product's reference server, qualsim, exercises the same paths through qualrun serve.)
const serverEnv = "LIFECYCLE_TEST_SERVER"

func TestMain(m *testing.M) {
	if IsKeeper(os.Args) {
		os.Exit(KeeperMain(os.Args))
	}
	if mode := os.Getenv(ownerEnv); mode != "" {
		os.Exit(testOwner(mode))
	}
	if mode := os.Getenv(serverEnv); mode != "" {
		os.Exit(testServer(mode))
	}
	os.Exit(m.Run())
}

func testServer(mode string) int {
	if serve, ok := authModes[mode]; ok {
		return serve()
	}
	port := os.Getenv("PORT")
	switch mode {
	case "cmd-ok":
		fmt.Println("hello from the case")
		fmt.Fprintln(os.Stderr, "a warning")
		return 0
	case "cmd-exit-3":
		return 3
	case "cmd-flood":
		chunk := strings.Repeat("x", 1<<16)
		for i := 0; i < 64; i++ {
			fmt.Print(chunk)
		}
		return 0
	case "cmd-setsid":
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), serverEnv+"=setsid-sleeper")
		child.Stdout = os.Stdout // holds the capture pipe open
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			return 4
		}
		return 0
	case "exit-early":
		fmt.Println("fatal: cannot load model weights")
		return 3
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "setsid-sleeper":
		signal.Ignore(syscall.SIGTERM, syscall.SIGHUP)
		time.Sleep(time.Hour)
		return 0
	}
	if mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	}
	if mode == "setsid-child" {
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), serverEnv+"=setsid-sleeper")
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Println(err)
			return 4
		}
	}
	if mode == "setsid-child-clearenv" {
		// The grandchild leaves the process group and drops every marker: only the cgroup finds
		// it. Its argv names the port so that a test can find it.
		child := exec.Command(os.Args[0], "clearenv-grandchild-"+port)
		child.Env = []string{serverEnv + "=setsid-sleeper"}
		child.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := child.Start(); err != nil {
			fmt.Println(err)
			return 4
		}
	}
	if mode == "never-ready" {
		time.Sleep(time.Hour)
	}
	model := "tiny"
	if mode == "wrong-model" || mode == "wrong-then-hang" {
		model = "other"
	}
	var answered atomic.Int64
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		fmt.Println(err)
		return 5
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		if mode == "wrong-then-hang" && answered.Add(1) > 2 {
			time.Sleep(time.Hour) // later probes never get an answer
		}
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%q,"object":"model"}]}`, model)
	})
	srv := &http.Server{Handler: mux}
	if mode != "ignore-term" {
		term := make(chan os.Signal, 1)
		signal.Notify(term, syscall.SIGTERM)
		go func() { <-term; srv.Close() }()
	}
	_ = srv.Serve(ln)
	return 0
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func recipe(t *testing.T, mode string, port int) *contract.LaunchRecipeDoc {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	limit := int64(64)
	return &contract.LaunchRecipeDoc{
		Schema: "qualkit.launch-recipe.v1", ID: "lifecycle-test-" + mode,
		Command: []string{self}, WorkingDirectory: t.TempDir(),
		Environment:            map[string]string{serverEnv: mode, "PORT": strconv.Itoa(port), "API_TOKEN_FILE_HINT": "x"},
		EnvironmentPassthrough: []string{"HF_TOKEN"},
		BaseURL:                fmt.Sprintf("http://127.0.0.1:%d", port), ModelID: "tiny",
		Readiness:             contract.Readiness{Path: "/v1/models", PollIntervalMs: 20, ProbeTimeoutMs: 500},
		StartupTimeoutSeconds: 5, ShutdownTimeoutSeconds: 2, AcceptableExitCodes: []int64{0},
		Isolation: contract.Isolation{PIDLimit: &limit, CgroupAccounting: "preferred"},
	}
}

func launch(t *testing.T, r *contract.LaunchRecipeDoc) *Server {
	t.Helper()
	s, err := Launch(context.Background(), r, Options{
		LogPath:      filepath.Join(t.TempDir(), "server.log"),
		RecipeDigest: "sha256:" + strings.Repeat("0", 64),
		LookupEnv: func(k string) (string, bool) {
			if k == "HF_TOKEN" {
				return "hf_secret_value", true
			}
			return "", false
		},
	})
	if err != nil && s == nil {
		t.Fatalf("launch: %v", err)
	}
	return s
}

// assertNothingLeft checks /proc: no process of the server and no listener on its port.
func assertNothingLeft(t *testing.T, s *Server, rec *contract.LifecycleRecordDoc) {
	t.Helper()
	all, err := scanProcs(s.fs)
	if err != nil {
		t.Fatal(err)
	}
	for pid, p := range all {
		if p.zombie() {
			continue
		}
		if p.PGID == s.id.PGID || (p.PPID == s.self && p.StartTicks >= s.id.StartTicks) {
			t.Errorf("process %d (%s) of the server is still alive", pid, p.Comm)
		}
	}
	if in, _ := listeners(s.fs, s.port); len(in) > 0 {
		t.Errorf("port %d still has listeners %v", s.port, in)
	}
	// Every record is a valid lifecycle record.
	doc, err := jsonstrict.Parse(mustJSON(t, rec))
	if err != nil {
		t.Fatal(err)
	}
	if vs, err := schemas.ValidateSchema(contract.LifecycleRecord, doc); err != nil || len(vs) > 0 {
		t.Fatalf("record does not validate: %v %v", err, vs)
	}
	if vs, err := schemas.CheckSemantics(contract.LifecycleRecord, doc); err != nil || len(vs) > 0 {
		t.Fatalf("record breaks a semantic rule: %v %v", err, vs)
	}
}

func TestHealthyServerPasses(t *testing.T) {
	s := launch(t, recipe(t, "healthy", freePort(t)))
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckListener(); err != nil {
		t.Fatal(err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if rec.Verdict != "passed" || rec.Shutdown.Forced || len(rec.Failures) > 0 {
		t.Fatalf("verdict %s forced %v failures %v", rec.Verdict, rec.Shutdown.Forced, rec.Failures)
	}
	if !rec.Listener.Owned || len(rec.Listener.OwnerPIDs) != 1 || rec.Listener.OwnerPIDs[0] != rec.Launch.PID {
		t.Errorf("listener %+v, leader %d", rec.Listener, rec.Launch.PID)
	}
	if !rec.Readiness.Ready || rec.Readiness.Probes < 1 || rec.Readiness.TReadyNs == nil {
		t.Errorf("readiness %+v", rec.Readiness)
	}
	// The leader was the whole tree when SIGTERM went out.
	if at := rec.Shutdown.ProcessesAtSignal; len(at) != 1 || at[0].PID != rec.Launch.PID || at[0].Escaped {
		t.Errorf("processes at SIGTERM %+v, leader %d", at, rec.Launch.PID)
	}
	for _, e := range rec.Launch.Environment {
		if e.Name == "HF_TOKEN" && (!e.Redacted || e.Value != nil) {
			t.Errorf("secret recorded: %+v", e)
		}
	}
	if strings.Contains(string(mustJSON(t, rec)), "hf_secret_value") {
		t.Error("a secret value entered the record")
	}
	if again := s.Shutdown(context.Background()); again != rec {
		t.Error("Shutdown is not idempotent")
	}
}

func TestPortTakenRefusesLaunch(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := recipe(t, "healthy", ln.Addr().(*net.TCPAddr).Port)
	s, err := Launch(context.Background(), r, Options{LogPath: filepath.Join(t.TempDir(), "server.log")})
	if !errors.Is(err, ErrPortTaken) || s != nil {
		t.Fatalf("Launch = %v, %v; want ErrPortTaken and nothing launched", s, err)
	}
}

func TestExitBeforeReadyFailsFast(t *testing.T) {
	s := launch(t, recipe(t, "exit-early", freePort(t)))
	start := time.Now()
	err := s.WaitReady(context.Background())
	if !errors.Is(err, ErrExitedEarly) {
		t.Fatalf("WaitReady = %v", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %s to notice the exit", time.Since(start))
	}
	if !strings.Contains(err.Error(), "exit code 3") || !strings.Contains(err.Error(), "cannot load model weights") {
		t.Errorf("error lacks exit status or log tail: %v", err)
	}
	s.Fail(err)
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if rec.Verdict != "failed" || rec.Readiness.ChildExit == nil {
		t.Fatalf("record %+v", rec)
	}
}

func TestNeverReadyHitsDeadlineOnTime(t *testing.T) {
	r := recipe(t, "never-ready", freePort(t))
	r.StartupTimeoutSeconds = 1
	s := launch(t, r)
	start := time.Now()
	err := s.WaitReady(context.Background())
	took := time.Since(start)
	if !errors.Is(err, ErrNotReady) {
		t.Fatalf("WaitReady = %v", err)
	}
	if took > 1500*time.Millisecond {
		t.Errorf("deadline of 1 s hit after %s", took)
	}
	s.Fail(err)
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if rec.Verdict != "failed" {
		t.Fatal("passed")
	}
}

func TestWrongModelIsNotReady(t *testing.T) {
	r := recipe(t, "wrong-model", freePort(t))
	r.StartupTimeoutSeconds = 2 // long enough for the server to answer on a loaded machine
	s := launch(t, r)
	err := s.WaitReady(context.Background())
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("WaitReady = %v", err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
}

// The probe cut short by the startup deadline is not an answer: the failure names the last answer
// the server gave (here: the wrong model), not "context deadline exceeded".
func TestDeadlineKeepsTheLastRealAnswer(t *testing.T) {
	r := recipe(t, "wrong-then-hang", freePort(t))
	r.StartupTimeoutSeconds = 2
	r.Readiness.ProbeTimeoutMs = 10000 // longer than the deadline: the hanging probe is cut by it
	s := launch(t, r)
	err := s.WaitReady(context.Background())
	if !errors.Is(err, ErrNotReady) || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("WaitReady = %v, want the wrong-model answer", err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
}

func TestIgnoredSigtermIsForced(t *testing.T) {
	r := recipe(t, "ignore-term", freePort(t))
	r.ShutdownTimeoutSeconds = 0.5
	s := launch(t, r)
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckListener(); err != nil {
		t.Fatal(err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if !rec.Shutdown.Forced || rec.Verdict != "failed" || rec.Shutdown.Acceptable {
		t.Fatalf("shutdown %+v verdict %s", rec.Shutdown, rec.Verdict)
	}
}

// TestSetsidGrandchildIsResidue runs with the cgroup (where the host allows one) and without it,
// where the child subreaper alone must find the escaped grandchild.
func TestSetsidGrandchildIsResidue(t *testing.T) {
	for _, accounting := range []string{"preferred", "off"} {
		t.Run(accounting, func(t *testing.T) { testSetsidGrandchild(t, accounting) })
	}
}

func testSetsidGrandchild(t *testing.T, accounting string) {
	r := recipe(t, "setsid-child", freePort(t))
	r.Isolation.CgroupAccounting = contract.IsolationCgroupAccounting(accounting)
	r.Isolation.PIDLimit = nil
	s := launch(t, r)
	if accounting == "off" && s.cg != nil {
		t.Fatal("cgroup used with accounting off")
	}
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckListener(); err != nil {
		t.Fatal(err)
	}
	rec := s.Shutdown(context.Background())
	assertNothingLeft(t, s, rec)
	if rec.Verdict != "failed" || len(rec.Residue.Processes) != 1 || !rec.Residue.Processes[0].Escaped || !rec.Residue.Killed {
		t.Fatalf("residue %+v verdict %s failures %v", rec.Residue, rec.Verdict, rec.Failures)
	}
	if rec.Shutdown.Forced {
		t.Error("the group itself exited on SIGTERM; only the escaped grandchild is residue")
	}
	// The escaped grandchild was accounted for when SIGTERM went out, beside the leader.
	at := rec.Shutdown.ProcessesAtSignal
	if len(at) != 2 || at[0].Escaped == at[1].Escaped {
		t.Fatalf("processes at SIGTERM %+v", at)
	}
	for _, p := range at {
		if p.Escaped && p.PID != rec.Residue.Processes[0].PID {
			t.Errorf("escaped process at SIGTERM %d is not the residue %d", p.PID, rec.Residue.Processes[0].PID)
		}
	}
}

func TestUnrelatedListenerFailsOwnership(t *testing.T) {
	port := freePort(t)
	s := launch(t, recipe(t, "sleep", port))
	// Someone else (this test process, not the server) answers readiness on the port.
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, `{"data":[{"id":"tiny"}]}`)
	})}
	go srv.Serve(ln)
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	err = s.CheckListener()
	if !errors.Is(err, ErrListenerNotOwned) {
		t.Fatalf("CheckListener = %v", err)
	}
	s.Fail(err)
	srv.Close()
	rec := s.Shutdown(context.Background())
	if rec.Verdict != "failed" || rec.Listener.Owned {
		t.Fatalf("record %+v", rec)
	}
	assertNothingLeft(t, s, rec)
}
