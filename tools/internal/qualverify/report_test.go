package qualverify

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify/report"
)

var reportPNG = flag.String("report.png", "", "also write the demo report's screenshot to this path (docs/report.png)")

// demoPort replaces the demo's 18080 so that the test never meets a `make demo` or a server of
// another test (testscripts of this command use 18701-18719).
const demoPort = "18701"

// demoCampaign runs the demo workload (workloads/demo.json, owned qualsim) twice in a throwaway
// git repository whose origin/main is HEAD, signing with a throwaway key, with the real
// binaries. It returns the repository, the two receipts and the public key.
func demoCampaign(t *testing.T) (repo string, receipts []string, pub string, bin string) {
	t.Helper()
	bin = t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./cmd/qualrun", "./cmd/qualverify", "./cmd/qualsim")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	repo = filepath.Join(t.TempDir(), "repo")
	for _, f := range []string{"workloads/demo.json", "workloads/launch/qualsim.json"} {
		b, err := os.ReadFile(filepath.Join("../../..", f))
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte("127.0.0.1:18080"), []byte("127.0.0.1:"+demoPort))
		mustWriteFile(t, filepath.Join(repo, f), b)
	}
	mustWriteFile(t, filepath.Join(repo, ".gitignore"), []byte("/bin/\n/.qualification/\n"))
	qualsim, err := os.ReadFile(filepath.Join(bin, "qualsim"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "bin/qualsim"), qualsim, 0o755); err != nil {
		t.Fatal(err)
	}
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
	git("commit", "-q", "-m", "demo")
	git("clone", "-q", "--bare", repo, repo+".origin.git")
	git("remote", "add", "origin", repo+".origin.git")
	git("fetch", "-q", "origin")

	key := filepath.Join(t.TempDir(), "demo")
	run(t, repo, bin, 0, "qualrun", "keygen", "--unencrypted", "--output-prefix", key)
	for _, name := range []string{"one", "two"} {
		r := ".qualification/receipts/demo/" + name + ".json"
		run(t, repo, bin, 0, "qualrun", "run", "workloads/demo.json", "--variant", "cpu-reference", "--host-id", "demo-host", "--output", r, "--key", key+".key")
		receipts = append(receipts, r)
	}
	return repo, receipts, key + ".pub", bin
}

func mustWriteFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs one of the built CLIs in dir and checks its exit code; it returns stdout and stderr.
func run(t *testing.T, dir, bin string, want int, name string, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, name), args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if code != want {
		t.Fatalf("%s %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", name, args, code, want, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}

// TestReportDemo renders the report of the demo campaign (two runs of workloads/demo.json against
// an owned qualsim, signed with a throwaway key) and checks it: the JSON's p50 and p99 equal the
// case results' and the receipt's numbers exactly; the terminal summary fits 100 columns; the page
// renders in headless Chromium with every chart in the DOM and no script error; a tampered receipt
// yields no report at all, and a stamped one only on request.
func TestReportDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two real campaigns")
	}
	repo, receipts, pub, bin := demoCampaign(t)
	// On a loaded host a closed-loop row of the demo can be degraded (the client's own schedule
	// lag), which makes its receipt unpublishable (degraded_row). This test is about rendering
	// verified evidence, not publication, so publication is not required here.
	const unpublished = "--allow-unpublished-unsafe"
	out := t.TempDir()
	page := filepath.Join(out, "report.html")
	_, stderr := run(t, repo, bin, exitcode.OK, "qualverify", "report", receipts[0], receipts[1], "--key", pub, "-o", page, unpublished)
	if !strings.Contains(stderr, "(") || !strings.Contains(stderr, "verified)") {
		t.Fatalf("stderr %q", stderr)
	}

	t.Run("json percentiles are the receipt's", func(t *testing.T) {
		js, _ := run(t, repo, bin, exitcode.OK, "qualverify", "report", receipts[0], "--key", pub, "--format", "json", unpublished)
		requireContract(t, []byte(js), contract.ReportView)
		checkPercentiles(t, repo, receipts[0], []byte(js))
	})

	t.Run("json of a comparison is a report view", func(t *testing.T) {
		js, _ := run(t, repo, bin, exitcode.OK, "qualverify", "report", receipts[0], receipts[1], "--key", pub, "--format", "json", unpublished)
		requireContract(t, []byte(js), contract.ReportView)
		var v struct {
			Comparisons []struct {
				Rows []any `json:"rows"`
			} `json:"comparisons"`
		}
		if err := json.Unmarshal([]byte(js), &v); err != nil || len(v.Comparisons) != 1 || len(v.Comparisons[0].Rows) == 0 {
			t.Fatalf("comparison rows: %v %+v", err, v)
		}
	})

	t.Run("text fits 100 columns", func(t *testing.T) {
		text, _ := run(t, repo, bin, exitcode.OK, "qualverify", "report", receipts[0], receipts[1], "--key", pub, "--format", "text", unpublished)
		for i, l := range strings.Split(text, "\n") {
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("line %d has %d columns: %q", i+1, n, l)
			}
		}
		for _, re := range []string{`(?m)^  c4-r1 +20 +0 `, `(?m)^mode       same_environment_performance: `, `(?m)^scope      host demo-host, backend cpu`} {
			if !regexp.MustCompile(re).MatchString(text) {
				t.Errorf("text lacks %s:\n%s", re, text)
			}
		}
	})

	t.Run("chromium", func(t *testing.T) {
		html, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		// Two receipts of 4 rows with 5 distributions each, two concurrency charts per receipt,
		// one timeline per receipt, one chart of the intervals across repetitions per receipt
		// (the demo's case repeats) and one of the medians across the two receipts.
		want := map[string]int{"cdf": 40, "concurrency": 4, "timeline": 2, "intervals": 3}
		total := 0
		for kind, n := range want {
			if got := strings.Count(string(html), `data-chart="`+kind+`"`); got != n {
				t.Errorf("%d %s charts in the file, want %d", got, kind, n)
			}
			total += n
		}
		dom, console := chromium(t, page, "--dump-dom")
		// The script marks the root element: charts counted, no error recorded.
		root := regexp.MustCompile(`<html[^>]*>`).FindString(dom)
		for _, s := range []string{`data-report-ready="ok"`, fmt.Sprintf(`data-charts="%d"`, total), `data-report-verified="true"`} {
			if !strings.Contains(root, s) {
				t.Errorf("the rendered root element %s lacks %s", root, s)
			}
		}
		if strings.Contains(root, "data-report-errors") {
			t.Errorf("a script error: %s", root)
		}
		for _, bad := range []string{"Uncaught", "Content Security Policy", "Refused to"} {
			if strings.Contains(console, bad) {
				t.Errorf("chromium console says %q:\n%s", bad, console)
			}
		}
		if got := strings.Count(dom, "<svg class=\"chart\""); got != total {
			t.Errorf("%d charts in the DOM, want %d", got, total)
		}
		shot := filepath.Join(out, "report.png")
		chromium(t, page, "--screenshot="+shot, "--window-size=1360,1900", "--hide-scrollbars")
		b, err := os.ReadFile(shot)
		if err != nil || len(b) < 10000 || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Fatalf("screenshot: %v, %d bytes", err, len(b))
		}
		if *reportPNG != "" {
			if err := os.WriteFile(*reportPNG, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})

	t.Run("tampered receipt", func(t *testing.T) {
		path := filepath.Join(repo, receipts[1])
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte(`"demo-host"`))
		if i < 0 {
			t.Fatal("no host id in the receipt")
		}
		b[i+9] = 'u' // "demo-hosu": one byte, still a valid receipt
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		refused := filepath.Join(out, "refused.html")
		_, stderr := run(t, repo, bin, exitcode.Rejected, "qualverify", "report", receipts[0], receipts[1], "--key", pub, "-o", refused, unpublished)
		if !strings.Contains(stderr, "no report: 1 of 2 receipts did not verify") {
			t.Errorf("stderr %q", stderr)
		}
		if _, err := os.Stat(refused); !os.IsNotExist(err) {
			t.Fatalf("a report of a tampered receipt was written: %v", err)
		}
		stdout, _ := run(t, repo, bin, exitcode.Rejected, "qualverify", "report", receipts[1], "--key", pub, "--format", "json", unpublished)
		if stdout != "" {
			t.Errorf("json of a tampered receipt: %q", stdout)
		}
		stamped := filepath.Join(out, "stamped.html")
		run(t, repo, bin, exitcode.Rejected, "qualverify", "report", receipts[0], receipts[1], "--key", pub, "-o", stamped, "--unverified-unsafe", unpublished)
		html, err := os.ReadFile(stamped)
		if err != nil {
			t.Fatal(err)
		}
		sections := strings.Count(string(html), "<section")
		if sections != 3 || strings.Count(string(html), `<div class="stamp">UNVERIFIED</div>`) != sections {
			t.Errorf("%d sections, %d stamps", sections, strings.Count(string(html), `<div class="stamp">UNVERIFIED</div>`))
		}
	})
}

// checkPercentiles compares every p50 and p99 of the report's JSON with the case results the
// receipt binds, exactly, and each case's worst-row p99 with the receipt's.
func checkPercentiles(t *testing.T, repo, receipt string, js []byte) {
	t.Helper()
	var view struct {
		Verified bool `json:"verified"`
		Receipts []struct {
			Cases []struct {
				ID   string `json:"id"`
				Rows []struct {
					Name          string `json:"name"`
					Distributions []struct {
						Metric string  `json:"metric"`
						P50    float64 `json:"p50"`
						P99    float64 `json:"p99"`
					} `json:"distributions"`
				} `json:"rows"`
			} `json:"cases"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal(js, &view); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(repo, receipt))
	if err != nil {
		t.Fatal(err)
	}
	var rc contract.ReceiptDoc
	if err := jsonstrict.DecodeInto(raw, &rc); err != nil {
		t.Fatal(err)
	}
	if !view.Verified || len(view.Receipts) != 1 || len(view.Receipts[0].Cases) != len(rc.Results) {
		t.Fatalf("view: %s", js)
	}
	checked := 0
	for ci, res := range rc.Results {
		b, err := os.ReadFile(filepath.Join(repo, res.CaseResult.Path))
		if err != nil {
			t.Fatal(err)
		}
		var cr contract.CaseResultDoc
		if err := jsonstrict.DecodeInto(b, &cr); err != nil {
			t.Fatal(err)
		}
		vc := view.Receipts[0].Cases[ci]
		if vc.ID != res.ID || len(vc.Rows) != len(cr.Rows) || len(cr.Rows) != 4 {
			t.Fatalf("case %s: %d rows on the page, %d recorded", res.ID, len(vc.Rows), len(cr.Rows))
		}
		worst := map[string]float64{}
		for ri, row := range cr.Rows {
			recorded := map[string]float64{}
			for _, m := range row.Metrics {
				recorded[m.Name] = m.Value
			}
			vr := vc.Rows[ri]
			if vr.Name != fmt.Sprintf("c%d-r%d", row.Concurrency, row.Repetition) || len(vr.Distributions) != 5 {
				t.Fatalf("row %d: %+v", ri, vr)
			}
			for _, d := range vr.Distributions {
				for q, got := range map[string]float64{".p50": d.P50, ".p99": d.P99} {
					want, ok := recorded[d.Metric+q]
					if !ok || got != want {
						t.Errorf("%s %s%s: report %s, case result %s", vr.Name, d.Metric, q, strconv.FormatFloat(got, 'g', -1, 64), strconv.FormatFloat(want, 'g', -1, 64))
					}
					checked++
				}
				if d.P99 > worst[d.Metric] {
					worst[d.Metric] = d.P99
				}
			}
		}
		for _, m := range res.Metrics {
			base, ok := strings.CutSuffix(m.Name, ".p99.worst_row")
			if !ok {
				continue
			}
			if w, ok := worst[base]; ok && w != m.Value {
				t.Errorf("%s: the receipt says %v, the report's worst row %v", m.Name, m.Value, w)
			}
			checked++
		}
	}
	if checked < 40 {
		t.Fatalf("only %d numbers checked", checked)
	}
}

// chromium runs Debian's chromium headless on a file with the flags that keep it off the
// (closed) network, in a fresh profile; it returns stdout and the console log. Missing chromium
// fails the test under CI=true and skips it elsewhere.
func chromium(t *testing.T, page string, args ...string) (string, string) {
	t.Helper()
	path, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("chromium is not installed (CI=true): .ci/run installs Debian's chromium")
		}
		t.Skip("chromium is not installed: apt-get install chromium to render the report in a browser")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--enable-logging=stderr", "--v=0", "--user-data-dir=" + t.TempDir()}, args...)
	full = append(full, "file://"+abs)
	cmd := exec.CommandContext(ctx, path, full...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// TestDocsReportExample: the terminal example of docs/report.md is what the command prints.
func TestDocsReportExample(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/report.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "gives (a test runs this example):\n\n```sh\n")
	if !ok {
		t.Fatal("no example in docs/report.md")
	}
	command, rest, _ := strings.Cut(rest, "\n```\n")
	_, rest, _ = strings.Cut(rest, "```text\n")
	want, _, _ := strings.Cut(rest, "```\n")
	args := strings.Fields(command)
	if len(args) < 2 || args[0] != "bin/qualverify" {
		t.Fatalf("example command %q", command)
	}
	for i, a := range args {
		if strings.HasPrefix(a, "verify/testdata/") {
			args[i] = "../../../" + a
		}
	}
	var stdout, stderr bytes.Buffer
	if code := Main(append([]string{"qualverify"}, args[1:]...), &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if stdout.String() != want {
		t.Errorf("docs/report.md shows\n%s\nthe command prints\n%s", want, stdout.String())
	}
}

// TestReportExitCodes pins report's exit codes: 0 verified, 1 not verified (with or without the
// stamped page), 2 usage, 3 could not verify.
func TestReportExitCodes(t *testing.T) {
	f := frozen + "/.qualification/receipts/"
	key := frozen + "/frozen.pub"
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "qualification/receipts/dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"verified", []string{"report", f + "a-1.json", "--key", key, "--format", "text"}, exitcode.OK},
		{"verified, several", []string{"report", f + "a-1.json", f + "b-1.json", "--key", key, "-o", filepath.Join(dir, "r.html")}, exitcode.OK},
		{"usage: no receipt", []string{"report", "--key", key}, exitcode.Usage},
		{"usage: no key", []string{"report", f + "a-1.json", "--format", "json"}, exitcode.Usage},
		{"usage: html to nowhere", []string{"report", f + "a-1.json", "--key", key}, exitcode.Usage},
		{"usage: too many receipts", append([]string{"report", "--key", key, "--format", "json"}, slices.Repeat([]string{f + "a-1.json"}, report.MaxReceipts+1)...), exitcode.Usage},
		{"rejected: wrong key", []string{"report", f + "a-1.json", "--key", writeOtherKey(t, dir), "--format", "json"}, exitcode.Rejected},
		{"rejected: a receipt that is not a regular file", []string{"report", filepath.Join(dir, "qualification/receipts/dir.json"), "--key", key, "--format", "text"}, exitcode.Rejected},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main(append([]string{"qualverify"}, c.args...), &stdout, &stderr); got != c.want {
				t.Fatalf("exit %d, want %d\n%s%s", got, c.want, stdout.String(), stderr.String())
			}
			if c.want != exitcode.OK && stdout.Len() > 0 {
				t.Errorf("a failed report printed %q", stdout.String())
			}
		})
	}
}

// requireContract fails unless doc is a valid document of the named contract: what qualverify
// schema accepts.
func requireContract(t *testing.T, doc []byte, contractID string) {
	t.Helper()
	out, err := schemas.CheckDocument(doc)
	if err != nil || !out.Valid() || out.Contract.Name != contractID {
		t.Fatalf("not a valid %s (%s): %v %v", contractID, out.Contract.SchemaID, err, out.Violations)
	}
}

// writeOtherKey writes a public key that signed nothing here (from a fresh qualrun keygen-like
// P-256 key) and returns its path.
func writeOtherKey(t *testing.T, dir string) string {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "other.pub")
	mustWriteFile(t, p, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	return p
}
