package driver

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

func provenance(tols ...contract.DriverTolerance) Provenance {
	return Provenance{
		CaseID: "reference-case",
		Source: contract.DriverSource{Repository: "qualkit", Commit: strings.Repeat("a", 40), Tree: strings.Repeat("b", 40),
			TreeHash: evidence.DigestOf([]byte("tree")), Clean: true},
		Qualrun:    contract.BinaryInfo{Version: "test", Digest: evidence.DigestOf([]byte("qualrun"))},
		Tolerances: tols,
		CreatedAt:  time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC),
	}
}

func tol(metric, op string, limit float64, subject string) contract.DriverTolerance {
	return contract.DriverTolerance{Metric: contract.DriverMetric(metric), Op: contract.Op(op), Limit: limit, Subject: subject}
}

// runReference runs the reference worker isolated and evaluates its output.
func runReference(t *testing.T, contractID string, prov Provenance, args ...string) *Result {
	t.Helper()
	requireIsolation(t)
	job := referenceJob(t, contractID, args...)
	o := testOptions(t)
	out, err := Run(bg, job, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Failures) > 0 {
		t.Fatalf("failures %v\nlog:\n%s", out.Failures, logOf(t, o))
	}
	res, err := Evaluate(job, out, prov)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schemas.CheckDocument(res.Raw); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestReferenceResultsPass(t *testing.T) {
	for _, c := range []struct {
		contract string
		args     []string
		tols     []contract.DriverTolerance
		summary  string
	}{
		{"qualkit.next-token-result.v2", []string{"--mode", "next-token"},
			[]contract.DriverTolerance{tol("top_logit_margin", ">=", 0.1, "all")}, "argmax token 205 (margin 0.43279277263172755), argmax candidate engine-a"},
		{"qualkit.path-attribution.v2", []string{"--mode", "path-attribution"},
			[]contract.DriverTolerance{tol("argmax_equal", ">=", 1, "all"), tol("cosine_similarity", ">=", 0.9999, "all"), tol("top10_overlap", ">=", 9, "all"),
				tol("max_abs_error", "<=", 1e-5, "f32_blocked"), tol("max_abs_error", "<=", 0.05, "bf16_weights")},
			"reference argmax 205, attribution not_reproduced"},
		{"qualkit.layer-attribution.v2", []string{"--mode", "layer-attribution", "--candidate", "bf16_weights"},
			[]contract.DriverTolerance{tol("cosine_similarity", ">=", 0.999, "all"), tol("relative_root_mean_square_error", "<=", 0.05, "all")},
			"largest relative error growth at"},
	} {
		t.Run(c.contract, func(t *testing.T) {
			res := runReference(t, c.contract, provenance(c.tols...), c.args...)
			if res.Status != "passed" || len(res.Reasons) > 0 || !strings.HasPrefix(res.Summary, c.summary) {
				t.Fatalf("status %s reasons %v summary %q", res.Status, res.Reasons, res.Summary)
			}
			if err := jsonstrict.VerifySelfHashJSON(res.Raw, "result_sha256"); err != nil {
				t.Fatal(err)
			}
			h := res.Header
			if h.Containment.Mechanism != Mechanism || !h.Containment.HashBoundExec || !slices.Equal(h.Containment.Probe.Interfaces, []string{"lo"}) ||
				h.Model.ID != "tiny-model.json" || h.Request.InputTokenCount != 8 || len(h.Tolerances) < len(c.tols) {
				t.Fatalf("header %+v", h)
			}
			for _, o := range h.Tolerances {
				if !o.Passed || o.Observed == nil {
					t.Fatalf("outcome %+v", o)
				}
			}
		})
	}
}

// TestToleranceViolationFailsWithNumbers: a limit the f32 path cannot meet fails the result,
// names the path and shows the observed number, and the attribution points at that path.
func TestToleranceViolationFailsWithNumbers(t *testing.T) {
	res := runReference(t, "qualkit.path-attribution.v2", provenance(tol("max_abs_error", "<=", 1e-9, "f32_blocked")), "--mode", "path-attribution")
	d := res.Doc.(*contract.PathAttributionDoc)
	if res.Status != "failed" || d.Verdict.Attribution != "f32_blocked" || len(res.Reasons) != 1 {
		t.Fatalf("status %s attribution %s reasons %v", res.Status, d.Verdict.Attribution, res.Reasons)
	}
	if want := "tolerance max_abs_error <= 1e-09 failed for f32_blocked: observed 8.266341033902336e-07"; res.Reasons[0] != want {
		t.Fatalf("reason %q, want %q", res.Reasons[0], want)
	}
	// The failed result is still valid evidence: its verdict recomputes.
	if out, err := schemas.CheckDocument(res.Raw); err != nil || !out.Valid() {
		t.Fatalf("%v %v", err, out.Violations)
	}
}

// TestTamperedResultIsRefused: changing any number of a written result breaks its self-hash.
func TestTamperedResultIsRefused(t *testing.T) {
	res := runReference(t, "qualkit.next-token-result.v2", provenance(), "--mode", "next-token")
	bad := bytes.Replace(res.Raw, []byte(`"top_logit_margin": 0.43279277263172755`), []byte(`"top_logit_margin": 0.5`), 1)
	if bytes.Equal(bad, res.Raw) {
		t.Fatal("nothing replaced")
	}
	if err := jsonstrict.VerifySelfHashJSON(bad, "result_sha256"); err == nil {
		t.Fatal("tampered result verified")
	}
	out, err := schemas.CheckDocument(bad)
	if err != nil || out.Valid() {
		t.Fatalf("tampered result accepted: %v", err)
	}
}

func TestWorkerOutputMustAnswerTheRequest(t *testing.T) {
	requireIsolation(t)
	job := referenceJob(t, "qualkit.next-token-result.v2", "--mode", "next-token")
	out, err := Run(bg, job, testOptions(t))
	if err != nil || len(out.Failures) > 0 {
		t.Fatal(err, out.Failures)
	}
	for name, mutate := range map[string]func(o *Outcome){
		"other request": func(o *Outcome) {
			o.Output = bytes.Replace(o.Output, []byte(`"reference-request-1"`), []byte(`"other-request"`), 1)
		},
		"other tokens":     func(o *Outcome) { o.RequestDoc.InputTokenIDs = []int64{1} },
		"other candidates": func(o *Outcome) { o.RequestDoc.Candidates = o.RequestDoc.Candidates[:1] },
		"not json":         func(o *Outcome) { o.Output = []byte("{") },
		"no output":        func(o *Outcome) { o.Output = nil },
		"wrong contract": func(o *Outcome) {
			o.Output = bytes.Replace(o.Output, []byte(`"qualkit.next-token-result.v2"`), []byte(`"qualkit.layer-attribution.v2"`), 1)
		},
	} {
		o := *out
		o.Output = bytes.Clone(out.Output)
		req := *out.RequestDoc
		o.RequestDoc = &req
		mutate(&o)
		if _, err := Evaluate(job, &o, provenance()); !errors.Is(err, ErrOutput) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestClosedEnvironmentIsTheContractsBase(t *testing.T) {
	_, names, err := ClosedEnvironment(&workspace{}, Job{})
	if err != nil || !slices.Equal(names, rules.DriverBaseEnvironment) {
		t.Fatalf("%v\n%v\n%v", err, names, rules.DriverBaseEnvironment)
	}
}

// TestReferenceWorkerIsDeterministic: the same request gives the same bytes, run after run, and
// the reference logits are pinned (the model uses only +, -, *, / and sqrt, so every IEEE 754
// platform computes them alike).
func TestReferenceWorkerIsDeterministic(t *testing.T) {
	for _, mode := range []string{"next-token", "path-attribution", "layer-attribution"} {
		contractID := map[string]string{"next-token": "qualkit.next-token-result.v2", "path-attribution": "qualkit.path-attribution.v2",
			"layer-attribution": "qualkit.layer-attribution.v2"}[mode]
		job := referenceJob(t, contractID)
		var outs [][]byte
		for range 2 {
			dir := t.TempDir()
			gate := dir + "/gate"
			if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(job.Executable, job.Script.Abs, "--mode", mode)
			cmd.Env = []string{"QUALKIT_START_GATE=" + gate, "QUALKIT_DRIVER_REQUEST=" + job.Request.Abs, "QUALKIT_DRIVER_MODEL=" + job.Model.Abs,
				"QUALKIT_DRIVER_OUTPUT=" + dir + "/out.json", "QUALKIT_DRIVER_CONTRACT=" + contractID}
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", mode, err, b)
			}
			b, err := os.ReadFile(dir + "/out.json")
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, b)
		}
		if !bytes.Equal(outs[0], outs[1]) {
			t.Fatalf("%s: two runs differ", mode)
		}
		if mode == "next-token" && !bytes.Contains(outs[0], []byte(`"logits_sha256": "sha256:483930fb50ee06281c834719d3616cf72bb7dcf1aee1e2923cbd65e582087218"`)) {
			t.Fatalf("the reference logits changed:\n%s", outs[0])
		}
	}
}
