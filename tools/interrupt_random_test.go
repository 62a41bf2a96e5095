package tools_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"golang.org/x/sys/unix"
)

// The randomized interruption test: a real serving campaign (qualrun run, the test binary as
// qualrun, against an owned qualsim) with a random server fault, interrupted by a random signal
// at a random moment. After every trial nothing of the server remains within the keeper's
// deadline (no process carrying the trial's model marker, no listener on its port, no keeper, no
// cgroup of that qualrun), and for every signal but SIGKILL, whatever was written under the run
// directory is bound, digest for digest, by a receipt: an interrupted one, or, when the campaign
// had ended before the signal, its ordinary receipt.
//
// QUALKIT_INTERRUPT_TRIALS sets the number of trials (default 8; 24 when CI=true) and
// QUALKIT_INTERRUPT_SEED the seed (default: from the clock, logged so a failure can be replayed).
var (
	trialFaults = []struct {
		name  string
		flags []string
	}{
		{"none", nil},
		{"ignore-sigterm", []string{"--fault", "ignore-sigterm"}},
		{"setsid-grandchild", []string{"--fault", "setsid-grandchild"}},
		{"grandchild-keeps-listener", []string{"--fault", "grandchild-keeps-listener"}},
		{"slow-shutdown", []string{"--fault", "slow-shutdown=1s"}},
		{"stall", []string{"--fault", "stall=2s@3"}},
	}
	trialSignals = []syscall.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGKILL}
)

const trialShutdownSeconds = 2

func TestInterruptionRandomized(t *testing.T) {
	trials := 8
	if os.Getenv("CI") == "true" {
		trials = 24
	}
	if v := os.Getenv("QUALKIT_INTERRUPT_TRIALS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("QUALKIT_INTERRUPT_TRIALS=%q: want a positive integer", v)
		}
		trials = n
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("QUALKIT_INTERRUPT_SEED"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("QUALKIT_INTERRUPT_SEED=%q: want an unsigned integer", v)
		}
		seed = n
	}
	t.Logf("QUALKIT_INTERRUPT_SEED=%d QUALKIT_INTERRUPT_TRIALS=%d", seed, trials)
	bin := buildBinaries(t)
	keyDir := t.TempDir()
	if out, err := exec.Command("qualrun", "keygen", "--unencrypted", "--output-prefix", keyDir+"/k").CombinedOutput(); err != nil {
		t.Fatalf("qualrun keygen: %v\n%s", err, out)
	}
	rng := rand.New(rand.NewPCG(seed, 0x51574b))
	// The trials are independent (each its own repository, port, model marker, qualrun and
	// keeper), and each mostly waits (on its delay, its server's shutdown, the residue check), so
	// trialsAtOnce of them run at a time.
	slots := make(chan struct{}, trialsAtOnce)
	for i := range trials {
		tr := trial{
			n:      i,
			fault:  rng.IntN(len(trialFaults)),
			signal: trialSignals[rng.IntN(len(trialSignals))],
			delay:  100*time.Millisecond + time.Duration(rng.Int64N(int64(3*time.Second))),
			port:   19110 + i%80,
			model:  fmt.Sprintf("m-h1-rand-%d-%d", seed%100000, i),
			bin:    bin,
			key:    keyDir + "/k.key",
		}
		name := fmt.Sprintf("%02d-%s-%s-%dms", i, trialFaults[tr.fault].name, unix.SignalName(tr.signal), tr.delay.Milliseconds())
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			slots <- struct{}{}
			defer func() { <-slots }()
			tr.run(t)
		})
	}
}

// trialsAtOnce is how many trials run at once: 8 trials one at a time took about 25 s of wall
// time on 2 cores, mostly waiting.
const trialsAtOnce = 4

type trial struct {
	n, fault, port int
	signal         syscall.Signal
	delay          time.Duration
	model, bin     string
	key            string
}

func (tr trial) run(t *testing.T) {
	repo := filepath.Join(t.TempDir(), "repo")
	tr.writeRepo(t, repo)
	cmd := exec.Command("qualrun", "run", "workloads/serve.json", "--variant", "cpu-sim", "--host-id", "rand-host",
		"--output", ".qualification/receipts/r.json", "--key", tr.key)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), "PATH="+tr.bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	qualrunPID := cmd.Process.Pid
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	var err error
	select {
	case err = <-waited: // the campaign ended before the signal
	case <-time.After(tr.delay):
		_ = cmd.Process.Signal(tr.signal)
		select {
		case err = <-waited:
		case <-time.After(90 * time.Second):
			_ = cmd.Process.Kill()
			<-waited
			t.Fatalf("qualrun did not exit within 90 s of %s\n%s", unix.SignalName(tr.signal), out.String())
		}
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	deadline := time.Now().Add(time.Duration(trialShutdownSeconds)*time.Second + 8*time.Second)
	for {
		left := append(residueOf(tr.port, tr.model), keepersOf(qualrunPID)...)
		left = append(left, cgroupsOf(qualrunPID)...)
		if len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s and the keeper's deadline: %s\nqualrun (exit %d):\n%s", unix.SignalName(tr.signal), strings.Join(left, "; "), code, out.String())
		}
		time.Sleep(25 * time.Millisecond)
	}
	runs, _ := filepath.Glob(filepath.Join(repo, ".qualification/runs/*"))
	if tr.signal == unix.SIGKILL {
		for _, f := range globAll(t, repo, ".qualification/runs/*/cases/*/rows/*.jsonl") {
			checkCompleteLines(t, f)
		}
		return
	}
	receipt := filepath.Join(repo, ".qualification/receipts/r.json")
	if len(runs) == 0 {
		if _, err := os.Stat(receipt); err == nil {
			t.Fatalf("a receipt without a run directory")
		}
		// Nothing was written. Exit 130 when qualrun caught the signal; a signal that arrived before
		// qualrun installed its handlers (a loaded machine) ends it the default way, harmlessly.
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		early := ws.Signaled() || strings.Contains(out.String(), "SIGQUIT: quit")
		if code != 130 && !early {
			t.Fatalf("interrupted in preflight: exit %d, want 130\n%s", code, out.String())
		}
		return
	}
	b, err := os.ReadFile(receipt)
	if err != nil {
		t.Fatalf("evidence was written (%s) but no receipt binds it: %v\nqualrun (exit %d):\n%s", runs[0], err, code, out.String())
	}
	var rc contract.ReceiptDoc
	if err := json.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	if res, err := schemas.CheckDocument(b); err != nil || !res.Valid() {
		t.Fatalf("the receipt does not validate: %v %v", err, res.Violations)
	}
	t.Logf("receipt verdict %s, exit %d", rc.Qualification.Verdict, code)
	switch v := rc.Qualification.Verdict; {
	case v == "interrupted":
		if code != 130 || rc.Publishable || rc.Qualification.Interruption == nil || rc.Qualification.Interruption.Signal != unix.SignalName(tr.signal) {
			t.Fatalf("interrupted receipt: exit %d, publishable %v, interruption %+v; want 130, false, %s", code, rc.Publishable, rc.Qualification.Interruption, unix.SignalName(tr.signal))
		}
		// The verifier reads it and rejects it as interrupted, not as malformed or tampered.
		vc := exec.Command("qualverify", "verify", ".qualification/receipts/r.json", "--key", strings.TrimSuffix(tr.key, ".key")+".pub")
		vc.Dir = repo
		vout, _ := vc.CombinedOutput()
		for _, want := range []string{"[interrupted]", "verdict  rejected"} {
			if !strings.Contains(string(vout), want) {
				t.Errorf("qualverify verify does not say %q:\n%s", want, vout)
			}
		}
		for _, bad := range []string{"schemas        failed", "hashes         failed", "signature      failed"} {
			if strings.Contains(string(vout), bad) {
				t.Errorf("qualverify verify: %q:\n%s", bad, vout)
			}
		}
	case code == 130:
		t.Fatalf("exit 130 with a %s receipt", v)
	}
	bound := map[string]string{}
	for _, a := range rc.Artifacts {
		bound[a.Path] = a.Digest
	}
	for _, f := range globAll(t, runs[0], "**") {
		rel, _ := filepath.Rel(repo, f)
		d, _, err := evidence.DigestFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := bound[rel]; !ok {
			t.Errorf("%s was written but the receipt does not bind it", rel)
		} else if got != d {
			t.Errorf("%s: the receipt binds %s, the file is %s", rel, got, d)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, ".qualification/receipts/r.intoto.dsse.json")); err != nil {
		t.Errorf("the receipt is not signed: %v\n%s", err, out.String())
	}
}

// globAll lists the regular files under root matching pattern ("**": every file).
func globAll(t *testing.T, root, pattern string) []string {
	t.Helper()
	if pattern != "**" {
		m, _ := filepath.Glob(filepath.Join(root, pattern))
		return m
	}
	var out []string
	_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func checkCompleteLines(t *testing.T, f string) {
	t.Helper()
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		t.Fatalf("%s ends in a partial line", f)
	}
	for i, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		if line == "" && len(b) == 0 {
			continue
		}
		if !json.Valid([]byte(line)) {
			t.Fatalf("%s: line %d is not JSON", f, i+1)
		}
	}
}

// keepersOf lists live keepers started by the qualrun with pid owner.
func keepersOf(owner int) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	want := fmt.Sprintf(`"owner_pid":%d,`, owner)
	for _, e := range entries {
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !strings.Contains(string(raw), lifecycle.KeeperArg) || !strings.Contains(string(raw), want) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, "keeper "+e.Name()+" is alive")
	}
	return out
}

// cgroupsOf lists the cgroups the qualrun with pid owner created that still exist.
func cgroupsOf(owner int) []string {
	var out []string
	for _, root := range []string{"/sys/fs/cgroup/unified", "/sys/fs/cgroup"} {
		m, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("qualkit-%d.*", owner)))
		for _, d := range m {
			out = append(out, "cgroup "+d+" remains")
		}
	}
	return out
}

func (tr trial) writeRepo(t *testing.T, repo string) {
	t.Helper()
	args := append([]string{"qualsim", "--listen", fmt.Sprintf("127.0.0.1:%d", tr.port), "--model", tr.model,
		"--ttft", "2ms", "--token-interval", "20ms", "--shutdown-grace", "500ms"}, trialFaults[tr.fault].flags...)
	recipe := map[string]any{
		"schema": "qualkit.launch-recipe.v1", "id": "sim-" + tr.model, "command": args, "working_directory": ".",
		"environment": map[string]string{}, "environment_passthrough": []string{},
		"base_url": fmt.Sprintf("http://127.0.0.1:%d", tr.port), "model_id": tr.model,
		"readiness":               map[string]any{"path": "/v1/models", "poll_interval_ms": 20, "probe_timeout_ms": 1000},
		"startup_timeout_seconds": 20, "shutdown_timeout_seconds": trialShutdownSeconds, "acceptable_exit_codes": []int{0},
		"isolation": map[string]any{"pid_limit": nil, "cgroup_accounting": "preferred"},
	}
	var prompts []map[string]string
	for i := range 4 {
		prompts = append(prompts, map[string]string{"id": fmt.Sprintf("p-%d", i), "text": fmt.Sprintf("Prompt %d.", i)})
	}
	serving := func(id string) map[string]any {
		return map[string]any{
			"kind": "serving", "id": id, "description": "A row an interruption may cut.", "required": true,
			"launch": "workloads/launch/sim.json", "api": "chat", "stream": true,
			"corpus":      map[string]any{"source": "inline", "prompts": prompts},
			"concurrency": []int{1, 2}, "repetitions": 2, "warmup_requests": 1, "max_tokens": 8,
			"sampling":                map[string]any{"temperature": 0, "seed": 3, "ignore_eos": true},
			"request_timeout_seconds": 30, "timeout_seconds": 600, "slo": map[string]any{"ttft_ms": 5000},
			"output_assertions": []any{},
		}
	}
	workload := map[string]any{
		"schema": "qualkit.workload.v1", "id": "h1-rand", "kind": "serving", "description": "Randomized interruption.",
		"determinism": map[string]any{"seed": 7, "seed_delivery": "not_applicable", "repetitions": 1, "case_order": "declared",
			"max_parallel_cases": 1, "network_access": "loopback"},
		"variables": []any{},
		"variants": []any{map[string]any{"id": "cpu-sim", "description": "qualsim.", "backend": "cpu", "device_requirement": "none",
			"skip_policy": "allow", "effective_config": map[string]any{}, "cases": []any{serving("first"), serving("second")}}},
		"comparison_policy": map[string]any{"mode": "same_environment_performance", "variant_pairs": []any{}, "backend_pairs": []any{}, "metric_rules": []any{}},
	}
	write := func(rel string, v any) {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(repo, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("workloads/serve.json", workload)
	write("workloads/launch/sim.json", recipe)
	if err := os.WriteFile(filepath.Join(repo, ".gitignore"), []byte(".qualification/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) {
		c := exec.Command("git", args...)
		c.Dir = repo
		c.Env = append(os.Environ(), "GIT_AUTHOR_NAME=qualkit", "GIT_AUTHOR_EMAIL=qualkit@example.invalid",
			"GIT_COMMITTER_NAME=qualkit", "GIT_COMMITTER_EMAIL=qualkit@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "qualification repository")
	git("clone", "-q", "--bare", repo, repo+".origin.git")
	git("remote", "add", "origin", repo+".origin.git")
	git("fetch", "-q", "origin")
}
