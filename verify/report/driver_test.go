package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// The driver sections are rendered here from the valid documents of the driver contracts'
// corpora (schemas/testdata/<contract>/valid), decoded as verify.Inspect decodes a bound result;
// the end-to-end test with a real campaign of workloads/driver-reference.json is
// TestReportDriverReference in tools/internal/qualverify.

const corpus = "../../schemas/testdata"

// corpusDriver decodes a corpus document into the evidence verify.Inspect returns for it, with
// the tolerance outcomes recomputed from its numbers (as Inspect does), after edit changes the
// decoded document (nil for none).
func corpusDriver(t *testing.T, contractID, name string, edit func(any)) (*verify.DriverEvidence, map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpus, contractID, "valid", name))
	if err != nil {
		t.Fatal(err)
	}
	var tree map[string]any
	if err := json.Unmarshal(raw, &tree); err != nil {
		t.Fatal(err)
	}
	de := &verify.DriverEvidence{Contract: "qualkit." + contractID, Path: ".qualification/runs/r/cases/000-x-r000/result.json", Digest: evidence.DigestOf(raw)}
	var body any
	var doc any
	switch contractID {
	case contract.NextTokenResult:
		de.NextToken = new(contract.NextTokenResultDoc)
		doc = de.NextToken
	case contract.PathAttribution:
		de.PathAttribution = new(contract.PathAttributionDoc)
		doc = de.PathAttribution
	case contract.LayerAttribution:
		de.LayerAttribution = new(contract.LayerAttributionDoc)
		doc = de.LayerAttribution
	}
	if err := jsonstrict.DecodeInto(raw, doc); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(doc)
	}
	switch d := doc.(type) {
	case *contract.NextTokenResultDoc:
		body = d.NextTokenBody
	case *contract.PathAttributionDoc:
		body = d.PathBody
	case *contract.LayerAttributionDoc:
		body = d.LayerBody
	}
	for _, o := range de.Header().Tolerances {
		rule := contract.DriverTolerance{Metric: contract.DriverMetric(o.Metric), Op: contract.Op(o.Op), Limit: o.Limit, Subject: o.Subject}
		rec, err := rules.EvaluateTolerances(contractID, []contract.DriverTolerance{rule}, body)
		if err != nil || len(rec) != 1 {
			t.Fatalf("recompute %+v: %v %v", rule, rec, err)
		}
		de.Recomputed = append(de.Recomputed, rec[0])
	}
	return de, tree
}

// driverView is a verified view of one receipt whose cases are the given driver cases.
func driverView(cases ...Case) *View {
	return &View{ReportViewDoc: contract.ReportViewDoc{Schema: Schema, Verifier: "test", Verified: true, Comparisons: []Comparison{}, Receipts: []Receipt{{
		Path: ".qualification/receipts/d.json", ReceiptID: "drivers", Verification: Verification{Verdict: "verified", Summary: "verified",
			Weakened: []string{}, Checks: []Check{}, Findings: []Finding{}, Warnings: []string{}},
		Artifacts: []Artifact{}, Cases: cases, Notes: []string{}, Unsupported: []string{}}}}}
}

func driverCase(id string, de *verify.DriverEvidence) Case {
	artifacts := []Artifact{
		{Kind: "driver_worker_output", Path: ".qualification/runs/r/cases/000-x-r000/worker-output.json"},
		{Kind: "driver_log", Path: ".qualification/runs/r/cases/000-x-r000/worker.log"},
		{Kind: "driver_log", Path: ".qualification/runs/r/cases/001-y-r000/worker.log"},
	}
	d := driverOf(de, artifacts)
	return Case{ID: id, Status: contract.CaseStatus(d.Verdict.Status), Required: true, Kind: "driver", Rows: []Row{}, Driver: d}
}

// jsonOf renders the view's JSON and returns its driver sections, decoded generically.
func jsonDrivers(t *testing.T, v *View) []map[string]any {
	t.Helper()
	var b bytes.Buffer
	if err := v.JSON(&b); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Receipts []struct {
			Cases []struct {
				Driver map[string]any `json:"driver"`
			} `json:"cases"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal(b.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, c := range back.Receipts[0].Cases {
		out = append(out, c.Driver)
	}
	return out
}

// sameMembers fails unless every named member of got equals want's (numbers as float64, so a
// value is equal only when it is the same float64).
func sameMembers(t *testing.T, where string, got, want map[string]any, names ...string) int {
	t.Helper()
	for _, n := range names {
		g, okg := got[n]
		w, okw := want[n]
		if !okg || !okw {
			t.Errorf("%s: member %s: report has it %v, result has it %v", where, n, okg, okw)
			continue
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("%s.%s: report %v, result %v", where, n, g, w)
		}
	}
	return len(names)
}

func list(t *testing.T, m map[string]any, path ...string) []any {
	t.Helper()
	var cur any = m
	for _, p := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("%v: not an object at %s", path, p)
		}
		cur = mm[p]
	}
	l, ok := cur.([]any)
	if !ok {
		t.Fatalf("%v: not a list: %v", path, cur)
	}
	return l
}

// TestDriverJSONNumbersAreTheResults: the JSON of each driver section carries every number of its
// result unchanged (top tokens, candidates, paths, boundaries, tolerance outcomes), the verdict's
// members, the containment and the bindings.
func TestDriverJSONNumbersAreTheResults(t *testing.T) {
	nt, ntDoc := corpusDriver(t, contract.NextTokenResult, "reference-next-token.json", nil)
	pa, paDoc := corpusDriver(t, contract.PathAttribution, "reference-path.json", nil)
	la, laDoc := corpusDriver(t, contract.LayerAttribution, "reference-layers.json", nil)
	v := driverView(driverCase("next", nt), driverCase("paths", pa), driverCase("layers", la))
	ds := jsonDrivers(t, v)
	checked := 0
	for i, doc := range []map[string]any{ntDoc, paDoc, laDoc} {
		d := ds[i]
		if d["contract"] != doc["schema"] || d["result_sha256"] != doc["result_sha256"] {
			t.Errorf("driver %d: contract %v self-hash %v", i, d["contract"], d["result_sha256"])
		}
		tols, want := list(t, d, "tolerances"), list(t, doc, "tolerances")
		if len(tols) != len(want) || len(tols) == 0 {
			t.Fatalf("driver %d: %d tolerance rows, the result has %d", i, len(tols), len(want))
		}
		for k := range tols {
			checked += sameMembers(t, fmt.Sprintf("driver %d tolerances[%d]", i, k), tols[k].(map[string]any), want[k].(map[string]any),
				"metric", "subject", "op", "limit", "observed", "passed")
		}
		c, wc := d["containment"].(map[string]any), doc["containment"].(map[string]any)
		checked += sameMembers(t, "containment", c, wc, "network", "mechanism", "start_gate", "hash_bound_exec", "environment_names",
			"timeout_seconds", "elapsed_seconds", "exit_code", "timed_out", "forced", "residue")
		checked += sameMembers(t, "probe", c, wc["probe"].(map[string]any), "interfaces", "outside_unreachable", "loopback_bind", "host_loopback_unreachable")
		im, wim := d["implementation"].(map[string]any), doc["implementation"].(map[string]any)
		for k, w := range map[string]string{"script_digest": "script", "executable_digest": "executable", "qualrun_digest": "qualrun"} {
			if im[k] != wim[w].(map[string]any)["digest"] {
				t.Errorf("implementation %s: %v", k, im[k])
			}
		}
		checked += sameMembers(t, "request", d["request"].(map[string]any), doc["request"].(map[string]any), "id", "path", "digest", "input_token_count", "input_token_ids_sha256")
		checked += sameMembers(t, "model", d["model"].(map[string]any), doc["model"].(map[string]any), "id", "path", "digest")
		checked += sameMembers(t, "verdict", d["verdict"].(map[string]any), doc["verdict"].(map[string]any), "status", "reasons")
		if ms := list(t, d, "mismatches"); len(ms) != 0 {
			t.Errorf("driver %d: mismatches %v", i, ms)
		}
	}
	// Next-token: the oracle's numbers, the ranks, the verdict members.
	got, want := ds[0]["next_token"].(map[string]any), ntDoc["oracle"].(map[string]any)
	checked += sameMembers(t, "oracle", got, want, "dtype", "vocab", "argmax_token_id", "top_logit_margin", "logits_sha256", "logits_bytes")
	top, wtop := list(t, got, "top_tokens"), list(t, want, "top_tokens")
	if len(top) != len(wtop) {
		t.Fatalf("%d top tokens, want %d", len(top), len(wtop))
	}
	for k := range top {
		checked += sameMembers(t, fmt.Sprintf("top_tokens[%d]", k), top[k].(map[string]any), wtop[k].(map[string]any), "token_id", "logit")
		if r := top[k].(map[string]any)["rank"].(float64); k == 0 && r != 1 || r < 1 || r > float64(k+1) {
			t.Errorf("top_tokens[%d] rank %v", k, r)
		}
	}
	cand, wcand := list(t, got, "candidate_tokens"), list(t, want, "candidate_tokens")
	for k := range wcand {
		checked += sameMembers(t, fmt.Sprintf("candidate_tokens[%d]", k), cand[k].(map[string]any), wcand[k].(map[string]any), "label", "token_id", "logit", "rank")
	}
	checked += sameMembers(t, "next-token verdict", ds[0]["verdict"].(map[string]any), ntDoc["verdict"].(map[string]any), "argmax_candidate", "candidate_attribution_complete")
	// Path attribution: one row per path.
	got, want = ds[1]["path_attribution"].(map[string]any), paDoc
	checked += sameMembers(t, "paths", got, want, "reference_path", "reference_argmax")
	rows, wrows := list(t, got, "paths"), list(t, want, "paths")
	if len(rows) != len(wrows) {
		t.Fatalf("%d path rows, want %d", len(rows), len(wrows))
	}
	for k := range rows {
		checked += sameMembers(t, fmt.Sprintf("paths[%d]", k), rows[k].(map[string]any), wrows[k].(map[string]any),
			"id", "argmax", "argmax_equal", "cosine_similarity", "max_abs_error", "mean_abs_error", "top10_overlap", "logits_sha256", "reference_logits_sha256")
	}
	checked += sameMembers(t, "path verdict", ds[1]["verdict"].(map[string]any), paDoc["verdict"].(map[string]any), "attribution")
	// Layer attribution: one row per boundary, the growth from the previous one, the largest.
	got, want = ds[2]["layer_attribution"].(map[string]any), laDoc
	bs, wbs := list(t, got, "boundaries"), list(t, want, "boundaries")
	if len(bs) != len(wbs) || len(bs) < 2 {
		t.Fatalf("%d boundary rows, want %d", len(bs), len(wbs))
	}
	largest := 0
	for k := range bs {
		b := bs[k].(map[string]any)
		checked += sameMembers(t, fmt.Sprintf("boundaries[%d]", k), b, wbs[k].(map[string]any), "index", "name", "cosine_similarity", "max_abs_error",
			"mean_abs_error", "root_mean_square_error", "reference_root_mean_square", "relative_root_mean_square_error", "reference_sha256", "candidate_sha256")
		rel := b["relative_root_mean_square_error"].(float64)
		if k > 0 {
			rel -= bs[k-1].(map[string]any)["relative_root_mean_square_error"].(float64)
		}
		if b["growth"].(float64) != rel {
			t.Errorf("boundaries[%d] growth %v, want %v", k, b["growth"], rel)
		}
		if b["largest"] == true {
			largest++
			g := laDoc["largest_relative_error_growth"].(map[string]any)
			if b["name"] != g["name"] || b["index"] != g["index"] || b["growth"] != g["relative_root_mean_square_error_delta"] {
				t.Errorf("largest marked at %v (growth %v), the result says %v", b["name"], b["growth"], g)
			}
		}
	}
	if largest != 1 {
		t.Errorf("%d boundaries marked largest", largest)
	}
	vg := ds[2]["verdict"].(map[string]any)["largest_relative_error_growth"].(map[string]any)
	checked += sameMembers(t, "layer verdict", vg, laDoc["largest_relative_error_growth"].(map[string]any), "index", "name", "relative_root_mean_square_error_delta")
	if checked < 150 {
		t.Fatalf("only %d members checked", checked)
	}
}

// TestDriverHTML: each driver section shows its verdict, containment, bindings and a tolerance
// row per outcome; a layer attribution has its chart, with the largest growth marked; the page
// still references nothing outside itself.
func TestDriverHTML(t *testing.T) {
	nt, _ := corpusDriver(t, contract.NextTokenResult, "timed-out.json", nil)
	pa, _ := corpusDriver(t, contract.PathAttribution, "tolerance-failed.json", nil)
	la, _ := corpusDriver(t, contract.LayerAttribution, "reference-layers.json", nil)
	missing := Case{ID: "never-ran", Status: "failed", Kind: "driver", Rows: []Row{}, Details: "network isolation: unsupported; the case requires isolation, so it fails (the worker was not run)"}
	v := driverView(driverCase("next", nt), driverCase("paths", pa), driverCase("layers", la), missing)
	page, _, _ := render(t, v)
	if m := externalRef.FindAllString(page, -1); len(m) > 0 {
		t.Fatalf("external references in the page: %q", m)
	}
	if n := strings.Count(page, `<div class="driver" data-contract="`); n != 3 {
		t.Errorf("%d driver sections, want 3", n)
	}
	if n := strings.Count(page, `data-chart="layers"`); n != 1 {
		t.Errorf("%d layer charts, want 1", n)
	}
	svg := regexp.MustCompile(`(?s)<svg class="chart" data-chart="layers".*?</svg>`).FindString(page)
	g := la.LayerAttribution.LargestRelativeErrorGrowth
	if !strings.Contains(svg, `data-largest-growth="`+g.Name+`"`) || !strings.Contains(svg, "largest growth "+format.SignedExact(g.RelativeRootMeanSquareErrorDelta)+" at "+g.Name) {
		t.Errorf("the layer chart does not mark the largest growth at %s:\n%s", g.Name, svg)
	}
	if n := strings.Count(svg, "<circle"); n != len(la.LayerAttribution.Boundaries) {
		t.Errorf("%d points for %d boundaries", n, len(la.LayerAttribution.Boundaries))
	}
	rows := 0
	for _, de := range []*verify.DriverEvidence{nt, pa, la} {
		rows += len(de.Header().Tolerances)
	}
	tolTables := regexp.MustCompile(`(?s)<table class="sortable tolerances">.*?</table>`).FindAllString(page, -1)
	got := 0
	for _, tt := range tolTables {
		got += strings.Count(tt, "<tr>") - 1 // the header row
	}
	if got != rows {
		t.Errorf("%d tolerance rows, the results have %d", got, rows)
	}
	for _, s := range []string{
		// The timed-out worker: its reasons and how it ended.
		"worker overran its runtime of 5 s", "TIMED OUT", "ended by a signal",
		// The failed tolerance, with its path attributed.
		`<tr class="attributed"><td>f32_blocked <strong class="bad">attributed</strong>`, "failed: max_abs_error", "attribution f32_blocked",
		// Bindings, unrounded numbers.
		pa.Header().Implementation.Script.Digest, pa.Header().Model.Digest, pa.Header().Request.Digest,
		format.Exact(pa.PathAttribution.Paths[1].CosineSimilarity),
		// Worker output and log found beside the result.
		"000-x-r000/worker-output.json", "000-x-r000/worker.log",
		// A driver case without a result says so.
		"No driver result is bound for this case", "network isolation: unsupported",
	} {
		if !strings.Contains(page, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	if strings.Contains(page, "001-y-r000") {
		t.Error("another case's log is shown as this case's")
	}
}

// TestDriverText: the terminal form of driver sections fits 100 columns, even with long names and
// numbers (a table that would not fit becomes one wrapped line per row), and carries the verdict,
// the tolerance outcomes and the numbers.
func TestDriverText(t *testing.T) {
	nt, _ := corpusDriver(t, contract.NextTokenResult, "reference-next-token.json", nil)
	pa, _ := corpusDriver(t, contract.PathAttribution, "tolerance-failed.json", nil)
	la, _ := corpusDriver(t, contract.LayerAttribution, "reference-layers.json", nil)
	long := strings.Repeat("very-long-boundary-name-", 3)
	wide, _ := corpusDriver(t, contract.LayerAttribution, "reference-layers.json", func(d any) {
		doc := d.(*contract.LayerAttributionDoc)
		doc.Boundaries[1].Name = long
		doc.Boundaries[1].MaxAbsError = 1.2345678901234567e-123
		doc.Boundaries[1].CosineSimilarity = 0.99999999999999989
	})
	v := driverView(driverCase("next", nt), driverCase("paths", pa), driverCase("layers", la), driverCase("wide", wide))
	_, text, _ := render(t, v)
	for i, l := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(l); n > TextWidth {
			t.Errorf("line %d has %d columns: %q", i+1, n, l)
		}
	}
	for _, re := range []string{
		`(?m)^case       next r0: passed \(next-token result, qualkit\.next-token-result\.v2\)$`,
		`(?m)^verdict    passed; argmax candidate engine-a, attribution complete$`,
		`(?m)^  top_logit_margin  all +>= +` + regexp.QuoteMeta(format.Fine(nt.Header().Tolerances[0].Limit)) + ` +` + regexp.QuoteMeta(format.Fine(*nt.Header().Tolerances[0].Observed)) + ` +yes$`,
		`(?m)^ +1 +` + fmt.Sprint(nt.NextToken.Oracle.TopTokens[0].TokenID) + ` +` + regexp.QuoteMeta(format.Fine(nt.NextToken.Oracle.TopTokens[0].Logit)) + ` +engine-a`,
		`(?m)^verdict    failed; attribution f32_blocked$`,
		`(?m)^reason     tolerance max_abs_error <= 1e-09 failed for f32_blocked: observed 3\.1e-07$`,
		`(?m)^  f32_blocked \*  .* FAILED$`,
		`(?m)^  max_abs_error +f32_blocked +<= +1e-09 +3\.1e-07 +no$`,
		`(?m)^isolation  private_loopback by linux-userns-netns-v1 \(only loopback\)`,
		`(?m)^  ` + regexp.QuoteMeta(la.LayerAttribution.LargestRelativeErrorGrowth.Name) + ` .* \+` + regexp.QuoteMeta(format.Fine(la.LayerAttribution.LargestRelativeErrorGrowth.RelativeRootMeanSquareErrorDelta)) + ` \* +held$`,
		// The table too wide for 100 columns: one wrapped line per boundary, nothing cut.
		`(?m)^           ` + regexp.QuoteMeta(long) + `: cosine\s+0\.9999999999999999, max abs err 1\.23457e-123,`,
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("text lacks %s", re)
		}
	}
	if *keep != "" {
		if err := os.WriteFile(filepath.Join(*keep, "drivers.txt"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDriverMismatchShown: a recorded tolerance outcome that its result's numbers do not give is
// listed under the section (in every form), as verify's tolerances check reports it.
func TestDriverMismatchShown(t *testing.T) {
	pa, _ := corpusDriver(t, contract.PathAttribution, "reference-path.json", func(d any) {
		doc := d.(*contract.PathAttributionDoc)
		doc.Paths[1].MaxAbsError *= 2 // the recorded outcome still says the old number
	})
	v := driverView(driverCase("paths", pa))
	d := v.Receipts[0].Cases[0].Driver
	if len(d.Mismatches) != 1 || !strings.Contains(d.Mismatches[0], "max_abs_error") || !strings.Contains(d.Mismatches[0], "recomputed observed "+format.Exact(pa.PathAttribution.Paths[1].MaxAbsError)) {
		t.Fatalf("mismatches %q", d.Mismatches)
	}
	page, text, js := render(t, v)
	for name, s := range map[string]string{"html": page, "text": text, "json": js} {
		if !strings.Contains(s, "recomputed observed") {
			t.Errorf("%s does not show the mismatch", name)
		}
	}
	pa.Recomputed = nil
	if d := driverOf(pa, nil); len(d.Mismatches) != 1 || !strings.Contains(d.Mismatches[0], "could not be recomputed") {
		t.Errorf("mismatches without a recomputation %q", d.Mismatches)
	}
}
