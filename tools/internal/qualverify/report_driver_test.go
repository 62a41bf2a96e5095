package qualverify

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qualkit/qualkit/runner/driver"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// requireDriverHost skips when this host cannot run the reference workload's workers (no
// /usr/bin/python3, or no user and network namespaces); under CI=true it fails instead, as the
// driver package's own tests do: CI must exercise the drivers.
func requireDriverHost(t *testing.T) {
	t.Helper()
	why := ""
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		why = "workloads/driver-reference.json runs /usr/bin/python3, which is missing"
	} else if err := driver.CheckHost(); err != nil {
		why = "this host cannot isolate a driver's worker: " + err.Error()
	}
	if why == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: CI must run the driver workload)", why)
	}
	t.Skip(why)
}

// driverCampaign runs the committed reference workload (workloads/driver-reference.json: a
// next-token result, a path attribution and a layer attribution of the reference worker, each
// isolated behind its start gate) in a throwaway git repository whose origin/main is HEAD, signed
// with a throwaway key, with the real binaries. It returns the repository, the receipt, the public
// key and the binaries' directory.
func driverCampaign(t *testing.T) (repo, receipt, pub, bin string) {
	t.Helper()
	bin = t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/qualrun", "./cmd/qualverify")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	repo = filepath.Join(t.TempDir(), "repo")
	for _, f := range []string{"workloads/driver-reference.json", "drivers/reference/worker.py", "drivers/reference/request.json", "drivers/reference/tiny-model.json"} {
		b, err := os.ReadFile(filepath.Join("../../..", f))
		if err != nil {
			t.Fatal(err)
		}
		mustWriteFile(t, filepath.Join(repo, f), b)
	}
	mustWriteFile(t, filepath.Join(repo, ".gitignore"), []byte("/.qualification/\n"))
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = repo
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=qualkit", "GIT_AUTHOR_EMAIL=qualkit@example.invalid",
			"GIT_COMMITTER_NAME=qualkit", "GIT_COMMITTER_EMAIL=qualkit@example.invalid", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "drivers")
	git("clone", "-q", "--bare", repo, repo+".origin.git")
	git("remote", "add", "origin", repo+".origin.git")
	git("fetch", "-q", "origin")

	key := filepath.Join(t.TempDir(), "drivers")
	run(t, repo, bin, 0, "qualrun", "keygen", "--unencrypted", "--output-prefix", key)
	receipt = ".qualification/receipts/drivers.json"
	stdout, _ := run(t, repo, bin, 0, "qualrun", "run", "workloads/driver-reference.json", "--variant", "cpu-reference", "--host-id", "driver-host",
		"--output", receipt, "--key", key+".key")
	if !regexp.MustCompile(`(?m)^verdict passed, publishable true$`).MatchString(stdout) {
		t.Fatalf("the reference campaign did not pass:\n%s", stdout)
	}
	return repo, receipt, key + ".pub", bin
}

// driverResults reads the driver results the receipt binds, generically, by case id.
func driverResults(t *testing.T, repo, receipt string) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repo, receipt))
	if err != nil {
		t.Fatal(err)
	}
	var rc contract.ReceiptDoc
	if err := jsonstrict.DecodeInto(raw, &rc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range rc.Results {
		if r.CaseResult == nil {
			t.Fatalf("case %s binds no result", r.ID)
		}
		b, err := os.ReadFile(filepath.Join(repo, r.CaseResult.Path))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		out[r.ID] = m
	}
	return out
}

// TestReportDriverReference renders the report of a real, signed campaign of the reference driver
// workload and checks it against the result files: every number of the JSON's driver sections
// (top tokens, candidates, paths, boundaries, tolerance outcomes, verdicts) equals the result's
// exactly; the tolerance rows are present in every form; the layer chart is an inline svg with
// the largest growth marked, and renders in headless Chromium; the text fits 100 columns; a result
// edited afterwards yields no report, and a stamped one on request shows the outcome that no
// longer follows from the numbers.
func TestReportDriverReference(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real driver campaign")
	}
	requireDriverHost(t)
	repo, receipt, pub, bin := driverCampaign(t)
	results := driverResults(t, repo, receipt)
	out := t.TempDir()

	js, _ := run(t, repo, bin, exitcode.OK, "qualverify", "report", receipt, "--key", pub, "--format", "json")
	requireContract(t, []byte(js), contract.ReportView)
	var view struct {
		Verified bool `json:"verified"`
		Receipts []struct {
			Cases []struct {
				ID     string         `json:"id"`
				Kind   string         `json:"kind"`
				Status string         `json:"status"`
				Driver map[string]any `json:"driver"`
			} `json:"cases"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(js), &view); err != nil {
		t.Fatal(err)
	}
	if !view.Verified || len(view.Receipts) != 1 || len(view.Receipts[0].Cases) != 3 {
		t.Fatalf("view: %s", js)
	}

	t.Run("json numbers are the results'", func(t *testing.T) {
		checked := 0
		same := func(where string, got, want any) {
			t.Helper()
			checked++
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: report %v, result file %v", where, got, want)
			}
		}
		members := func(where string, got, want map[string]any, names ...string) {
			t.Helper()
			for _, n := range names {
				if _, ok := want[n]; !ok {
					t.Fatalf("%s: the result has no %s", where, n)
				}
				same(where+"."+n, got[n], want[n])
			}
		}
		rows := func(where string, got, want any) []any {
			t.Helper()
			g, _ := got.([]any)
			w, _ := want.([]any)
			if len(g) != len(w) || len(w) == 0 {
				t.Fatalf("%s: %d rows in the report, %d in the result", where, len(g), len(w))
			}
			return g
		}
		for _, c := range view.Receipts[0].Cases {
			res, d := results[c.ID], c.Driver
			if d == nil || c.Kind != "driver" {
				t.Fatalf("case %s (%s) has no driver section", c.ID, c.Kind)
			}
			same(c.ID+" contract", d["contract"], res["schema"])
			same(c.ID+" status", c.Status, res["verdict"].(map[string]any)["status"])
			members(c.ID+" verdict", d["verdict"].(map[string]any), res["verdict"].(map[string]any), "status", "reasons")
			g := rows(c.ID+" tolerances", d["tolerances"], res["tolerances"])
			for i, w := range res["tolerances"].([]any) {
				members(fmt.Sprintf("%s tolerances[%d]", c.ID, i), g[i].(map[string]any), w.(map[string]any), "metric", "subject", "op", "limit", "observed", "passed")
			}
			cont, wc := d["containment"].(map[string]any), res["containment"].(map[string]any)
			members(c.ID+" containment", cont, wc, "network", "mechanism", "start_gate", "hash_bound_exec", "environment_names", "timeout_seconds",
				"elapsed_seconds", "exit_code", "timed_out", "forced", "residue")
			members(c.ID+" probe", cont, wc["probe"].(map[string]any), "interfaces", "outside_unreachable", "loopback_bind", "host_loopback_unreachable")
			imp := res["implementation"].(map[string]any)
			same(c.ID+" script digest", d["implementation"].(map[string]any)["script_digest"], imp["script"].(map[string]any)["digest"])
			same(c.ID+" executable digest", d["implementation"].(map[string]any)["executable_digest"], imp["executable"].(map[string]any)["digest"])
			members(c.ID+" request", d["request"].(map[string]any), res["request"].(map[string]any), "id", "path", "digest", "input_token_count")
			members(c.ID+" model", d["model"].(map[string]any), res["model"].(map[string]any), "id", "path", "digest")
			if ms, _ := d["mismatches"].([]any); len(ms) != 0 {
				t.Errorf("%s: mismatches %v", c.ID, ms)
			}
			switch c.ID {
			case "reference-next-token":
				nt, o := d["next_token"].(map[string]any), res["oracle"].(map[string]any)
				members("oracle", nt, o, "dtype", "vocab", "argmax_token_id", "top_logit_margin", "logits_sha256", "logits_bytes")
				g := rows("top tokens", nt["top_tokens"], o["top_tokens"])
				for i, w := range o["top_tokens"].([]any) {
					members(fmt.Sprintf("top_tokens[%d]", i), g[i].(map[string]any), w.(map[string]any), "token_id", "logit")
				}
				g = rows("candidates", nt["candidate_tokens"], o["candidate_tokens"])
				for i, w := range o["candidate_tokens"].([]any) {
					members(fmt.Sprintf("candidate_tokens[%d]", i), g[i].(map[string]any), w.(map[string]any), "label", "token_id", "logit", "rank")
				}
				members("next-token verdict", d["verdict"].(map[string]any), res["verdict"].(map[string]any), "argmax_candidate", "candidate_attribution_complete")
			case "reference-paths":
				pa := d["path_attribution"].(map[string]any)
				members("path attribution", pa, res, "reference_path", "reference_argmax")
				g := rows("paths", pa["paths"], res["paths"])
				for i, w := range res["paths"].([]any) {
					members(fmt.Sprintf("paths[%d]", i), g[i].(map[string]any), w.(map[string]any), "id", "argmax", "argmax_equal", "cosine_similarity",
						"max_abs_error", "mean_abs_error", "top10_overlap", "logits_sha256")
				}
				members("path verdict", d["verdict"].(map[string]any), res["verdict"].(map[string]any), "attribution")
			case "reference-layers":
				la := d["layer_attribution"].(map[string]any)
				g := rows("boundaries", la["boundaries"], res["boundaries"])
				largest := res["largest_relative_error_growth"].(map[string]any)
				for i, w := range res["boundaries"].([]any) {
					b := g[i].(map[string]any)
					members(fmt.Sprintf("boundaries[%d]", i), b, w.(map[string]any), "index", "name", "cosine_similarity", "max_abs_error", "mean_abs_error",
						"root_mean_square_error", "reference_root_mean_square", "relative_root_mean_square_error")
					same(fmt.Sprintf("boundaries[%d] largest", i), b["largest"], b["name"] == largest["name"])
				}
				members("largest growth", la["largest_relative_error_growth"].(map[string]any), largest, "index", "name", "relative_root_mean_square_error_delta")
				members("layer verdict growth", d["verdict"].(map[string]any)["largest_relative_error_growth"].(map[string]any), largest, "index", "name", "relative_root_mean_square_error_delta")
			default:
				t.Fatalf("unexpected case %s", c.ID)
			}
		}
		if checked < 200 {
			t.Fatalf("only %d values checked", checked)
		}
	})

	t.Run("text", func(t *testing.T) {
		text, _ := run(t, repo, bin, exitcode.OK, "qualverify", "report", receipt, "--key", pub, "--format", "text")
		for i, l := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("line %d has %d columns: %q", i+1, n, l)
			}
		}
		res := results["reference-paths"]
		bf16 := res["paths"].([]any)[3].(map[string]any)
		for _, re := range []string{
			`(?m)^case       reference-next-token r0: passed \(next-token result, qualkit\.next-token-result\.v2\)$`,
			`(?m)^verdict    passed; argmax candidate engine-a, attribution complete$`,
			`(?m)^  top_logit_margin +all +>= +0\.1 +0\.43\d+ +yes$`,
			`(?m)^  max_abs_error +bf16_weights +<= +0\.05 +0\.0\d+ +yes$`,
			`(?m)^  bf16_weights +205 +yes +0\.99999\d+ +` + regexp.QuoteMeta(fmt.Sprintf("%.6g", bf16["max_abs_error"].(float64))) + ` `,
			`(?m)^verdict    passed; largest relative error growth at \w+ \(index \d+, [+-]`,
			`(?m)^  relative_root_mean_square_error +final_norm +<= +0\.01 +`,
			`(?m)^isolation  private_loopback by linux-userns-netns-v1 \(only loopback\)`,
		} {
			if !regexp.MustCompile(re).MatchString(text) {
				t.Errorf("text lacks %s:\n%s", re, text)
			}
		}
	})

	t.Run("html", func(t *testing.T) {
		page := filepath.Join(out, "drivers.html")
		run(t, repo, bin, exitcode.OK, "qualverify", "report", receipt, "--key", pub, "-o", page)
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		html := string(b)
		if n := strings.Count(html, `<div class="driver" data-contract="`); n != 3 {
			t.Errorf("%d driver sections, want 3", n)
		}
		svg := regexp.MustCompile(`(?s)<svg class="chart" data-chart="layers".*?</svg>`).FindAllString(html, -1)
		if len(svg) != 1 {
			t.Fatalf("%d layer charts, want one inline svg", len(svg))
		}
		largest := results["reference-layers"]["largest_relative_error_growth"].(map[string]any)["name"].(string)
		if !strings.Contains(svg[0], `data-largest-growth="`+largest+`"`) {
			t.Errorf("the layer chart does not mark the largest growth at %s", largest)
		}
		if n, want := strings.Count(svg[0], "<circle"), len(results["reference-layers"]["boundaries"].([]any)); n != want {
			t.Errorf("%d points in the layer chart, %d boundaries", n, want)
		}
		tolRows := 0
		for _, tt := range regexp.MustCompile(`(?s)<table class="sortable tolerances">.*?</table>`).FindAllString(html, -1) {
			tolRows += strings.Count(tt, "<tr>") - 1
		}
		want := 0
		for _, r := range results {
			want += len(r["tolerances"].([]any))
		}
		if tolRows != want {
			t.Errorf("%d tolerance rows in the page, the results have %d", tolRows, want)
		}
		dom, console := chromium(t, page, "--dump-dom")
		root := regexp.MustCompile(`<html[^>]*>`).FindString(dom)
		for _, s := range []string{`data-report-ready="ok"`, `data-charts="1"`, `data-report-verified="true"`} {
			if !strings.Contains(root, s) {
				t.Errorf("the rendered root element %s lacks %s", root, s)
			}
		}
		for _, bad := range []string{"Uncaught", "Content Security Policy", "Refused to"} {
			if strings.Contains(console, bad) {
				t.Errorf("chromium console says %q:\n%s", bad, console)
			}
		}
		if !strings.Contains(dom, `data-chart="layers"`) {
			t.Error("no layer chart in the DOM")
		}
	})

	t.Run("edited result", func(t *testing.T) {
		raw, err := os.ReadFile(filepath.Join(repo, receipt))
		if err != nil {
			t.Fatal(err)
		}
		var rc contract.ReceiptDoc
		if err := jsonstrict.DecodeInto(raw, &rc); err != nil {
			t.Fatal(err)
		}
		path := ""
		for _, r := range rc.Results {
			if r.ID == "reference-paths" {
				path = filepath.Join(repo, r.CaseResult.Path)
			}
		}
		res := results["reference-paths"]
		p1 := res["paths"].([]any)[1].(map[string]any)
		p1["max_abs_error"] = p1["max_abs_error"].(float64) * 2 // its recorded outcome keeps the old number
		b, err := json.MarshalIndent(res, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		stdout, stderr := run(t, repo, bin, exitcode.Rejected, "qualverify", "report", receipt, "--key", pub, "--format", "json")
		if stdout != "" || !strings.Contains(stderr, "no report: 1 of 1 receipts did not verify") {
			t.Errorf("stdout %q stderr %q", stdout, stderr)
		}
		stamped, _ := run(t, repo, bin, exitcode.Rejected, "qualverify", "report", receipt, "--key", pub, "--format", "json", "--unverified-unsafe")
		requireContract(t, []byte(stamped), contract.ReportView)
		var v struct {
			Unverified bool `json:"unverified"`
			Receipts   []struct {
				Cases []struct {
					ID     string `json:"id"`
					Driver *struct {
						Mismatches []string `json:"mismatches"`
					} `json:"driver"`
				} `json:"cases"`
			} `json:"receipts"`
		}
		if err := json.Unmarshal([]byte(stamped), &v); err != nil {
			t.Fatal(err)
		}
		if !v.Unverified {
			t.Error("the stamped report is not marked unverified")
		}
		for _, c := range v.Receipts[0].Cases {
			if c.ID != "reference-paths" {
				continue
			}
			if c.Driver == nil || len(c.Driver.Mismatches) != 1 || !strings.Contains(c.Driver.Mismatches[0], "max_abs_error <= 1e-05 for "+p1["id"].(string)) {
				t.Errorf("the edited result's section: %+v", c.Driver)
			}
		}
	})
}
