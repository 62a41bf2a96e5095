package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

var updateSelfHash = flag.Bool("update-selfhash", false, "rewrite result_sha256 in the valid driver result corpus documents")

// TestDriverCorpusSelfHashes: every valid driver result in the corpus carries its own self-hash.
// With -update-selfhash the recorded value is replaced by the computed one (nothing else changes).
func TestDriverCorpusSelfHashes(t *testing.T) {
	n := 0
	for _, name := range contract.DriverResults {
		files, _ := filepath.Glob(filepath.Join("testdata", name, "valid", "*.json"))
		for _, f := range files {
			n++
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := jsonstrict.Parse(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want, err := jsonstrict.SelfHash(doc, rules.ResultSelfHashField)
			if err != nil {
				t.Fatal(err)
			}
			got := doc.(map[string]any)[rules.ResultSelfHashField].(string)
			if got == want {
				continue
			}
			if !*updateSelfHash {
				t.Errorf("%s: result_sha256 %s, computed %s (run with -update-selfhash)", f, got, want)
				continue
			}
			fixed := bytes.Replace(data, []byte(`"`+got+`"`), []byte(`"`+want+`"`), 1)
			if err := os.WriteFile(f, fixed, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n < len(contract.DriverResults) {
		t.Errorf("only %d valid driver results in the corpus", n)
	}
}

// loadCorpus reads a corpus document as a generic tree.
func loadCorpus(t *testing.T, contractID, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", contractID, "valid", file))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// reseal recomputes a driver result's self-hash after a mutation, so a test sees only the rule
// it breaks.
func reseal(t *testing.T, doc map[string]any) {
	t.Helper()
	tree, err := jsonstrict.Parse(roundTrip(t, doc))
	if err != nil {
		t.Fatal(err)
	}
	h, err := jsonstrict.SelfHash(tree, rules.ResultSelfHashField)
	if err != nil {
		t.Fatal(err)
	}
	doc[rules.ResultSelfHashField] = h
}

func TestTokenIDsDigestIsCanonical(t *testing.T) {
	ids := []int64{1, 17, 42, 5, 0, 2147483647}
	c, err := jsonstrict.Canonical(ids)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rules.TokenIDsDigest(ids), evidence.DigestOf(c); got != want {
		t.Errorf("TokenIDsDigest = %s, Canonical digest %s", got, want)
	}
	if rules.TokenIDsDigest([]int64{1, 2}) == rules.TokenIDsDigest([]int64{2, 1}) {
		t.Error("order must matter")
	}
	if got, want := rules.TokenIDsDigest([]int64{}), evidence.DigestOf([]byte("[]")); got != want {
		t.Errorf("empty list: %s, want %s", got, want)
	}
}

// TestSelfHashOfStructEqualsTree: the runner hashes its Go struct, qualverify the parsed file;
// both must give one digest, and VerifySelfHashJSON names both digests on a mismatch.
func TestSelfHashOfStructEqualsTree(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", contract.PathAttribution, "valid", "reference-path.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d contract.PathAttributionDoc
	if err := jsonstrict.DecodeInto(data, &d); err != nil {
		t.Fatal(err)
	}
	fromStruct, err := jsonstrict.SelfHash(d, rules.ResultSelfHashField)
	if err != nil {
		t.Fatal(err)
	}
	if fromStruct != d.ResultSHA256 {
		t.Errorf("struct self-hash %s, recorded %s", fromStruct, d.ResultSHA256)
	}
	if err := jsonstrict.VerifySelfHashJSON(data, rules.ResultSelfHashField); err != nil {
		t.Errorf("recorded self-hash: %v", err)
	}
	tampered := bytes.Replace(data, []byte(`"max_abs_error": 3.1e-07`), []byte(`"max_abs_error": 3.2e-07`), 1)
	if bytes.Equal(tampered, data) {
		t.Fatal("the tampering did not apply")
	}
	err = jsonstrict.VerifySelfHashJSON(tampered, rules.ResultSelfHashField)
	if !errors.Is(err, jsonstrict.ErrSelfHashMismatch) || !strings.Contains(err.Error(), d.ResultSHA256) {
		t.Fatalf("tampered: %v", err)
	}
	tree, _ := jsonstrict.Parse(tampered)
	want, _ := jsonstrict.SelfHash(tree, rules.ResultSelfHashField)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("the message %q does not name the computed digest %s", err, want)
	}
}

func f64(v float64) *float64 { return &v }

func TestEvaluateTolerances(t *testing.T) {
	body := contract.PathBody{ReferencePath: "f64_reference", ReferenceArgmax: 7, Paths: []contract.PathComparison{
		{ID: "p-a", Argmax: 7, CosineSimilarity: 0.99, MaxAbsError: 3e-7, MeanAbsError: 1e-8, Top10Overlap: 10},
		{ID: "p-b", Argmax: 8, CosineSimilarity: 0.5, MaxAbsError: 2e-9, MeanAbsError: 1e-9, Top10Overlap: 7},
	}}
	ruleSet := []contract.DriverTolerance{
		{Metric: rules.MetricMaxAbsError, Op: rules.OpAtMost, Limit: 1e-8, Subject: rules.SubjectAll},
		{Metric: rules.MetricTop10Overlap, Op: rules.OpAtLeast, Limit: 9, Subject: "p-b"},
		{Metric: rules.MetricArgmaxEqual, Op: rules.OpAtLeast, Limit: 1, Subject: rules.SubjectAll},
		{Metric: rules.MetricCosineSimilarity, Op: rules.OpAtLeast, Limit: 0.9, Subject: "p-missing"},
	}
	got, err := rules.EvaluateTolerances("qualkit."+contract.PathAttribution, ruleSet, body)
	if err != nil {
		t.Fatal(err)
	}
	want := []contract.ToleranceOutcome{
		{Metric: rules.MetricMaxAbsError, Op: rules.OpAtMost, Limit: 1e-8, Subject: "p-a", Observed: f64(3e-7), Passed: false},
		{Metric: rules.MetricMaxAbsError, Op: rules.OpAtMost, Limit: 1e-8, Subject: "p-b", Observed: f64(2e-9), Passed: true},
		{Metric: rules.MetricTop10Overlap, Op: rules.OpAtLeast, Limit: 9, Subject: "p-b", Observed: f64(7), Passed: false},
		{Metric: rules.MetricArgmaxEqual, Op: rules.OpAtLeast, Limit: 1, Subject: "p-a", Observed: f64(1), Passed: true},
		{Metric: rules.MetricArgmaxEqual, Op: rules.OpAtLeast, Limit: 1, Subject: "p-b", Observed: f64(0), Passed: false},
		{Metric: rules.MetricCosineSimilarity, Op: rules.OpAtLeast, Limit: 0.9, Subject: "p-missing", Observed: nil, Passed: false},
	}
	if !reflect.DeepEqual(got, want) {
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		t.Errorf("outcomes\n got %s\nwant %s", gb, wb)
	}
	if msg := rules.ToleranceFailure(got[0]); msg != "tolerance max_abs_error <= 1e-08 failed for p-a: observed 3e-07" {
		t.Errorf("message %q", msg)
	}
	if msg := rules.ToleranceFailure(got[5]); !strings.Contains(msg, "nothing observed") {
		t.Errorf("message %q", msg)
	}
	if a := rules.PathAttributionOf(body, got); a != "p-a" {
		t.Errorf("attribution %s, want p-a (fails max_abs_error)", a)
	}
	if a := rules.PathAttributionOf(body, nil); a != "p-b" {
		t.Errorf("attribution without tolerances %s, want p-b (argmax differs)", a)
	}
	body.Paths[1].Argmax = 7
	if a := rules.PathAttributionOf(body, nil); a != rules.NotReproduced {
		t.Errorf("attribution %s, want %s", a, rules.NotReproduced)
	}

	nt, err := rules.EvaluateTolerances(contract.NextTokenResult, []contract.DriverTolerance{{Metric: rules.MetricTopLogitMargin, Op: rules.OpAtLeast, Limit: 0.5, Subject: rules.SubjectAll}}, contract.NextTokenBody{Oracle: contract.Oracle{TopLogitMargin: 0.375}})
	if err != nil || len(nt) != 1 || nt[0].Subject != rules.SubjectAll || nt[0].Passed || *nt[0].Observed != 0.375 {
		t.Errorf("next-token: %+v %v", nt, err)
	}
	if msg := rules.ToleranceFailure(nt[0]); msg != "tolerance top_logit_margin >= 0.5 failed: observed 0.375" {
		t.Errorf("message %q", msg)
	}
	layer := contract.LayerBody{Boundaries: []contract.Boundary{{Name: "embedding", RelativeRootMeanSquareError: 1e-6}, {Index: 1, Name: "final", RelativeRootMeanSquareError: 3e-6}}}
	lo, err := rules.EvaluateTolerances(contract.LayerAttribution, []contract.DriverTolerance{{Metric: rules.MetricRelativeRMSE, Op: rules.OpAtMost, Limit: 2e-6, Subject: rules.SubjectAll}}, &layer)
	if err != nil || len(lo) != 2 || !lo[0].Passed || lo[1].Passed || lo[1].Subject != "final" {
		t.Errorf("layer: %+v %v", lo, err)
	}

	for name, tc := range map[string]struct {
		contractID string
		rule       contract.DriverTolerance
		body       any
	}{
		"metric of another contract": {contract.PathAttribution, contract.DriverTolerance{Metric: rules.MetricTopLogitMargin, Op: rules.OpAtLeast, Limit: 0, Subject: rules.SubjectAll}, body},
		"next-token subject":         {contract.NextTokenResult, contract.DriverTolerance{Metric: rules.MetricTopLogitMargin, Op: rules.OpAtLeast, Limit: 0, Subject: "p-a"}, contract.NextTokenBody{}},
		"bad op":                     {contract.PathAttribution, contract.DriverTolerance{Metric: rules.MetricMaxAbsError, Op: "<", Limit: 0, Subject: rules.SubjectAll}, body},
		"body of another contract":   {contract.LayerAttribution, contract.DriverTolerance{Metric: rules.MetricMaxAbsError, Op: rules.OpAtMost, Limit: 0, Subject: rules.SubjectAll}, body},
		"not a driver contract":      {contract.CaseResult, contract.DriverTolerance{Metric: rules.MetricMaxAbsError, Op: rules.OpAtMost, Limit: 0, Subject: rules.SubjectAll}, body},
	} {
		if _, err := rules.EvaluateTolerances(tc.contractID, []contract.DriverTolerance{tc.rule}, tc.body); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestToleranceHolds(t *testing.T) {
	for _, tc := range []struct {
		v     *float64
		op    string
		limit float64
		want  bool
	}{
		{f64(1), rules.OpAtMost, 1, true}, {f64(1.0000001), rules.OpAtMost, 1, false}, {f64(1), rules.OpAtLeast, 1, true},
		{f64(0.5), rules.OpAtLeast, 1, false}, {nil, rules.OpAtMost, 1, false}, {f64(math.NaN()), rules.OpAtMost, 1, false},
		{f64(math.NaN()), rules.OpAtLeast, 1, false}, {f64(0), "==", 0, false},
	} {
		if got := rules.ToleranceHolds(tc.v, tc.op, tc.limit); got != tc.want {
			t.Errorf("%v %s %v = %v, want %v", tc.v, tc.op, tc.limit, got, tc.want)
		}
	}
}

func TestDriverStatus(t *testing.T) {
	zero := int64(0)
	good := contract.Containment{Probe: contract.Probe{Interfaces: []string{"lo"}, OutsideUnreachable: true, LoopbackBind: true, HostLoopbackUnreachable: true}, HashBoundExec: true, ExitCode: &zero, Residue: []string{}, TimeoutSeconds: 5}
	if s, r := rules.DriverStatus(good, []contract.ToleranceOutcome{{Passed: true}}); s != contract.DriverStatusPassed || len(r) != 0 {
		t.Fatalf("good containment: %s %v", s, r)
	}
	three := int64(3)
	for name, tc := range map[string]struct {
		mutate func(c *contract.Containment)
		want   string
	}{
		"second interface":  {func(c *contract.Containment) { c.Probe.Interfaces = []string{"lo", "eth0"} }, "want only lo"},
		"outside reachable": {func(c *contract.Containment) { c.Probe.OutsideUnreachable = false }, "outside address"},
		"host loopback":     {func(c *contract.Containment) { c.Probe.HostLoopbackUnreachable = false }, "host's loopback"},
		"no loopback bind":  {func(c *contract.Containment) { c.Probe.LoopbackBind = false }, "bind"},
		"not hash-bound":    {func(c *contract.Containment) { c.HashBoundExec = false }, "hashed bytes"},
		"timed out":         {func(c *contract.Containment) { c.TimedOut, c.ElapsedSeconds = true, 5.25 }, "overran its runtime of 5 s (terminated after 5.25 s)"},
		"signal":            {func(c *contract.Containment) { c.ExitCode = nil }, "signal"},
		"exit code":         {func(c *contract.Containment) { c.ExitCode = &three }, "exit code 3"},
		"residue":           {func(c *contract.Containment) { c.Residue = []string{"pid 4242 (python3)"} }, "pid 4242 (python3)"},
	} {
		c := good
		c.Probe.Interfaces = []string{"lo"}
		tc.mutate(&c)
		s, r := rules.DriverStatus(c, nil)
		if s != contract.DriverStatusFailed || len(r) != 1 || !strings.Contains(r[0], tc.want) {
			t.Errorf("%s: %s %q, want failed with %q", name, s, r, tc.want)
		}
	}
	s, r := rules.DriverStatus(good, []contract.ToleranceOutcome{{Metric: rules.MetricMaxAbsError, Op: rules.OpAtMost, Limit: 1e-9, Subject: "f32_blocked", Observed: f64(3.1e-7)}})
	if s != contract.DriverStatusFailed || len(r) != 1 || r[0] != "tolerance max_abs_error <= 1e-09 failed for f32_blocked: observed 3.1e-07" {
		t.Errorf("tolerance: %s %q", s, r)
	}
}

func TestLargestGrowthAndArgmaxCandidate(t *testing.T) {
	bs := []contract.Boundary{
		{Index: 0, Name: "a", RelativeRootMeanSquareError: 0.25},
		{Index: 1, Name: "b", RelativeRootMeanSquareError: 0.5},
		{Index: 2, Name: "c", RelativeRootMeanSquareError: 0.75},
		{Index: 3, Name: "d", RelativeRootMeanSquareError: 0.5},
	}
	if g := rules.LargestGrowth(bs); g != (contract.Growth{Index: 0, Name: "a", RelativeRootMeanSquareErrorDelta: 0.25}) {
		t.Errorf("ties go to the first: %+v", g)
	}
	bs[2].RelativeRootMeanSquareError = 1.5
	if g := rules.LargestGrowth(bs); g != (contract.Growth{Index: 2, Name: "c", RelativeRootMeanSquareErrorDelta: 1}) {
		t.Errorf("growth %+v", g)
	}
	if g := rules.LargestGrowth(nil); g != (contract.Growth{}) {
		t.Errorf("no boundaries: %+v", g)
	}
	o := contract.Oracle{TopTokens: []contract.TopToken{{TokenID: 7, Logit: 2}, {TokenID: 9, Logit: 1}},
		CandidateTokens: []contract.CandidateToken{{Label: "engine-a", TokenID: 7}, {Label: "engine-b", TokenID: 9}}}
	if c := rules.ArgmaxCandidate(o); c != "engine-a" {
		t.Errorf("argmax candidate %s", c)
	}
	o.CandidateTokens[1].TokenID = 7
	if c := rules.ArgmaxCandidate(o); c != rules.ArgmaxNeither {
		t.Errorf("two candidates on the argmax: %s, want neither", c)
	}
	o.CandidateTokens = o.CandidateTokens[:0]
	if c := rules.ArgmaxCandidate(o); c != rules.ArgmaxNeither {
		t.Errorf("no candidates: %s", c)
	}
	if m := rules.TopLogitMargin(o.TopTokens); m != 1 {
		t.Errorf("margin %v", m)
	}
	if m := rules.TopLogitMargin(o.TopTokens[:1]); m != 0 {
		t.Errorf("margin of one token %v", m)
	}
}

// TestDriverSemanticRules breaks one rule per case on a valid corpus document (re-sealing a
// result's self-hash, so only that rule fails) and expects a semantic violation at the pointer,
// wrapping the named sentinel too when one is given.
func TestDriverSemanticRules(t *testing.T) {
	type tc struct {
		name, contractID, file, pointer string
		sentinel                        error
		mutate                          func(t *testing.T, d map[string]any)
	}
	nt, pa, la := contract.NextTokenResult, contract.PathAttribution, contract.LayerAttribution
	wl := "workload"
	dc := "/variants/0/cases/0"
	cases := []tc{
		// Driver cases in a workload and driver specs.
		{"secret-looking env", wl, "", dc + "/environment/HF_TOKEN", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/environment/HF_TOKEN", "hf_x") }},
		{"api key env", wl, "", dc + "/environment/OPENAI_APIKEY", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/environment/OPENAI_APIKEY", "x") }},
		{"auth env", wl, "", dc + "/environment/PROXY_AUTHORIZATION", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/environment/PROXY_AUTHORIZATION", "x") }},
		{"runner-owned offline flag", wl, "", dc + "/environment/HF_HUB_OFFLINE", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/environment/HF_HUB_OFFLINE", "0") }},
		{"runner-owned QUALKIT_ name", wl, "", dc + "/environment/QUALKIT_START_GATE", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/environment/QUALKIT_START_GATE", "/tmp/g") }},
		{"placeholder inside an arg", wl, "", dc + "/worker/args/1", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/worker/args/1", "next-${python}") }},
		{"undeclared placeholder", wl, "", dc + "/worker/args/1", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/worker/args/1", "${mode}") }},
		{"placeholder in the request path", wl, "", dc + "/request/path", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/request/path", "${request}") }},
		{"metric of another contract", wl, "", dc + "/tolerances/0", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/tolerances/0/metric", "max_abs_error") }},
		{"next-token subject not all", wl, "", dc + "/tolerances/0", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/tolerances/0/subject", "f32_blocked") }},
		{"tolerance repeated", wl, "", "/variants/0/cases/1/tolerances/1", nil, func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/1/tolerances/1/metric", "max_abs_error")
			set(t, d, "/variants/0/cases/1/tolerances/1/op", "<=")
		}},
		{"variable used by nothing once the driver case stops using it", wl, "", "/variables/0/name", nil, func(t *testing.T, d map[string]any) { set(t, d, dc+"/worker/executable", "/usr/bin/python3") }},
		{"spec env secret", contract.DriverSpec, "reference-next-token.json", "/environment/GITHUB_TOKEN", nil, func(t *testing.T, d map[string]any) { set(t, d, "/environment/GITHUB_TOKEN", "x") }},
		{"spec placeholder inside", contract.DriverSpec, "reference-next-token.json", "/worker/executable", nil, func(t *testing.T, d map[string]any) { set(t, d, "/worker/executable", "/opt/${venv}/bin/python3") }},
		{"spec reserved subject", contract.DriverSpec, "pinned-executable-optional-isolation.json", "/tolerances/2/subject", nil, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/2/subject", "not_reproduced") }},
		// Requests.
		{"candidate label repeats", contract.DriverRequest, "reference-request.json", "/candidates/1/label", nil, func(t *testing.T, d map[string]any) { set(t, d, "/candidates/1/label", "engine-a") }},
		{"candidate token repeats", contract.DriverRequest, "reference-request.json", "/candidates/1/token_id", nil, func(t *testing.T, d map[string]any) { set(t, d, "/candidates/1/token_id", 7) }},
		{"candidate label neither", contract.DriverRequest, "reference-request.json", "/candidates/0/label", nil, func(t *testing.T, d map[string]any) { set(t, d, "/candidates/0/label", "neither") }},
		{"path repeats", contract.DriverRequest, "reference-request.json", "/paths/1", nil, func(t *testing.T, d map[string]any) { set(t, d, "/paths/1", "f32_blocked") }},
		{"path named all", contract.DriverRequest, "reference-request.json", "/paths/0", nil, func(t *testing.T, d map[string]any) { set(t, d, "/paths/0", "all") }},
		// Worker outputs (bodies).
		{"output argmax not top", contract.DriverWorkerOutput, "next-token.json", "/body/oracle/argmax_token_id", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/body/oracle/argmax_token_id", 113) }},
		{"output growth wrong", contract.DriverWorkerOutput, "layer-attribution.json", "/body/largest_relative_error_growth", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/body/largest_relative_error_growth/index", 2)
			set(t, d, "/body/largest_relative_error_growth/name", "layers.1")
		}},
		{"output argmax_equal wrong", contract.DriverWorkerOutput, "path-attribution.json", "/body/paths/1/argmax_equal", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/body/paths/1/argmax_equal", false) }},
		// Next-token results.
		{"top tokens fewer than min(10, vocab)", nt, "reference-next-token.json", "/oracle/top_tokens", nil, func(t *testing.T, d map[string]any) {
			top := d["oracle"].(map[string]any)["top_tokens"].([]any)
			set(t, d, "/oracle/top_tokens", top[:9])
		}},
		{"top tokens out of order", nt, "reference-next-token.json", "/oracle/top_tokens/3", nil, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/top_tokens/3/logit", 2.75) }},
		{"top token tie out of id order", nt, "reference-next-token.json", "/oracle/top_tokens/4", nil, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/top_tokens/4/logit", 2.25) }},
		{"top token repeats", nt, "reference-next-token.json", "/oracle/top_tokens/5/token_id", nil, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/top_tokens/5/token_id", 201) }},
		{"top token outside vocab", nt, "reference-next-token.json", "/oracle/top_tokens/8/token_id", nil, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/top_tokens/8/token_id", 256) }},
		{"argmax not top_tokens[0]", nt, "reference-next-token.json", "/oracle/argmax_token_id", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/argmax_token_id", 113) }},
		{"margin not top1-top2", nt, "reference-next-token.json", "/oracle/top_logit_margin", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/top_logit_margin", 0.4) }},
		{"candidate logit differs from top", nt, "reference-next-token.json", "/oracle/candidate_tokens/1/logit", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/candidate_tokens/1/logit", 2.4) }},
		{"candidate rank wrong", nt, "reference-next-token.json", "/oracle/candidate_tokens/1/rank", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/oracle/candidate_tokens/1/rank", 2) }},
		{"candidate outside top above its last", nt, "reference-next-token.json", "/oracle/candidate_tokens/1/logit", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/oracle/candidate_tokens/1/token_id", 77)
			set(t, d, "/oracle/candidate_tokens/1/rank", 11)
		}},
		{"candidate rank beyond vocab", nt, "reference-next-token.json", "/oracle/candidate_tokens/1/rank", nil, func(t *testing.T, d map[string]any) {
			set(t, d, "/oracle/candidate_tokens/1/token_id", 77)
			set(t, d, "/oracle/candidate_tokens/1/logit", -3.5)
			set(t, d, "/oracle/candidate_tokens/1/rank", 257)
		}},
		{"argmax candidate wrong", nt, "reference-next-token.json", "/verdict/argmax_candidate", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/verdict/argmax_candidate", "engine-b") }},
		{"attribution completeness wrong", nt, "reference-next-token.json", "/verdict/candidate_attribution_complete", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/verdict/candidate_attribution_complete", false) }},
		{"passed with a timeout", nt, "timed-out.json", "/verdict/status", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/verdict/status", "passed")
			set(t, d, "/verdict/reasons", []any{})
		}},
		{"failed without reasons", nt, "timed-out.json", "/verdict/reasons", nil, func(t *testing.T, d map[string]any) { set(t, d, "/verdict/reasons", []any{}) }},
		{"passed with residue", nt, "reference-next-token.json", "/verdict/status", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/containment/residue", []any{"pid 4242 (python3) escaped with setsid"})
		}},
		{"passed with an outside address reachable", nt, "reference-next-token.json", "/verdict/status", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/containment/probe/outside_unreachable", false) }},
		{"tolerance observed wrong", nt, "reference-next-token.json", "/tolerances/0/observed", rules.ErrToleranceOutcome, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/0/observed", 0.5) }},
		{"tolerance passed wrong", nt, "reference-next-token.json", "/tolerances/0/passed", rules.ErrToleranceOutcome, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/0/limit", 0.5) }},
		{"env names unsorted", nt, "reference-next-token.json", "/containment/environment_names", nil, func(t *testing.T, d map[string]any) {
			names := d["containment"].(map[string]any)["environment_names"].([]any)
			names[0], names[1] = names[1], names[0]
		}},
		{"env offline flag missing", nt, "reference-next-token.json", "/containment/environment_names", nil, func(t *testing.T, d map[string]any) {
			names := d["containment"].(map[string]any)["environment_names"].([]any)
			set(t, d, "/containment/environment_names", names[1:])
		}},
		{"env token passed", nt, "reference-next-token.json", "/containment/environment_names/0", nil, func(t *testing.T, d map[string]any) { set(t, d, "/containment/environment_names/0", "GH_TOKEN") }},
		// Path attributions.
		{"path observed for the wrong subject", pa, "reference-path.json", "/tolerances/0/observed", rules.ErrToleranceOutcome, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/0/observed", 2.4e-07) }},
		{"path outcome for a subject the result lacks", pa, "reference-path.json", "/tolerances/4/observed", rules.ErrToleranceOutcome, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/4/subject", "f16_path") }},
		{"path outcome with subject all", pa, "reference-path.json", "/tolerances/0/subject", nil, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/0/subject", "all") }},
		{"path tolerance outcome passed flipped", pa, "tolerance-failed.json", "/tolerances/1/passed", rules.ErrToleranceOutcome, func(t *testing.T, d map[string]any) { set(t, d, "/tolerances/1/passed", true) }},
		{"attribution wrong", pa, "tolerance-failed.json", "/verdict/attribution", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/verdict/attribution", "not_reproduced") }},
		{"attribution for argmax", pa, "reference-path.json", "/verdict/attribution", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/paths/1/argmax", 8)
			set(t, d, "/paths/1/argmax_equal", false)
		}},
		{"argmax_equal wrong", pa, "reference-path.json", "/paths/0/argmax_equal", rules.ErrDerived, func(t *testing.T, d map[string]any) { set(t, d, "/reference_argmax", 8) }},
		{"mean above max", pa, "reference-path.json", "/paths/0/mean_abs_error", nil, func(t *testing.T, d map[string]any) { set(t, d, "/paths/0/mean_abs_error", 3.2e-07) }},
		{"path repeats", pa, "reference-path.json", "/paths/1", nil, func(t *testing.T, d map[string]any) { set(t, d, "/paths/1/id", "f32_blocked") }},
		{"path is the reference", pa, "reference-path.json", "/paths/0/id", nil, func(t *testing.T, d map[string]any) { set(t, d, "/reference_path", "f32_blocked") }},
		{"two reference digests", pa, "reference-path.json", "/paths/1/reference_logits_sha256", nil, func(t *testing.T, d map[string]any) {
			set(t, d, "/paths/1/reference_logits_sha256", "sha256:"+strings.Repeat("1", 64))
		}},
		// Layer attributions.
		{"index not position", la, "reference-layers.json", "/boundaries/2/index", nil, func(t *testing.T, d map[string]any) { set(t, d, "/boundaries/2/index", 5) }},
		{"boundary name repeats", la, "reference-layers.json", "/boundaries/2/name", nil, func(t *testing.T, d map[string]any) { set(t, d, "/boundaries/2/name", "layers.0") }},
		{"relative error not rmse / reference", la, "reference-layers.json", "/boundaries/1/relative_root_mean_square_error", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/boundaries/1/relative_root_mean_square_error", 2.1e-07)
		}},
		{"largest growth wrong", la, "reference-layers.json", "/largest_relative_error_growth", rules.ErrDerived, func(t *testing.T, d map[string]any) {
			set(t, d, "/largest_relative_error_growth/relative_root_mean_square_error_delta", 6.5e-07)
		}},
		{"layer mean above max", la, "reference-layers.json", "/boundaries/0/mean_abs_error", nil, func(t *testing.T, d map[string]any) { set(t, d, "/boundaries/0/mean_abs_error", 7e-07) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var doc map[string]any
			if c.contractID == wl {
				doc = load(t, "workload-driver.json")
			} else {
				doc = loadCorpus(t, c.contractID, c.file)
			}
			c.mutate(t, doc)
			if contract.IsDriverResult(c.contractID) {
				reseal(t, doc)
			}
			out, err := CheckDocument(roundTrip(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range out.Violations {
				if !errors.Is(v, ErrSemantic) {
					t.Errorf("unexpected non-semantic violation %v", v)
				}
				if v.Pointer == c.pointer && (c.sentinel == nil || errors.Is(v, c.sentinel)) {
					found = true
				}
			}
			if !found {
				t.Errorf("want a semantic violation at %s (%v), got %v", c.pointer, c.sentinel, out.Violations)
			}
		})
	}
}

// TestDriverResultSelfHashRefused: a result edited after it was sealed is refused, naming the
// recorded and the computed digest, with ErrSemantic and ErrSelfHashMismatch.
func TestDriverResultSelfHashRefused(t *testing.T) {
	for _, f := range []struct{ contractID, file string }{{contract.NextTokenResult, "reference-next-token.json"}, {contract.PathAttribution, "reference-path.json"}, {contract.LayerAttribution, "reference-layers.json"}} {
		doc := loadCorpus(t, f.contractID, f.file)
		recorded := doc[rules.ResultSelfHashField].(string)
		doc["duration_seconds"] = 99.5
		data := roundTrip(t, doc)
		out, err := CheckDocument(data)
		if err != nil {
			t.Fatal(err)
		}
		tree, _ := jsonstrict.Parse(data)
		computed, _ := jsonstrict.SelfHash(tree, rules.ResultSelfHashField)
		if len(out.Violations) != 1 {
			t.Fatalf("%s: want exactly the self-hash violation, got %v", f.contractID, out.Violations)
		}
		v := out.Violations[0]
		if v.Pointer != "/result_sha256" || !errors.Is(v, ErrSemantic) || !errors.Is(v, jsonstrict.ErrSelfHashMismatch) ||
			!strings.Contains(v.Error(), recorded) || !strings.Contains(v.Error(), computed) {
			t.Errorf("%s: %v (want both %s and %s)", f.contractID, v, recorded, computed)
		}
	}
}

// TestKilnV1RefusedByV2Validators: the Kiln v1 oracle result fails every version-2 result schema
// on its own (not only through the historical markers CheckDocument looks for first).
func TestKilnV1RefusedByV2Validators(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kiln", "oracle-result-v1-rocm-hf-next-token-guarded-fingerprint.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonstrict.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range contract.DriverResults {
		vs, err := ValidateSchema(name, doc)
		if err != nil {
			t.Fatal(err)
		}
		if len(vs) == 0 {
			t.Errorf("%s accepts the Kiln v1 oracle result", name)
		}
	}
	// Relabelled as a current result, it is still refused, naming its temperature-policy markers.
	relabelled := bytes.Replace(data, []byte(`"kiln.rocm-hf-next-token-oracle.v1"`), []byte(`"qualkit.next-token-result.v2"`), 1)
	out, err := CheckDocument(relabelled)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, v := range out.Violations {
		if !errors.Is(v, ErrHistorical) {
			t.Errorf("non-historical violation %v", v)
		}
		names[v.Pointer] = true
	}
	for _, p := range []string{"/model_fingerprint/thermal", "/containment/memory_max_gib", "/implementation/supervisor_sha256"} {
		if !names[p] {
			t.Errorf("marker %s not named: %v", p, out.Violations)
		}
	}
}

// FuzzCheckDriverDocument feeds driver documents (seeded with the valid corpus of every driver
// contract) to CheckDocument: it never panics and never fails to carry out the check, and a
// document it accepts is accepted again after a round trip through its canonical form.
func FuzzCheckDriverDocument(f *testing.F) {
	for _, name := range append([]string{contract.DriverSpec, contract.DriverRequest, contract.DriverWorkerOutput}, contract.DriverResults...) {
		files, _ := filepath.Glob(filepath.Join("testdata", name, "valid", "*.json"))
		for _, file := range files {
			if data, err := os.ReadFile(file); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := CheckDocument(data)
		if err != nil {
			t.Fatalf("check could not be carried out: %v", err)
		}
		if !out.Valid() {
			return
		}
		c, err := jsonstrict.CanonicalJSON(data)
		if err != nil {
			t.Fatalf("valid document has no canonical form: %v", err)
		}
		again, err := CheckDocument(c)
		if err != nil || !again.Valid() {
			t.Fatalf("canonical form of a valid document is refused: %v %v", err, again.Violations)
		}
	})
}
