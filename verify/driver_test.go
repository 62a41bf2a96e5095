package verify

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

// Driver evidence for the tests: the frozen a-1 campaign, with a driver case added to its
// workload (variant cpu-a) and a path attribution result written the way the runner writes one
// (numbers from the worker, outcomes and verdict from the schemas helpers, sealed with its
// self-hash), bound by the receipt and signed again with a key made for the test.

const (
	driverReceipt = ".qualification/receipts/a-1.json"
	driverCaseID  = "reference-path"
)

// declaredPathRules are the tolerances the workload declares for the driver case.
var declaredPathRules = []contract.DriverTolerance{
	{Metric: "max_abs_error", Op: "<=", Limit: 1e-06, Subject: "all"},
	{Metric: "cosine_similarity", Op: ">=", Limit: 0.9999, Subject: "all"},
	{Metric: "top10_overlap", Op: ">=", Limit: 9, Subject: "f32_blocked"},
}

type driverSetup struct {
	// workloadRules are declared in the workload (default declaredPathRules).
	workloadRules []contract.DriverTolerance
	// resultRules are the rules the result was evaluated with (default workloadRules).
	resultRules []contract.DriverTolerance
	// edit changes the result after evaluation, before the verdict and the seal.
	edit func(d *contract.PathAttributionDoc)
	// keepVerdict keeps the verdict the edit left (otherwise it is recomputed).
	keepVerdict bool
	// afterSeal changes the sealed result (breaking its self-hash).
	afterSeal func(m map[string]any)
	// editCase changes the workload's driver case.
	editCase func(c map[string]any)
	// editResult changes the receipt's result entry.
	editResult func(r map[string]any)
	// editReceipt changes the receipt last.
	editReceipt func(rc map[string]any)
}

// failedReceipt makes the receipt's verdict failed, as a campaign with a failed required driver
// case writes it.
func failedReceipt(rc map[string]any) {
	rc["qualification"].(map[string]any)["verdict"] = "failed"
	rc["publishable"] = false
	rc["unpublishable_reasons"] = []any{"verdict failed"}
}

// driverEvidence builds the evidence and returns its root, the result's path and the key.
func driverEvidence(t *testing.T, ds driverSetup) (string, string, testKey) {
	t.Helper()
	if ds.workloadRules == nil {
		ds.workloadRules = declaredPathRules
	}
	if ds.resultRules == nil {
		ds.resultRules = ds.workloadRules
	}
	root := copyTree(t, frozenRoot)
	k := newTestKey(t)
	rc := readTree(t, filepath.Join(root, driverReceipt))
	src := rc["source"].(map[string]any)
	qualrunDigest := rc["qualification"].(map[string]any)["qualrun"].(map[string]any)["digest"].(string)

	// The result, from the path attribution corpus document.
	raw, err := os.ReadFile("../schemas/testdata/path-attribution.v2/valid/reference-path.json")
	if err != nil {
		t.Fatal(err)
	}
	var d contract.PathAttributionDoc
	if err := jsonstrict.DecodeInto(raw, &d); err != nil {
		t.Fatal(err)
	}
	d.CaseID = driverCaseID
	d.Source.Commit, d.Source.Tree, d.Source.TreeHash, d.Source.Clean = src["commit"].(string), src["tree"].(string), src["tree_hash"].(string), src["clean"].(bool)
	if om, ok := src["origin_main"].(string); ok {
		d.Source.OriginMain = &om
	} else {
		d.Source.OriginMain = nil
	}
	d.Implementation.Qualrun.Digest = qualrunDigest
	d.Implementation.Qualrun.Version = rc["qualification"].(map[string]any)["qualrun"].(map[string]any)["version"].(string)
	// The driver's files, bound as the runner binds them (script, request, model under their own
	// kinds, the executable outside the repository by path and digest): the reference worker's.
	files, sizes := map[string]string{}, map[string]int{}
	for _, f := range []string{"worker.py", "request.json", "tiny-model.json"} {
		b, err := os.ReadFile(filepath.Join(mutationRoot, "driver/drivers/reference", f))
		if err != nil {
			t.Fatal(err)
		}
		rel := "drivers/reference/" + f
		if err := os.MkdirAll(filepath.Join(root, "drivers/reference"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(root, rel), b)
		files[rel], sizes[rel] = evidence.DigestOf(b), len(b)
	}
	d.Implementation.Script.Path, d.Implementation.Script.Digest = "drivers/reference/worker.py", files["drivers/reference/worker.py"]
	d.Request.Path, d.Request.Digest, d.Request.InputTokenCount = "drivers/reference/request.json", files["drivers/reference/request.json"], 8
	d.Model.Path, d.Model.Digest = "drivers/reference/tiny-model.json", files["drivers/reference/tiny-model.json"]
	d.Model.ID = filepath.Base(d.Model.Path) // as the runner names it (driver.ModelID)
	d.Tolerances, err = rules.EvaluateTolerances(contract.PathAttribution, ds.resultRules, d.PathBody)
	if err != nil {
		t.Fatal(err)
	}
	if ds.edit != nil {
		ds.edit(&d)
	}
	if !ds.keepVerdict {
		d.Verdict = rules.PathVerdictOf(d.Containment, d.Tolerances, d.PathBody)
	}
	d.ResultSHA256 = ""
	if d.ResultSHA256, err = jsonstrict.SelfHash(d, rules.ResultSelfHashField); err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	run := runDirOf(t, root, driverReceipt)
	rel := run + "/cases/002-reference-path-r000/path-attribution.json"
	if err := os.MkdirAll(filepath.Join(root, filepath.Dir(rel)), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, rel), append(b, '\n'))
	if ds.afterSeal != nil {
		m := readTree(t, filepath.Join(root, rel))
		ds.afterSeal(m)
		writeTree(t, filepath.Join(root, rel), m)
	}

	// The workload's driver case.
	wp := filepath.Join(root, "workloads/frozen.json")
	w := readTree(t, wp)
	var ruleSet []any
	for _, r := range ds.workloadRules {
		ruleSet = append(ruleSet, map[string]any{"metric": r.Metric, "op": r.Op, "limit": r.Limit, "subject": r.Subject})
	}
	dc := map[string]any{
		"kind": "driver", "id": driverCaseID, "description": "Float32 paths against the float64 reference path.", "required": true,
		"contract": "qualkit.path-attribution.v2",
		"worker": map[string]any{"executable": d.Implementation.Executable.Path, "executable_digest": d.Implementation.Executable.Digest,
			"script": d.Implementation.Script.Path, "script_digest": d.Implementation.Script.Digest, "args": []any{"--mode", "path"}},
		"request":         map[string]any{"path": d.Request.Path, "digest": d.Request.Digest},
		"model":           map[string]any{"path": d.Model.Path, "digest": d.Model.Digest},
		"environment":     map[string]any{"OMP_NUM_THREADS": "1"},
		"isolation":       map[string]any{"network": "private_loopback", "required": true},
		"timeout_seconds": d.Containment.TimeoutSeconds, "tolerances": ruleSet,
	}
	if ds.editCase != nil {
		ds.editCase(dc)
	}
	variant := w["variants"].([]any)[0].(map[string]any)
	variant["cases"] = append(variant["cases"].([]any), dc)
	writeTree(t, wp, w)

	// The receipt: the result, its artifact, the result counts.
	res := map[string]any{"id": driverCaseID, "repetition": 0, "required": true, "status": string(d.Verdict.Status),
		"duration_seconds": d.DurationSeconds, "metrics": []any{}, "case_result": map[string]any{"path": rel, "digest": "sha256:" + strings.Repeat("0", 64)}, "details": nil}
	if ds.editResult != nil {
		ds.editResult(res)
	}
	results := append(rc["results"].([]any), res)
	rc["results"] = results
	rc["artifacts"] = append(rc["artifacts"].([]any), map[string]any{"kind": "driver_result", "path": rel, "digest": "sha256:" + strings.Repeat("0", 64), "bytes": 0},
		map[string]any{"kind": "driver_executable", "path": d.Implementation.Executable.Path, "digest": d.Implementation.Executable.Digest, "bytes": 1})
	for _, f := range []struct{ kind, path string }{{"driver_script", "drivers/reference/worker.py"}, {"driver_request", "drivers/reference/request.json"}, {"driver_model", "drivers/reference/tiny-model.json"}} {
		rc["artifacts"] = append(rc["artifacts"].([]any), map[string]any{"kind": f.kind, "path": f.path, "digest": files[f.path], "bytes": sizes[f.path]})
	}
	passed := 0
	for _, r := range results {
		if r.(map[string]any)["status"] == "passed" {
			passed++
		}
	}
	for _, m := range rc["metrics"].([]any) {
		mm := m.(map[string]any)
		mm["samples"] = len(results)
		switch mm["name"] {
		case "results_passed":
			mm["value"] = passed
		case "results_failed":
			mm["value"] = len(results) - passed
		}
	}
	if ds.editReceipt != nil {
		ds.editReceipt(rc)
	}
	writeTree(t, filepath.Join(root, driverReceipt), rc)
	reseal(t, root, driverReceipt, k)
	return root, rel, k
}

// TestDriverEvidenceVerifies: evidence written the way the runner writes it verifies cleanly, and
// the driver result is read as one (not skipped).
func TestDriverEvidenceVerifies(t *testing.T) {
	root, rel, k := driverEvidence(t, driverSetup{})
	res := verifyAt(t, root, driverReceipt, k.policy())
	if res.Verdict != Verified {
		t.Fatalf("driver evidence rejected:%s", findingsOf(res))
	}
	found := false
	for _, s := range res.Subjects {
		if s.Path == rel && s.Contract == "qualkit.path-attribution.v2" {
			found = true
		}
	}
	if !found {
		t.Errorf("the driver result is not among the subjects: %+v", res.Subjects)
	}
}

// TestDriverEvidenceRejected: each change to driver evidence is rejected by the check that owns
// it, for its reason, with the numbers in the message.
func TestDriverEvidenceRejected(t *testing.T) {
	strict := []contract.DriverTolerance{{Metric: "max_abs_error", Op: "<=", Limit: 1e-09, Subject: "all"}}
	cases := []struct {
		name   string
		setup  driverSetup
		check  Check
		reason *Reason
		also   []string
	}{
		{"result edited after sealing", driverSetup{afterSeal: func(m map[string]any) {
			m["paths"].([]any)[0].(map[string]any)["max_abs_error"] = json.Number("2.9e-07")
			m["tolerances"].([]any)[0].(map[string]any)["observed"] = json.Number("2.9e-07")
		}}, CheckSchemas, ErrSelfHash, []string{"result_sha256 is sha256:", "want sha256:"}},
		{"tolerance violated (consistently recorded)", driverSetup{workloadRules: strict, editResult: func(r map[string]any) { r["status"] = "passed" }},
			CheckTolerances, ErrToleranceFailed, []string{"case reference-path: tolerance max_abs_error <= 1e-09 failed for f32_blocked: observed 3.1e-07"}},
		{"result evaluated looser tolerances than the workload declares", driverSetup{workloadRules: strict, resultRules: declaredPathRules},
			CheckTolerances, ErrToleranceDeclared, []string{"max_abs_error <= 1e-06 for f32_blocked", "max_abs_error <= 1e-09 for all"}},
		{"looser tolerances also fail with the numbers", driverSetup{workloadRules: strict, resultRules: declaredPathRules},
			CheckTolerances, ErrToleranceFailed, []string{"tolerance max_abs_error <= 1e-09 failed for f32_reversed: observed 2.4e-07"}},
		{"outcome forged to pass", driverSetup{workloadRules: strict, keepVerdict: true, edit: func(d *contract.PathAttributionDoc) {
			for i := range d.Tolerances {
				d.Tolerances[i].Passed = true
			}
			d.Verdict = contract.PathVerdict{Status: "passed", Reasons: []string{}, Attribution: "not_reproduced"}
		}}, CheckTolerances, ErrToleranceOutcome, []string{"records observed 3.1e-07 passed true; the result's numbers give observed 3.1e-07 passed false"}},
		{"forged outcome: the verdict is recomputed", driverSetup{workloadRules: strict, keepVerdict: true, edit: func(d *contract.PathAttributionDoc) {
			for i := range d.Tolerances {
				d.Tolerances[i].Passed = true
			}
			d.Verdict = contract.PathVerdict{Status: "passed", Reasons: []string{}, Attribution: "not_reproduced"}
		}}, CheckTolerances, ErrDriverVerdict, []string{"status passed, recomputed failed"}},
		{"forged outcome: the schemas check sees the inconsistency", driverSetup{workloadRules: strict, keepVerdict: true, edit: func(d *contract.PathAttributionDoc) {
			d.Tolerances[0].Passed = true
		}}, CheckSchemas, ErrSemanticViolation, []string{"/tolerances/0/passed"}},
		{"observation rewritten", driverSetup{edit: func(d *contract.PathAttributionDoc) {
			v := 1e-08
			d.Tolerances[1].Observed = &v
		}}, CheckTolerances, ErrToleranceOutcome, []string{"records observed 1e-08 passed true; the result's numbers give observed 2.4e-07 passed true"}},
		{"attribution wrong", driverSetup{keepVerdict: true, edit: func(d *contract.PathAttributionDoc) {
			d.Verdict = rules.PathVerdictOf(d.Containment, d.Tolerances, d.PathBody)
			d.Verdict.Attribution = "f32_reversed"
		}}, CheckTolerances, ErrDriverVerdict, []string{"attribution f32_reversed, recomputed not_reproduced"}},
		{"failed campaign: the tolerance failure is shown with its numbers", driverSetup{workloadRules: strict, editReceipt: failedReceipt},
			CheckTolerances, ErrToleranceFailed, []string{"case reference-path: tolerance max_abs_error <= 1e-09 failed for f32_blocked: observed 3.1e-07"}},
		{"failed campaign: verdict failed", driverSetup{workloadRules: strict, editReceipt: failedReceipt},
			CheckTolerances, ErrVerdictFailed, nil},
		{"receipt says passed, result failed", driverSetup{workloadRules: strict, editResult: func(r map[string]any) { r["status"] = "passed" }},
			CheckTolerances, ErrResultMismatch, []string{"result \"reference-path\" is passed, its driver result says failed"}},
		{"metrics in the receipt's summary", driverSetup{editResult: func(r map[string]any) {
			r["metrics"] = []any{map[string]any{"name": "max_abs_error", "value": 3.1e-07, "unit": "1", "aggregation": "max", "direction": "lower_is_better", "formula": "max_abs_error.v1"}}
		}}, CheckTolerances, ErrResultMismatch, []string{"carries no metrics"}},
		{"workload case of another contract", driverSetup{editCase: func(c map[string]any) {
			c["contract"] = "qualkit.layer-attribution.v2"
			c["tolerances"] = []any{}
		}}, CheckTolerances, ErrResultMismatch, []string{"the result is a qualkit.path-attribution.v2, the workload declares a driver case producing qualkit.layer-attribution.v2"}},
		{"script is not the one the workload pins", driverSetup{editCase: func(c map[string]any) {
			c["worker"].(map[string]any)["script_digest"] = "sha256:" + strings.Repeat("e", 64)
		}}, CheckHashes, ErrReferenceMismatch, []string{"script drivers/reference/worker.py is sha256:", "the workload pins sha256:eeee"}},
		{"model is not the one the workload pins", driverSetup{editCase: func(c map[string]any) {
			c["model"].(map[string]any)["digest"] = "sha256:" + strings.Repeat("e", 64)
		}}, CheckHashes, ErrReferenceMismatch, []string{"model drivers/reference/tiny-model.json"}},
		{"result ran from another commit", driverSetup{edit: func(d *contract.PathAttributionDoc) {
			d.Source.Commit = strings.Repeat("a", 40)
		}}, CheckHashes, ErrReferenceMismatch, []string{"ran from commit aaaa"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, _, k := driverEvidence(t, tc.setup)
			res := verifyAt(t, root, driverReceipt, k.policy())
			if res.Verdict != Rejected {
				t.Fatal("accepted")
			}
			for _, f := range res.Findings {
				if f.Check != tc.check || !errors.Is(f, tc.reason) {
					continue
				}
				ok := true
				for _, s := range tc.also {
					ok = ok && strings.Contains(f.Error(), s)
				}
				if ok {
					return
				}
			}
			t.Errorf("want %s/%s with %q;%s", tc.check, tc.reason.Code(), tc.also, findingsOf(res))
		})
	}
}

// TestDriverResultRoleNeedsAResult: a file in the driver_result role that is another contract is
// refused.
func TestDriverResultRoleNeedsAResult(t *testing.T) {
	root, rel, k := driverEvidence(t, driverSetup{})
	req, err := os.ReadFile("../schemas/testdata/driver-request.v1/valid/reference-request.json")
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(root, rel), req)
	reseal(t, root, driverReceipt, k)
	res := verifyAt(t, root, driverReceipt, k.policy())
	for _, f := range res.Findings {
		if f.Check == CheckSchemas && errors.Is(f, ErrWrongContract) && f.File == rel {
			return
		}
	}
	t.Errorf("want wrong_contract for %s;%s", rel, findingsOf(res))
}
