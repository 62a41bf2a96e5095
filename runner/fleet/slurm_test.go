package fleet

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// policy is qualrun's exit-code table as the CLI builds it (tools/internal/exitcode): 3 (internal)
// and 130 (interrupted) retry, 1 (rejected) and 2 (usage) are final.
var policy = ExitPolicy{Retry: []int{3, 130}, Final: []int{1, 2}, Usage: 2, Internal: 3}

func corpusPlan(t *testing.T) *contract.FleetPlanDoc {
	t.Helper()
	raw, err := os.ReadFile("../../schemas/testdata/fleet-plan.v1/valid/four-rows-two-pools.json")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan(raw, "four-rows-two-pools.json")
	if err != nil {
		t.Fatal(err)
	}
	return p.Doc
}

func mustPlan(t *testing.T, d *contract.FleetPlanDoc) *Plan {
	t.Helper()
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePlan(raw, "plan")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// stubQualrun stands in for qualrun run: it records its working directory's HEAD and its argv,
// writes a receipt at --output and a run directory, and exits with $STUB_RC.
const stubQualrun = `#!/bin/bash
out=
args=("$@")
for ((i=0; i<${#args[@]}; i++)); do
  if [ "${args[$i]}" = --output ]; then out=${args[$((i+1))]}; fi
done
printf '%s\n' "$(git rev-parse HEAD)" "$@" > "$STUB_LOG"
if [ "${STUB_RC:-0}" -ne 2 ]; then
  mkdir -p "$(dirname "$out")" .qualification/runs/r1
  echo '{"receipt":true}' > "$out"
  echo '{"envelope":true}' > "${out%.json}.intoto.dsse.json"
  echo evidence > .qualification/runs/r1/lifecycle.json
fi
exit "${STUB_RC:-0}"
`

type scriptRun struct {
	rc       int
	stderr   string
	argv     []string // the stub's log: HEAD, then its argv
	requeued string   // scontrol's argv, "" when not called
}

// runTask runs the generated script as Slurm would run array task row on node, against a real git
// repository, the stub qualrun and a stub scontrol that records its arguments.
func runTask(t *testing.T, script []byte, dir string, row, node string, env ...string) scriptRun {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "scontrol"), []byte("#!/bin/sh\necho \"$@\" > \"$SCONTROL_LOG\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sp := filepath.Join(dir, "job.sbatch")
	if err := os.WriteFile(sp, script, 0o755); err != nil {
		t.Fatal(err)
	}
	stubLog, ctlLog := filepath.Join(dir, "stub.log"), filepath.Join(dir, "scontrol.log")
	os.Remove(stubLog)
	os.Remove(ctlLog)
	cmd := exec.Command("bash", sp)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "TMPDIR="+dir, "STUB_LOG="+stubLog, "SCONTROL_LOG="+ctlLog,
		"SLURM_ARRAY_TASK_ID="+row, "SLURM_ARRAY_JOB_ID=77", "SLURMD_NODENAME="+node)
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err := cmd.Run()
	var r scriptRun
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		r.rc = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	r.stderr = stderr.String()
	if b, err := os.ReadFile(stubLog); err == nil {
		r.argv = strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	if b, err := os.ReadFile(ctlLog); err == nil {
		r.requeued = strings.TrimSpace(string(b))
	}
	return r
}

// TestSlurmTaskRunsItsRow runs the generated script for real (bash, git) as array task 2 on node
// N1: it checks out the pinned commit into a fresh worktree, runs qualrun with row 2's workload,
// variant and variables and the plan's key, and publishes the receipt and run directory.
func TestSlurmTaskRunsItsRow(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git(t, dir, "init", "-q", repo)
	os.MkdirAll(filepath.Join(repo, "workloads"), 0o755)
	os.WriteFile(filepath.Join(repo, "workloads", "demo.json"), []byte("{}\n"), 0o644)
	// A receipt committed at the pinned commit: not this row's, so never published with it.
	os.MkdirAll(filepath.Join(repo, "qualification", "receipts", "old"), 0o755)
	os.WriteFile(filepath.Join(repo, "qualification", "receipts", "old", "run.json"), []byte("{}\n"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "pinned")
	pinned := git(t, repo, "rev-parse", "HEAD")
	os.WriteFile(filepath.Join(repo, "later"), []byte("x"), 0o644)
	git(t, repo, "add", ".")
	git(t, repo, "commit", "-qm", "later")

	d := corpusPlan(t)
	d.Repository, d.Commit = repo, pinned
	d.Qualrun = filepath.Join(dir, "qualrun-stub")
	d.Receipts.Directory = filepath.Join(dir, "receipts")
	os.WriteFile(d.Qualrun, []byte(stubQualrun), 0o755)
	job, err := SlurmScript(mustPlan(t, d), policy, SlurmOptions{MaxRequeue: 2})
	if err != nil {
		t.Fatal(err)
	}

	r := runTask(t, job.Script, dir, "2", "N1")
	if r.rc != 0 {
		t.Fatalf("exit %d, want 0:\n%s", r.rc, r.stderr)
	}
	wantArgv := []string{pinned, "run", "workloads/demo.json", "--variant", "cpu-reference", "--host-id", "n1",
		"--output", "qualification/receipts/fleet/release-2026-12-demo/row-2/n1.json", "--var", "max_tokens=32",
		"--key", "/etc/qualkit/keys/host.key", "--password-file", "/etc/qualkit/keys/host.password"}
	if strings.Join(r.argv, "\n") != strings.Join(wantArgv, "\n") {
		t.Errorf("qualrun ran as\n%q\nwant\n%q", r.argv, wantArgv)
	}
	dest := filepath.Join(d.Receipts.Directory, d.ID, "row-2", "n1")
	for _, f := range []string{"qualification/receipts/fleet/release-2026-12-demo/row-2/n1.json", "qualification/receipts/fleet/release-2026-12-demo/row-2/n1.intoto.dsse.json", ".qualification/runs/r1/lifecycle.json"} {
		if _, err := os.Stat(filepath.Join(dest, f)); err != nil {
			t.Errorf("not published: %v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(dest, "qualification/receipts/old/run.json")); !os.IsNotExist(err) {
		t.Errorf("a receipt committed at the pinned commit was published with the row: %v", err)
	}
	if r.requeued != "" {
		t.Errorf("a passing task was requeued: %s", r.requeued)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, "qualkit-fleet.*")); len(left) != 0 {
		t.Errorf("the task's worktree was left behind: %v", left)
	}

	// The same row on the same host again: the published directory is never replaced.
	r = runTask(t, job.Script, dir, "2", "N1")
	if r.rc != policy.Internal || !strings.Contains(r.stderr, "cannot publish") {
		t.Errorf("republishing: exit %d, want %d and 'cannot publish':\n%s", r.rc, policy.Internal, r.stderr)
	}

	// A failed check (exit 1) is the row's answer: its receipt is published, nothing is requeued.
	r = runTask(t, job.Script, dir, "3", "n2", "STUB_RC=1")
	if r.rc != 1 || r.requeued != "" {
		t.Errorf("rejected run: exit %d requeue %q, want 1 and none:\n%s", r.rc, r.requeued, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(d.Receipts.Directory, d.ID, "row-3", "n2", "qualification/receipts/fleet/release-2026-12-demo/row-3/n2.json")); err != nil {
		t.Errorf("the failed row's receipt was not published: %v", err)
	}

	// An internal error (exit 3) requeues the task, until the requeue budget is spent.
	r = runTask(t, job.Script, dir, "0", "n3", "STUB_RC=3")
	if r.rc != 3 || r.requeued != "requeue 77_0" {
		t.Errorf("internal error: exit %d requeue %q, want 3 and 'requeue 77_0':\n%s", r.rc, r.requeued, r.stderr)
	}
	r = runTask(t, job.Script, dir, "1", "n3", "STUB_RC=130", "SLURM_RESTART_COUNT=2")
	if r.rc != 130 || r.requeued != "" || !strings.Contains(r.stderr, "requeued 2 times already") {
		t.Errorf("interrupted after 2 requeues: exit %d requeue %q, want 130 and none:\n%s", r.rc, r.requeued, r.stderr)
	}

	// A task index that names no row is a usage error, never retried, and runs nothing.
	r = runTask(t, job.Script, dir, "4", "n1")
	if r.rc != policy.Usage || r.requeued != "" || r.argv != nil {
		t.Errorf("row 4 of 4: exit %d requeue %q argv %q, want %d, none, nothing run", r.rc, r.requeued, r.argv, policy.Usage)
	}
}

// TestSlurmTaskRefusesAMissingCommit: a commit the repository lacks is an internal error
// (retryable: a mirror may lag), and qualrun never runs.
func TestSlurmTaskRefusesAMissingCommit(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git(t, dir, "init", "-q", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "only")
	d := corpusPlan(t)
	d.Repository = repo
	d.Commit = strings.Repeat("ab", 20)
	d.Qualrun = filepath.Join(dir, "qualrun-stub")
	d.Receipts.Directory = filepath.Join(dir, "receipts")
	os.WriteFile(d.Qualrun, []byte(stubQualrun), 0o755)
	job, err := SlurmScript(mustPlan(t, d), policy, SlurmOptions{MaxRequeue: 1})
	if err != nil {
		t.Fatal(err)
	}
	r := runTask(t, job.Script, dir, "0", "n1")
	if r.rc != policy.Internal || r.argv != nil || r.requeued != "requeue 77_0" || !strings.Contains(r.stderr, "cannot check out") {
		t.Errorf("missing commit: exit %d argv %q requeue %q:\n%s", r.rc, r.argv, r.requeued, r.stderr)
	}
}

func TestSlurmGroupsAndArraySpec(t *testing.T) {
	job, err := SlurmScript(mustPlan(t, corpusPlan(t)), policy, SlurmOptions{MaxRequeue: 2})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, g := range job.Groups {
		got = append(got, strings.Join(g.Options, " "))
	}
	want := []string{"--array=0-1 --partition=cpu-a", "--array=2-3 --partition=cpu-b --constraint=avx512"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("groups %q, want %q", got, want)
	}
	if strings.Contains(string(job.Script), "#SBATCH --array") {
		t.Error("a two-group plan's script carries one group's #SBATCH --array")
	}
	for _, tc := range []struct {
		in   []int
		want string
	}{{[]int{0}, "0"}, {[]int{0, 1, 2, 3}, "0-3"}, {[]int{0, 2, 3, 5, 7, 8}, "0,2-3,5,7-8"}} {
		if g := arraySpec(tc.in); g != tc.want {
			t.Errorf("arraySpec(%v) = %q, want %q", tc.in, g, tc.want)
		}
	}
}

// TestSlurmScriptQuotesPlanValues: a variable value with quotes, command substitution and a
// newline reaches qualrun as one argument, byte for byte, and runs nothing.
func TestSlurmScriptQuotesPlanValues(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git(t, dir, "init", "-q", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "pinned")
	d := corpusPlan(t)
	d.Repository, d.Commit = repo, git(t, repo, "rev-parse", "HEAD")
	d.Qualrun = filepath.Join(dir, "qualrun-stub")
	d.Receipts.Directory = filepath.Join(dir, "receipts")
	evil := `it's "$(touch ` + dir + `/PWNED)" ` + "`touch " + dir + "/PWNED2`" + `; touch ` + dir + `/PWNED3 'x`
	d.Rows[2].Variables = map[string]string{"prompt": evil}
	os.WriteFile(d.Qualrun, []byte(stubQualrun), 0o755)
	job, err := SlurmScript(mustPlan(t, d), policy, SlurmOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := runTask(t, job.Script, dir, "2", "n1")
	if r.rc != 0 {
		t.Fatalf("exit %d:\n%s", r.rc, r.stderr)
	}
	if !slices.Contains(r.argv, "prompt="+evil) {
		t.Errorf("the value did not arrive as one argument: %q", r.argv)
	}
	for _, f := range []string{"PWNED", "PWNED2", "PWNED3"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the plan's value ran a command: %s", f)
		}
	}
}
