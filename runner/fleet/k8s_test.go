package fleet

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

func decodeJobs(t *testing.T, raw []byte) []batchv1.Job {
	t.Helper()
	var l KubernetesList
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		t.Fatal(err)
	}
	if l.APIVersion != "v1" || l.Kind != "List" {
		t.Errorf("not a v1 List: %s %s", l.APIVersion, l.Kind)
	}
	return l.Items
}

// TestKubernetesIndexedJobs: one Indexed Job per Kubernetes selector, each with the constraints
// the Job API enforces for per-index backoff and pod failure policies (restartPolicy Never,
// completionMode Indexed, completions = the group's rows), the exit codes of the policy, the
// plan's image, namespace, node selector, limits, key Secret and receipts claim.
func TestKubernetesIndexedJobs(t *testing.T) {
	raw, err := KubernetesJobs(mustPlan(t, corpusPlan(t)), policy)
	if err != nil {
		t.Fatal(err)
	}
	jobs := decodeJobs(t, raw)
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2 (two selectors)", len(jobs))
	}
	for i, j := range jobs {
		s := j.Spec
		if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 2 || *s.BackoffLimitPerIndex != 2 || s.BackoffLimit != nil {
			t.Errorf("job %d: spec %+v", i, s)
		}
		if s.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
			t.Errorf("job %d: restartPolicy %s: a podFailurePolicy needs Never", i, s.Template.Spec.RestartPolicy)
		}
		var fail, count []int32
		for _, r := range s.PodFailurePolicy.Rules {
			switch r.Action {
			case batchv1.PodFailurePolicyActionFailIndex:
				fail = r.OnExitCodes.Values
			case batchv1.PodFailurePolicyActionCount:
				count = r.OnExitCodes.Values
			}
		}
		if !slices.Equal(fail, []int32{1, 2}) || !slices.Equal(count, []int32{3, 130}) {
			t.Errorf("job %d: FailIndex on %v, Count on %v; want [1 2] and [3 130]", i, fail, count)
		}
		c := s.Template.Spec.Containers[0]
		if c.Image != "registry.example.com/qualkit/runner:0.9.0" || j.Namespace != "qualkit" {
			t.Errorf("job %d: image %s namespace %s", i, c.Image, j.Namespace)
		}
		if s.Template.Spec.Volumes[0].Secret.SecretName != "qualkit-host-key" || s.Template.Spec.Volumes[1].PersistentVolumeClaim.ClaimName != "qualkit-receipts" {
			t.Errorf("job %d: volumes %+v", i, s.Template.Spec.Volumes)
		}
	}
	if got := jobs[1].Spec.Template.Spec.NodeSelector["qualkit.dev/pool"]; got != "cpu-b" {
		t.Errorf("job 1 node selector %q", got)
	}
	if q := jobs[1].Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]; q.String() != "8Gi" {
		t.Errorf("job 1 memory limit %s", q.String())
	}
	if script := jobs[1].Spec.Template.Spec.Containers[0].Command[2]; strings.Contains(script, "\n    0) ") || !strings.Contains(script, "\n    2) ") {
		t.Errorf("job 1's row table should hold rows 2 and 3 only:\n%s", script)
	}
	if jobs[0].Annotations["qualkit.dev/rows"] != "0 1" || jobs[1].Annotations["qualkit.dev/rows"] != "2 3" {
		t.Errorf("rows %q %q", jobs[0].Annotations["qualkit.dev/rows"], jobs[1].Annotations["qualkit.dev/rows"])
	}
}

// TestKubernetesPodRunsItsRow runs the container command of the second Job as the pod with
// completion index 1 would run it (bash, real git, the stub qualrun): it is plan row 3.
func TestKubernetesPodRunsItsRow(t *testing.T) {
	dir := t.TempDir()
	repo := filepath.Join(dir, "repo")
	git(t, dir, "init", "-q", repo)
	git(t, repo, "commit", "-q", "--allow-empty", "-m", "pinned")
	d := corpusPlan(t)
	d.Repository, d.Commit = repo, git(t, repo, "rev-parse", "HEAD")
	d.Qualrun = filepath.Join(dir, "qualrun-stub")
	d.Receipts.Directory = filepath.Join(dir, "receipts")
	os.WriteFile(d.Qualrun, []byte(stubQualrun), 0o755)
	raw, err := KubernetesJobs(mustPlan(t, d), policy)
	if err != nil {
		t.Fatal(err)
	}
	c := decodeJobs(t, raw)[1].Spec.Template.Spec.Containers[0]
	stubLog := filepath.Join(dir, "stub.log")
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=1", "NODE_NAME=gpu-node-7", "TMPDIR="+dir, "STUB_LOG="+stubLog)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	log, _ := os.ReadFile(stubLog)
	if !strings.Contains(string(log), "qualification/receipts/fleet/release-2026-12-demo/row-3/gpu-node-7.json") {
		t.Errorf("the pod with index 1 did not run row 3 on gpu-node-7:\n%s", log)
	}
	cmd = exec.Command(c.Command[0], c.Command[1:]...)
	cmd.Env = append(os.Environ(), "JOB_COMPLETION_INDEX=2", "NODE_NAME=gpu-node-7", "TMPDIR="+dir, "STUB_LOG="+stubLog)
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != policy.Usage {
		t.Errorf("index 2 of a 2-completion Job: %v, want exit %d", err, policy.Usage)
	}
}

func TestKubernetesNeedsItsSection(t *testing.T) {
	d := corpusPlan(t)
	d.Kubernetes = nil
	if _, err := KubernetesJobs(mustPlan(t, d), policy); err == nil || !strings.Contains(err.Error(), "no kubernetes section") {
		t.Errorf("err = %v", err)
	}
}
