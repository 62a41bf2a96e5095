package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite schemas/testdata/report-view.v1/valid from the views these tests build")

// TestViewIsTheContract: a View's JSON is its embedded ReportViewDoc, the contract's Go type, and
// nothing else (its other members are unexported rendering state); every part of a View is the
// contract's types by alias.
func TestViewIsTheContract(t *testing.T) {
	v := reflect.TypeFor[View]()
	var exported []string
	for i := 0; i < v.NumField(); i++ {
		if f := v.Field(i); f.IsExported() {
			exported = append(exported, f.Name)
			if !f.Anonymous || f.Type != reflect.TypeFor[contract.ReportViewDoc]() || f.Tag != "" {
				t.Errorf("View member %s (%s, tag %q) is not the embedded schemas.ReportViewDoc", f.Name, f.Type, f.Tag)
			}
		}
	}
	if len(exported) != 1 {
		t.Errorf("View has exported members %v, want only the embedded ReportViewDoc", exported)
	}
}

// viewJSON renders a view's JSON and requires it to be a valid report view.
func viewJSON(t *testing.T, v *View) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := v.JSON(&b); err != nil {
		t.Fatal(err)
	}
	out, err := schemas.CheckDocument(b.Bytes())
	if err != nil || !out.Valid() || out.Contract.Name != contract.ReportView {
		t.Fatalf("the view's JSON is not a valid %s: %v %v", contract.ReportView, err, out.Violations)
	}
	return b.Bytes()
}

// TestReportViewCorpus renders real views (the frozen campaigns, one receipt and three with their
// comparisons; a tampered copy rendered anyway; the driver sections of the driver contracts'
// corpus documents) and requires each JSON to be a valid report view equal to its document in
// the contract's corpus, which -update-corpus rewrites.
func TestReportViewCorpus(t *testing.T) {
	nt, _ := corpusDriver(t, contract.NextTokenResult, "reference-next-token.json", nil)
	pa, _ := corpusDriver(t, contract.PathAttribution, "reference-path.json", nil)
	la, _ := corpusDriver(t, contract.LayerAttribution, "reference-layers.json", nil)
	tampered, tamperedRoot := tamperedView(t)
	views := map[string]*View{
		"frozen-one-receipt.json":    frozenView(t, frozenReceipts[0]),
		"frozen-three-receipts.json": frozenView(t, frozenReceipts...),
		"unverified-tampered.json":   tampered,
		"driver-sections.json":       driverView(driverCase("next", nt), driverCase("paths", pa), driverCase("layers", la)),
	}
	frozenAbs, err := filepath.Abs(frozenRoot)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(corpus, contract.ReportView, "valid")
	for name, v := range views {
		// The notes name the evidence root (not a git checkout): the corpus says /srv/evidence.
		got := viewJSON(t, v)
		for _, root := range []string{frozenAbs, tamperedRoot} {
			got = bytes.ReplaceAll(got, []byte(root), []byte("/srv/evidence"))
		}
		if out, err := schemas.CheckDocument(got); err != nil || !out.Valid() {
			t.Fatalf("%s with the root replaced: %v %v", name, err, out.Violations)
		}
		path := filepath.Join(dir, name)
		if *updateCorpus {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./report -run TestReportViewCorpus -update-corpus writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the view the code renders now (-update-corpus rewrites it)", path)
		}
	}
}

// tamperedView is the view of the frozen a-1 and a-2 with one digit of a records file changed,
// marked for rendering anyway (--unverified-unsafe), and the evidence root it was built from.
func tamperedView(t *testing.T) (*View, string) {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(frozenRoot)); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(root, ".qualification/runs/*509242b324*/cases/*/rows/c0002-r000.jsonl"))
	if len(matches) == 0 {
		t.Fatal("no records file to tamper with")
	}
	b, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"t_end_ns":`)) + len(`"t_end_ns":`)
	b[i] = '1' + (b[i]-'0')%8
	if err := os.WriteFile(matches[0], b, 0o644); err != nil {
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
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	return v, abs
}

// TestJSONRefusesViewsOutsideTheContract: a view that breaks its contract (a rule, a bound, a
// missing list) is never written.
func TestJSONRefusesViewsOutsideTheContract(t *testing.T) {
	for name, edit := range map[string]func(v *View){
		"verified with a rejected receipt": func(v *View) { v.Receipts[0].Verification.Verdict = "rejected" },
		"unknown check":                    func(v *View) { v.Receipts[0].Verification.Checks[0].Check = "thermal" },
		"null list":                        func(v *View) { v.Receipts[0].Notes = nil },
		"comparison missing":               func(v *View) { v.Comparisons = v.Comparisons[:1] },
		"row name":                         func(v *View) { v.Receipts[1].Cases[0].Rows[0].Name = "row-1" },
	} {
		t.Run(name, func(t *testing.T) {
			v := frozenView(t, frozenReceipts...)
			edit(v)
			var b bytes.Buffer
			err := v.JSON(&b)
			if err == nil || !strings.Contains(err.Error(), "does not satisfy its contract") {
				t.Fatalf("JSON = %v", err)
			}
			if b.Len() != 0 {
				t.Errorf("%d bytes written", b.Len())
			}
		})
	}
}

// TestBuildBoundsReceipts: more receipts than a view may show is an error, before any verifying.
func TestBuildBoundsReceipts(t *testing.T) {
	evs := make([]verify.Evidence, MaxReceipts+1)
	if _, err := Build(context.Background(), evs, verify.DefaultPolicy(), "test"); !errors.Is(err, ErrTooManyReceipts) {
		t.Fatalf("Build = %v, want ErrTooManyReceipts", err)
	}
}

// TestBoundsHelpers: text is cut with a mark, pointers at a token boundary, lists with a count.
func TestBoundsHelpers(t *testing.T) {
	if got := clip(strings.Repeat("é", 10), 4); got != "ééé…" {
		t.Errorf("clip = %q", got)
	}
	if got := clip("short", 8); got != "short" {
		t.Errorf("clip = %q", got)
	}
	if got := pointerWithin("/a/bc/def", 6); got != "/a/bc" {
		t.Errorf("pointerWithin = %q", got)
	}
	if got := pointerWithin("/"+strings.Repeat("x", 20), 6); got != "" {
		t.Errorf("pointerWithin = %q", got)
	}
	in := make([]string, maxEntries+5)
	got := messages(in)
	if len(got) != maxEntries || got[0] != "-" || got[maxEntries-1] != "… and 6 more" {
		t.Errorf("messages: %d entries, first %q, last %q", len(got), got[0], got[len(got)-1])
	}
	c := bounded(Comparison{Rows: make([]RowDelta, maxEntries+2)}, nil)
	if len(c.Rows) != maxEntries || len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], "2 more like-for-like rows") {
		t.Errorf("bounded: %d rows, warnings %q", len(c.Rows), c.Warnings)
	}
}
