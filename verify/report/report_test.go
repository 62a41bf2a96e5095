package report

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

var keep = flag.String("keep", "", "write the rendered frozen report (html, txt, json) into this directory")

const frozenRoot = "../testdata/frozen/v1"

var frozenReceipts = []string{".qualification/receipts/a-1.json", ".qualification/receipts/a-2.json", ".qualification/receipts/b-1.json"}

func frozenPolicy(t *testing.T) verify.Policy {
	t.Helper()
	pub, err := verify.LoadPublicKey(filepath.Join(frozenRoot, "frozen.pub"))
	if err != nil {
		t.Fatal(err)
	}
	p := verify.DefaultPolicy()
	p.Keys = []crypto.PublicKey{pub}
	return p
}

func evidenceAt(t *testing.T, root string, receipts ...string) []verify.Evidence {
	t.Helper()
	var out []verify.Evidence
	for _, r := range receipts {
		ev, err := verify.LocateIn(root, filepath.Join(root, r))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func frozenView(t *testing.T, receipts ...string) *View {
	t.Helper()
	v, err := Build(context.Background(), evidenceAt(t, frozenRoot, receipts...), frozenPolicy(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func render(t *testing.T, v *View) (html, text, js string) {
	t.Helper()
	var h, tx, j bytes.Buffer
	if err := v.HTML(&h); err != nil {
		t.Fatal(err)
	}
	if err := v.Text(&tx); err != nil {
		t.Fatal(err)
	}
	if err := v.JSON(&j); err != nil {
		t.Fatal(err)
	}
	return h.String(), tx.String(), j.String()
}

// TestFrozenReportNumbersAreTheReceipts: a report of the frozen campaigns verifies them, and the
// p50 and p99 of every distribution on the page equal, exactly, the values the case results
// record (the same estimator over the same records), and the percentile of the drawn samples.
func TestFrozenReportNumbersAreTheReceipts(t *testing.T) {
	v := frozenView(t, frozenReceipts...)
	if !v.Verified || len(v.Receipts) != 3 || len(v.Comparisons) != 2 {
		t.Fatalf("verified %v, %d receipts, %d comparisons", v.Verified, len(v.Receipts), len(v.Comparisons))
	}
	checked := 0
	for i, r := range v.Receipts {
		if r.Verification.Verdict != "verified" || r.Scope == "" || r.Source == nil || r.Lifecycle == nil {
			t.Fatalf("%s: %+v", r.Path, r.Verification)
		}
		recorded := recordedRows(t, r.Path)
		for k, c := range r.Cases {
			for j, row := range c.Rows {
				want := recorded[c.ID+"/"+row.Name]
				if want == nil {
					t.Fatalf("%s %s %s: no recorded row", r.Path, c.ID, row.Name)
				}
				if len(row.Distributions) < 4 {
					t.Fatalf("%s %s: %d distributions", r.Path, row.Name, len(row.Distributions))
				}
				for _, d := range row.Distributions {
					samples := v.samplesOf(i, k, j, string(d.Metric))
					for _, q := range []struct {
						suffix string
						got    float64
						p      float64
					}{{".p50", d.P50, 0.5}, {".p99", d.P99, 0.99}} {
						w, ok := want[string(d.Metric)+q.suffix]
						if !ok {
							t.Fatalf("%s: the receipt has no %s", row.Name, string(d.Metric)+q.suffix)
						}
						if q.got != w {
							t.Errorf("%s %s %s%s: page %v, receipt %v", r.Path, c.ID, row.Name, d.Metric, q.got, w)
						}
						if s := metric.Percentile(samples, q.p); s != q.got {
							t.Errorf("%s %s%s: drawn samples give %v, page %v", row.Name, d.Metric, q.suffix, s, q.got)
						}
						checked++
					}
					if int64(len(samples)) != d.Count {
						t.Errorf("%s %s: %d samples drawn, count %d", row.Name, d.Metric, len(samples), d.Count)
					}
				}
				if len(row.Mismatches) != 0 {
					t.Errorf("%s: mismatches %v", row.Name, row.Mismatches)
				}
			}
		}
		names := []string{}
		for _, e := range r.Lifecycle.Events {
			names = append(names, string(e.Name))
		}
		if strings.Join(names, ",") != "launch,ready,first request,last response,SIGTERM,exit" {
			t.Errorf("lifecycle events %v", names)
		}
		for i := 1; i < len(r.Lifecycle.Events); i++ {
			if r.Lifecycle.Events[i].TNs < r.Lifecycle.Events[i-1].TNs {
				t.Errorf("events out of order: %+v", r.Lifecycle.Events)
			}
		}
		if r.Lifecycle.Ownership != "owned" || r.Lifecycle.Residue != "none" {
			t.Errorf("ownership %s residue %s", r.Lifecycle.Ownership, r.Lifecycle.Residue)
		}
	}
	if checked == 0 {
		t.Fatal("no percentile checked")
	}
	// a-2 against a-1: one variant, like for like, every row side by side.
	same := v.Comparisons[0]
	if same.Mode != "same_environment_performance" || !same.Compatible || len(same.Rows) != 2 {
		t.Fatalf("same-environment comparison: %+v", same)
	}
	// b-1 against a-1: the declared pair, with its rule verdicts beside the rows.
	ab := v.Comparisons[1]
	if ab.Mode != "declared_ab_variants" || !ab.OK || len(ab.Rows) != 2 || len(ab.Allowed) == 0 {
		t.Fatalf("declared A/B comparison: %+v", ab)
	}
	rules := 0
	for _, row := range ab.Rows {
		for _, m := range row.Metrics {
			if m.Rule != "" {
				rules++
			}
			if m.Change != m.Candidate-m.Baseline {
				t.Errorf("%s: change %v", m.Metric, m.Change)
			}
		}
	}
	if rules == 0 {
		t.Error("no rule verdict beside a compared row")
	}
}

// recordedRows reads the frozen case results of a receipt: row metrics by "<case>/c<c>-r<r>".
func recordedRows(t *testing.T, receipt string) map[string]map[string]float64 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(frozenRoot, receipt))
	if err != nil {
		t.Fatal(err)
	}
	var rc contract.ReceiptDoc
	if err := jsonstrict.DecodeInto(raw, &rc); err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, r := range rc.Results {
		if r.CaseResult == nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(frozenRoot, r.CaseResult.Path))
		if err != nil {
			t.Fatal(err)
		}
		var cr contract.CaseResultDoc
		if err := jsonstrict.DecodeInto(b, &cr); err != nil {
			t.Fatal(err)
		}
		for _, row := range cr.Rows {
			m := map[string]float64{}
			for _, x := range row.Metrics {
				m[x.Name] = x.Value
			}
			out[r.ID+"/"+rowName(row.Concurrency, row.Repetition)] = m
		}
	}
	return out
}

// externalRef matches anything that would make a browser fetch: a src or href with a scheme or a
// protocol-relative URL, a CSS url() or @import, a <link>, <img>, <iframe>, <object> or <embed>.
var externalRef = regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|poster)\s*=\s*["']?\s*([a-z][a-z0-9+.-]*:|//)|url\(|@import|<(link|img|iframe|object|embed|base)\b`)

// TestHTMLIsSelfContained: the page references nothing outside itself, carries a
// Content-Security-Policy that forbids fetching, and draws its charts as inline SVG.
func TestHTMLIsSelfContained(t *testing.T) {
	v := frozenView(t, frozenReceipts...)
	page, text, js := render(t, v)
	if *keep != "" {
		for name, s := range map[string]string{"report.html": page, "report.txt": text, "report.json": js} {
			if err := os.WriteFile(filepath.Join(*keep, name), []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if m := externalRef.FindAllString(page, -1); len(m) > 0 {
		t.Fatalf("external references in the page: %q", m)
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") {
		i := strings.Index(page, "http")
		t.Fatalf("a URL in the page: %q", page[max(0, i-80):min(len(page), i+80)])
	}
	if !strings.Contains(page, `http-equiv="Content-Security-Policy" content="default-src &#39;none&#39;`) {
		t.Fatal("no Content-Security-Policy forbidding everything by default")
	}
	if n := strings.Count(page, "<script>"); n != 1 {
		t.Fatalf("%d scripts, want one inline script", n)
	}
	// 3 receipts x 2 rows x 5 distributions, 2 concurrency charts per case with rows, 3 timelines.
	for kind, want := range map[string]int{"cdf": 30, "concurrency": 6, "timeline": 3} {
		if got := strings.Count(page, `data-chart="`+kind+`"`); got != want {
			t.Errorf("%d %s charts, want %d", got, kind, want)
		}
	}
	if strings.Contains(page, "UNVERIFIED") && !strings.Contains(page, "from verified evidence") {
		t.Error("a verified report says UNVERIFIED")
	}
	if strings.Contains(page, "UNVERIFIED —") || strings.Contains(page, `class="stamp"`) {
		t.Error("a verified report carries the unverified stamp")
	}
	var back View
	if err := json.Unmarshal([]byte(js), &back); err != nil || back.Schema != Schema || len(back.Receipts) != 3 {
		t.Fatalf("json: %v %+v", err, back.Schema)
	}
}

// TestTextFitsHundredColumns: the terminal summary of a full report (three receipts, two
// comparisons) has no line wider than 100 columns, and carries each row's numbers.
func TestTextFitsHundredColumns(t *testing.T) {
	v := frozenView(t, frozenReceipts...)
	_, text, _ := render(t, v)
	for i, l := range strings.Split(text, "\n") {
		if n := utf8.RuneCountInString(l); n > TextWidth {
			t.Errorf("line %d has %d columns: %q", i+1, n, l)
		}
	}
	row := v.Receipts[0].Cases[0].Rows[1]
	want := format.Num(dist(&row, "ttft_ms").P50) + "/" + format.Num(dist(&row, "ttft_ms").P99)
	if !regexp.MustCompile(`(?m)^  ` + row.Name + ` .* ` + regexp.QuoteMeta(want) + ` `).MatchString(text) {
		t.Errorf("no row line for %s with TTFT %s:\n%s", row.Name, want, text)
	}
	for _, s := range []string{"mode       same_environment_performance: rules failed", "mode       declared_ab_variants: ok", "scope      host frozen-host"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q", s)
		}
	}
}

// TestUnverifiedViewIsStampedEverywhere: evidence with one flipped byte does not verify; its view
// says so, and when rendered anyway every section and the text are stamped UNVERIFIED.
func TestUnverifiedViewIsStampedEverywhere(t *testing.T) {
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(frozenRoot)); err != nil {
		t.Fatal(err)
	}
	var records string
	fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if records == "" && strings.HasSuffix(p, "c0002-r000.jsonl") && strings.Contains(p, "509242b324") {
			records = p
		}
		return nil
	})
	path := filepath.Join(root, records)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"t_end_ns":`)) + len(`"t_end_ns":`)
	b[i] = '1' + (b[i]-'0')%8 // another digit: the file no longer has its digest
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := Build(context.Background(), evidenceAt(t, root, frozenReceipts[:2]...), frozenPolicy(t), "test")
	if err != nil {
		t.Fatal(err)
	}
	if v.Verified {
		t.Fatal("tampered evidence verified")
	}
	v.Unverified = true
	page, text, js := render(t, v)
	sections := strings.Count(page, "<section")
	if sections < 3 || strings.Count(page, `<div class="stamp">UNVERIFIED</div>`) != sections {
		t.Errorf("%d sections, %d stamps", sections, strings.Count(page, `<div class="stamp">UNVERIFIED</div>`))
	}
	for _, s := range []string{"<title>UNVERIFIED", `id="unverified-banner"`, `class="watermark"`, "from UNVERIFIED evidence"} {
		if !strings.Contains(page, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	if !strings.HasPrefix(text, "*** UNVERIFIED") || strings.Count(text, "[UNVERIFIED]") != 3 {
		t.Errorf("text not stamped:\n%s", text)
	}
	if !strings.Contains(js, `"unverified": true`) || !strings.Contains(js, `"verified": false`) {
		t.Error("json not marked unverified")
	}
	if !strings.Contains(page, "hashes") || !strings.Contains(page, "digest_mismatch") {
		t.Error("the page does not show the finding")
	}
}
