package verify

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite schemas/testdata/comparison.v1/valid from the comparisons these tests make")

// reportJSON marshals a comparison's report as qualverify compare --json prints it and requires it
// to be a valid comparison report.
func reportJSON(t *testing.T, c *Comparison) []byte {
	t.Helper()
	b, err := json.MarshalIndent(c.Report(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	out, err := schemas.CheckDocument(b)
	if err != nil || !out.Valid() || out.Contract.Name != contract.Comparison {
		t.Fatalf("not a valid %s: %v %v\n%s", contract.Comparison, err, out.Violations, b)
	}
	return b
}

// TestComparisonReportCorpus compares real evidence in every outcome the contract describes (ok
// declared A/B variants; a failed rule in the same environment; a refused pair; a cross-backend
// output mismatch; evidence errors from a changed records file) and requires each report to be a
// valid comparison report equal to its document in the contract's corpus (-update-corpus
// rewrites them).
func TestComparisonReportCorpus(t *testing.T) {
	outputsDiffer, outputsPolicy := crossBackend(t, func(root string, run func(string) string) { otherOutput(t, run) })
	tampered := copyTree(t, frozenRoot)
	rows := filepath.Join(tampered, runDirOf(t, tampered, recA2), "cases/000-chat-stream-r000/rows/c0002-r000.jsonl")
	b, err := os.ReadFile(rows)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte(`"t_end_ns":`)) + len(`"t_end_ns":`)
	b[i] = '1' + (b[i]-'0')%8
	mustWrite(t, rows, b)

	for name, c := range map[string]*Comparison{
		"declared-ab-variants-ok.json":         compareAt(t, frozenRoot, recA1, recB1, frozenPolicy(t)),
		"same-environment-rule-failed.json":    compareAt(t, frozenRoot, recA1, recA2, frozenPolicy(t)),
		"reversed-pair-refused.json":           compareAt(t, frozenRoot, recB1, recA1, frozenPolicy(t)),
		"cross-backend-outputs-differ.json":    compareAt(t, outputsDiffer, recA1, recB1, outputsPolicy),
		"evidence-errors-changed-records.json": compareAt(t, tampered, recA1, recA2, frozenPolicy(t)),
	} {
		got := reportJSON(t, c)
		path := filepath.Join("..", "schemas", "testdata", contract.Comparison, "valid", name)
		if *updateCorpus {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test . -run TestComparisonReportCorpus -update-corpus writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the report the code makes now (-update-corpus rewrites it)", path)
		}
	}
}
