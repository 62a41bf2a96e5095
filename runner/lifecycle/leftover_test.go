package lifecycle

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"golang.org/x/sys/unix"
)

// ownerEnv makes the test binary an owner: a stand-in for qualrun that launches a server (with a
// keeper when the mode is "keeper"), prints "ready <pid>" once it is ready, and waits to be killed.
const ownerEnv = "LIFECYCLE_TEST_OWNER"

// ownerDieAtEnv names a moment of Launch (launchStep) at which the owner SIGKILLs itself.
const ownerDieAtEnv = "OWNER_DIE_AT"

func testOwner(mode string) int {
	var r contract.LaunchRecipeDoc
	if err := json.Unmarshal([]byte(os.Getenv("OWNER_RECIPE")), &r); err != nil {
		fmt.Println("recipe:", err)
		return 2
	}
	os.Unsetenv(ownerEnv) // the server (this binary too) must not become an owner
	if at := os.Getenv(ownerDieAtEnv); at != "" {
		launchStep = func(step string) {
			if step == at {
				_ = unix.Kill(os.Getpid(), unix.SIGKILL)
				time.Sleep(time.Hour)
			}
		}
	}
	if mode == "command" { // a case command with a keeper, its leader sleeping
		dir := filepath.Dir(os.Getenv("OWNER_LOG"))
		_, err := RunCommand(context.Background(), Command{Argv: []string{"/bin/sleep", "60"}, Env: []string{MarkerRunID + "=" + os.Getenv("OWNER_RUN_ID")},
			Timeout: time.Minute, Grace: time.Second, StdoutPath: filepath.Join(dir, "out"), StderrPath: filepath.Join(dir, "err"), CaptureLimit: 1024,
			Keeper: true, RunID: os.Getenv("OWNER_RUN_ID")})
		fmt.Println("command:", err)
		return 3
	}
	s, err := Launch(context.Background(), &r, Options{LogPath: os.Getenv("OWNER_LOG"), RecipeDigest: "sha256:" + strings.Repeat("0", 64),
		RunID: os.Getenv("OWNER_RUN_ID"), Keeper: mode == "keeper"})
	if err == nil {
		err = s.WaitReady(context.Background())
	}
	if err != nil {
		fmt.Println("launch:", err)
		return 3
	}
	fmt.Printf("ready %d\n", s.PID())
	time.Sleep(time.Hour)
	return 0
}

// startOwner starts an owner and returns it once its server is ready, with the server's pid.
func startOwner(t *testing.T, mode, runID string, r *contract.LaunchRecipeDoc) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), ownerEnv+"="+mode, "OWNER_RECIPE="+string(mustJSON(t, r)),
		"OWNER_LOG="+filepath.Join(t.TempDir(), "server.log"), "OWNER_RUN_ID="+runID)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	var pid int
	if _, serr := fmt.Sscanf(line, "ready %d", &pid); err != nil || serr != nil {
		t.Fatalf("owner: %q %v", line, err)
	}
	return cmd, pid
}

// liveProcess reports whether pid is alive (not a zombie), reaping it if it is our zombie.
func liveProcess(pid int) bool {
	var ws unix.WaitStatus
	_, _ = unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || len(b) <= i+2 || b[i+2] != 'Z'
}

// livePIDs lists the live processes for which keep holds.
func livePIDs(keep func(pid int) bool) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err == nil && keep(pid) && liveProcess(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// markedPIDs lists live processes whose environment carries runID.
func markedPIDs(runID string) []int {
	return livePIDs(func(pid int) bool {
		run, _, ok := processMarkers(pid)
		return ok && run == runID
	})
}

// TestKeeperStopsServerWhenOwnerIsKilled: the owner (qualrun's stand-in) is SIGKILLed with its
// server running; the keeper stops the server and its setsid grandchild and frees the port within
// KeeperDeadline, and removes the cgroup. Without a cgroup (cgroup_accounting off) the run
// markers alone find the grandchild that left the process group.
func TestKeeperStopsServerWhenOwnerIsKilled(t *testing.T) {
	if err := becomeSubreaper(); err != nil {
		t.Skip("no child subreaper:", err)
	}
	for _, accounting := range []string{"preferred", "off"} {
		t.Run("cgroup-"+accounting, func(t *testing.T) {
			port := freePort(t)
			r := recipe(t, "setsid-child", port)
			r.Isolation.CgroupAccounting = contract.IsolationCgroupAccounting(accounting)
			if accounting == "off" {
				r.Isolation.PIDLimit = nil
			}
			runID := fmt.Sprintf("keeper-test-%s-%d", accounting, time.Now().UnixNano())
			owner, server := startOwner(t, "keeper", runID, r)
			if len(markedPIDs(runID)) < 2 {
				t.Fatalf("the server and its grandchild should carry the run marker: %v", markedPIDs(runID))
			}
			_ = owner.Process.Kill()
			_ = owner.Wait()
			deadline := time.Now().Add(KeeperDeadline(r))
			fs, _ := newFS()
			for {
				in, _ := listeners(fs, port)
				left := markedPIDs(runID)
				if !liveProcess(server) && len(in) == 0 && len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after %s: server alive %v, listeners %v, marked processes %v", KeeperDeadline(r), liveProcess(server), in, left)
				}
				time.Sleep(20 * time.Millisecond)
			}
			glob := fmt.Sprintf("/sys/fs/cgroup/unified/qualkit-%d.*", owner.Process.Pid)
			m, _ := filepath.Glob(glob)
			for time.Now().Before(deadline) && len(m) > 0 {
				time.Sleep(20 * time.Millisecond)
				m, _ = filepath.Glob(glob)
			}
			if len(m) > 0 {
				t.Errorf("cgroups left: %v", m)
			}
		})
	}
}

// TestLeftoversFoundAndReaped: an owner without a keeper is SIGKILLed; its server is a leftover,
// named by its run id, while a live run's server beside it is not; Reap removes it (and its
// cgroup), and then it is no longer found.
func TestLeftoversFoundAndReaped(t *testing.T) {
	if err := becomeSubreaper(); err != nil {
		t.Skip("no child subreaper:", err)
	}
	runID := fmt.Sprintf("leftover-test-%d", time.Now().UnixNano())
	owner, server := startOwner(t, "nokeeper", runID, recipe(t, "healthy", freePort(t)))
	_ = owner.Process.Kill()
	_ = owner.Wait()
	time.Sleep(30 * time.Millisecond) // a later start time than the orphan for the live server

	live := launch(t, recipe(t, "healthy", freePort(t)))
	defer live.Shutdown(context.Background())
	liveRun := live.opts.RunID

	find := func() (mine *Leftover) {
		t.Helper()
		found, err := FindLeftovers()
		if err != nil {
			t.Fatal(err)
		}
		for i, l := range found {
			if l.RunID == liveRun {
				t.Errorf("a live run is reported as a leftover: %s", l)
			}
			if l.RunID == runID {
				mine = &found[i]
			}
		}
		return mine
	}
	l := find()
	if l == nil {
		t.Fatalf("the dead owner's server (pid %d, run %s) is not found", server, runID)
	}
	if !strings.HasSuffix(l.Cgroup, "-"+runID) || !strings.Contains(l.String(), runID) || !strings.Contains(l.String(), fmt.Sprint(server)) {
		t.Errorf("leftover %s: want its cgroup, run id and pid %d", l, server)
	}
	if err := l.Reap(); err != nil {
		t.Fatal(err)
	}
	if liveProcess(server) {
		t.Errorf("server %d survived the reap", server)
	}
	if _, err := os.Stat(l.Cgroup); !os.IsNotExist(err) {
		t.Errorf("cgroup %s survived the reap: %v", l.Cgroup, err)
	}
	if again := find(); again != nil {
		t.Errorf("still found after the reap: %s", again)
	}
	if !liveProcess(live.PID()) {
		t.Error("the reap touched the live run's server")
	}
}

// TestKeeperKilledAloneIsRecorded: a keeper that dies while qualrun lives (killed alone, an OOM
// kill of the keeper) leaves the server unguarded from then on; the lifecycle record says so
// (unsupported names the keeper's death) rather than implying qualrun's death was covered
// throughout.
func TestKeeperKilledAloneIsRecorded(t *testing.T) {
	s, err := Launch(context.Background(), recipe(t, "healthy", freePort(t)), Options{
		LogPath: filepath.Join(t.TempDir(), "server.log"), RecipeDigest: "sha256:" + strings.Repeat("0", 64),
		RunID: fmt.Sprintf("keeper-alone-%d", time.Now().UnixNano()), Keeper: true})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	if err := s.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckListener(); err != nil {
		t.Fatal(err)
	}
	if s.keeper == nil {
		t.Fatalf("no keeper started: %v", s.unsupported)
	}
	if err := unix.Kill(s.keeper.pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-s.keeper.exited
	rec := s.Shutdown(context.Background())
	if !strings.Contains(strings.Join(rec.Unsupported, "; "), "keeper: exited during the run") {
		t.Fatalf("unsupported %q does not record the keeper's death", rec.Unsupported)
	}
	if rec.Verdict != "passed" {
		t.Errorf("verdict %s (%v): the server itself was owned and stopped", rec.Verdict, rec.Failures)
	}
}

// TestKeeperStopsGrandchildThatClearsItsEnvironment: a server's grandchild that starts a session
// of its own and clears its environment (no run markers left) is still stopped by the keeper when
// the owner is SIGKILLed: it stays in the server's cgroup, which the keeper kills and removes.
// (Without a cgroup nothing can attribute it; docs/lifecycle.md says so.)
func TestKeeperStopsGrandchildThatClearsItsEnvironment(t *testing.T) {
	if err := becomeSubreaper(); err != nil {
		t.Skip("no child subreaper:", err)
	}
	port := freePort(t)
	r := recipe(t, "setsid-child-clearenv", port)
	runID := fmt.Sprintf("keeper-clearenv-%d", time.Now().UnixNano())
	owner, server := startOwner(t, "keeper", runID, r)
	if m, _ := filepath.Glob(fmt.Sprintf("/sys/fs/cgroup/unified/qualkit-%d.*", owner.Process.Pid)); len(m) == 0 {
		t.Skip("no cgroup v2 for the server on this host")
	}
	tag := fmt.Sprintf("clearenv-grandchild-%d", port)
	grandchildren := func() []int {
		var out []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			var pid int
			if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
				continue
			}
			if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && strings.Contains(string(b), tag) && liveProcess(pid) {
				out = append(out, pid)
			}
		}
		return out
	}
	for end := time.Now().Add(5 * time.Second); len(grandchildren()) == 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("the grandchild never started")
		}
	}
	t.Cleanup(func() {
		for _, pid := range grandchildren() {
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	})
	if markedPIDs(runID) != nil && len(markedPIDs(runID)) != 1 {
		t.Fatalf("only the server should carry the run marker: %v", markedPIDs(runID))
	}
	_ = owner.Process.Kill()
	_ = owner.Wait()
	deadline := time.Now().Add(KeeperDeadline(r))
	for liveProcess(server) || len(grandchildren()) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: server alive %v, unmarked setsid grandchild %v", KeeperDeadline(r), liveProcess(server), grandchildren())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestKeeperCoversEveryMomentOfLaunch: the owner (qualrun's stand-in) is SIGKILLed at each
// moment of Launch: just after its keeper started (whose runtime may not yet catch signals), just
// after the cgroup was made, and just after the server started but before the keeper learned its
// identity; and at the same moments of a case command's start (RunCommand with a keeper). Each
// time nothing is left within KeeperDeadline: no process carrying the run's marker, no cgroup of
// the owner, no keeper. (The cgroup was made before the keeper started, and a parent-death
// signal the keeper's runtime did not yet catch killed it uncleaned: both left the cgroup
// behind, in CI's randomized interruption test; a case command's keeper started after the
// command.)
func TestKeeperCoversEveryMomentOfLaunch(t *testing.T) {
	if err := becomeSubreaper(); err != nil {
		t.Skip("no child subreaper:", err)
	}
	if _, err := planCgroup(""); err != nil {
		t.Skip("no cgroup v2:", err)
	}
	// The moments come in this order: the keeper is on guard before the cgroup exists.
	var steps []string
	launchStep = func(step string) { steps = append(steps, step) }
	defer func() { launchStep = func(string) {} }()
	s, err := Launch(context.Background(), recipe(t, "healthy", freePort(t)), Options{
		LogPath: filepath.Join(t.TempDir(), "server.log"), RecipeDigest: "sha256:" + strings.Repeat("0", 64),
		RunID: fmt.Sprintf("keeper-order-%d", time.Now().UnixNano()), Keeper: true})
	if err != nil {
		t.Fatalf("launch: %v", err)
	}
	s.Shutdown(context.Background())
	want := []string{"keeper", "cgroup", "started"}
	if !slices.Equal(steps, want) {
		t.Fatalf("Launch's moments: %v, want %v (the keeper first)", steps, want)
	}
	steps = nil
	dir := t.TempDir()
	if _, err := RunCommand(context.Background(), Command{Argv: []string{"/bin/true"}, Timeout: time.Minute, Grace: time.Second,
		StdoutPath: filepath.Join(dir, "out"), StderrPath: filepath.Join(dir, "err"), CaptureLimit: 1024, Keeper: true}); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(steps, want) {
		t.Fatalf("RunCommand's moments: %v, want %v (the keeper first)", steps, want)
	}
	for _, mode := range []string{"keeper", "command"} {
		for _, step := range want {
			t.Run(mode+"-"+step, func(t *testing.T) {
				for i := range 4 {
					r := recipe(t, "setsid-child", freePort(t))
					runID := fmt.Sprintf("keeper-step-%s-%s-%d-%d", mode, step, i, time.Now().UnixNano())
					cmd := exec.Command(os.Args[0], "-test.run=^$")
					cmd.Env = append(os.Environ(), ownerEnv+"="+mode, ownerDieAtEnv+"="+step, "OWNER_RECIPE="+string(mustJSON(t, r)),
						"OWNER_LOG="+filepath.Join(t.TempDir(), "server.log"), "OWNER_RUN_ID="+runID)
					out, err := cmd.CombinedOutput()
					if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != unix.SIGKILL {
						t.Fatalf("the owner should have killed itself at %q: %v\n%s", step, err, out)
					}
					owner := cmd.Process.Pid
					deadline := time.Now().Add(KeeperDeadline(r))
					for {
						cgs, _ := filepath.Glob(filepath.Join(filepath.Dir(mustPlan(t)), fmt.Sprintf("qualkit-%d.*", owner)))
						left, keepers := markedPIDs(runID), keepersOf(owner)
						if len(cgs) == 0 && len(left) == 0 && len(keepers) == 0 {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("owner killed at %q (try %d): after %s: cgroups %v, marked processes %v, keepers %v", step, i, KeeperDeadline(r), cgs, left, keepers)
						}
						time.Sleep(20 * time.Millisecond)
					}
				}
			})
		}
	}
}

// mustPlan is the name a cgroup of this process would have (its parent is every owner's).
func mustPlan(t *testing.T) string {
	t.Helper()
	dir, err := planCgroup("")
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// keepersOf lists the live keepers started by owner (their config names it).
func keepersOf(owner int) []int {
	return livePIDs(func(pid int) bool {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		return err == nil && strings.Contains(string(b), KeeperArg) && strings.Contains(string(b), fmt.Sprintf(`"owner_pid":%d,`, owner))
	})
}
