package schemas

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestRepositoryWorkloadReferences: the committed workloads hold together across files, as
// qualrun run's preflight needs them to. Every serving case's launch recipe exists and is a valid
// launch recipe, the serving cases of a variant share one recipe (one owned server per campaign),
// a file corpus exists, has the digest the workload binds and one {"id", "text"} object a line, and
// every recipe under workloads/launch/ is used by some workload.
func TestRepositoryWorkloadReferences(t *testing.T) {
	root := filepath.Join("..")
	files, _ := filepath.Glob(filepath.Join(root, "workloads", "*.json"))
	used := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var w contract.WorkloadDoc
		if err := jsonstrict.DecodeInto(data, &w); err != nil || w.Schema != "qualkit.workload.v1" {
			continue // not a workload; TestRepositoryExamplesValid checks every file
		}
		for _, v := range w.Variants {
			launch := ""
			for _, c := range v.Cases {
				if c.Kind != "serving" {
					continue
				}
				if launch != "" && c.Launch != launch {
					t.Errorf("%s: variant %s: case %s launches %s, another case %s (one owned server per campaign)", f, v.ID, c.ID, c.Launch, launch)
				}
				launch = c.Launch
				used[c.Launch] = true
				recipe, err := os.ReadFile(filepath.Join(root, c.Launch))
				if err != nil {
					t.Errorf("%s: variant %s case %s: launch recipe: %v", f, v.ID, c.ID, err)
					continue
				}
				out, err := CheckDocument(recipe)
				if err != nil {
					t.Fatal(err)
				}
				if out.Contract.Name != "launch-recipe.v1" || !out.Valid() {
					t.Errorf("%s: variant %s case %s: %s is not a valid launch recipe (%s): %v", f, v.ID, c.ID, c.Launch, out.Contract.Name, out.Violations)
				}
				if c.Corpus != nil && c.Corpus.Source == "file" {
					checkCorpusFile(t, root, f, c.Corpus)
				}
			}
		}
	}
	recipes, _ := filepath.Glob(filepath.Join(root, "workloads", "launch", "*.json"))
	var unused []string
	for _, r := range recipes {
		rel, _ := filepath.Rel(root, r)
		if !used[filepath.ToSlash(rel)] {
			unused = append(unused, rel)
		}
	}
	sort.Strings(unused)
	for _, r := range unused {
		t.Errorf("%s: no workload under workloads/ launches it (a recipe comes with a workload)", r)
	}
}

func checkCorpusFile(t *testing.T, root, workload string, c *contract.Corpus) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, c.Path))
	if err != nil {
		t.Errorf("%s: corpus file: %v", workload, err)
		return
	}
	if got := evidence.DigestOf(data); got != c.Digest {
		t.Errorf("%s: corpus file %s has digest %s, the workload binds %s", workload, c.Path, got, c.Digest)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	ids := map[string]bool{}
	for n := 1; sc.Scan(); n++ {
		var p contract.Prompt
		if err := jsonstrict.DecodeInto(sc.Bytes(), &p); err != nil || p.ID == "" || p.Text == "" || ids[p.ID] {
			t.Errorf("%s line %d: want a strict {\"id\", \"text\", \"system\"?} object with a new id: %v", c.Path, n, err)
		}
		ids[p.ID] = true
	}
}

// TestDemoComparesLatencyByStatistics: the demo's performance rules compare latencies with the
// statistical operator, and its rows have enough measured requests for it. Two demo runs of one
// configuration on a busy host differ in every exact latency and rate by noise, so exact
// performance rules made `qualverify compare` of two demo receipts "not ok" on an idle change.
func TestDemoComparesLatencyByStatistics(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "workloads", "demo.json"))
	if err != nil {
		t.Fatal(err)
	}
	var w contract.WorkloadDoc
	if err := jsonstrict.DecodeInto(data, &w); err != nil {
		t.Fatal(err)
	}
	requests := map[string]int64{}
	for _, v := range w.Variants {
		for _, c := range v.Cases {
			if c.Requests != nil {
				requests[c.ID] = *c.Requests
			}
		}
	}
	for _, r := range w.ComparisonPolicy.MetricRules {
		if r.MetricClass != contract.MetricRuleMetricClassPerformance {
			continue
		}
		if r.Operator != contract.MetricRuleOperatorNotWorseSignificantly {
			t.Errorf("demo rule %s/%s: operator %s compares one noisy number exactly; want %s", r.ResultID, r.Metric, r.Operator, contract.MetricRuleOperatorNotWorseSignificantly)
		}
		if n := requests[r.ResultID]; n < metric.MinSamplesSignificance {
			t.Errorf("demo rule %s/%s: case has %d requests a row, under the %d a statistical rule needs", r.ResultID, r.Metric, n, metric.MinSamplesSignificance)
		}
	}
}
