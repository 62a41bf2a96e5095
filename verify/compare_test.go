package verify

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/verify/internal/record"
)

const (
	recA1 = ".qualification/receipts/a-1.json"
	recA2 = ".qualification/receipts/a-2.json"
	recB1 = ".qualification/receipts/b-1.json"
)

func compareAt(t *testing.T, root, base, cand string, p Policy) *Comparison {
	t.Helper()
	eb, err := LocateIn(root, filepath.Join(root, base))
	if err != nil {
		t.Fatal(err)
	}
	ec, err := LocateIn(root, filepath.Join(root, cand))
	if err != nil {
		t.Fatal(err)
	}
	cmp, err := Compare(context.Background(), eb, ec, p)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return cmp
}

func frozenPolicy(t *testing.T) Policy {
	t.Helper()
	pub, err := LoadPublicKey(filepath.Join(frozenRoot, "frozen.pub"))
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultPolicy()
	p.RequirePublishable = false
	p.Keys = []crypto.PublicKey{pub}
	return p
}

func hasDifference(ds []Difference, r *Reason, path string) bool {
	for _, d := range ds {
		if errors.Is(d.Err, r) && strings.HasPrefix(d.Path, path) {
			return true
		}
	}
	return false
}

func describe(c *Comparison) string {
	var b strings.Builder
	for _, d := range c.Rejected {
		b.WriteString("\n  rejected " + d.Path + ": " + d.Err.Error())
	}
	for _, e := range c.EvidenceErrors {
		b.WriteString("\n  evidence " + string(e.Side) + ": " + e.Error())
	}
	for _, e := range c.Evaluations {
		if e.Status != "passed" {
			b.WriteString("\n  " + string(e.Status) + " " + e.Scope + ": " + e.Reason)
		}
	}
	return b.String()
}

// Declared A/B variants on real evidence: cpu-a (baseline) against cpu-b (candidate).
func TestCompareDeclaredABVariants(t *testing.T) {
	c := compareAt(t, frozenRoot, recA1, recB1, frozenPolicy(t))
	if !c.OK || c.Mode != DeclaredABVariants {
		t.Fatalf("ok %v mode %s:%s", c.OK, c.Mode, describe(c))
	}
	if !hasDifference(c.Allowed, ErrConfigMismatch, "effective_config.server.token_interval_ms") || !hasDifference(c.Allowed, ErrArtifactMismatch, "artifacts.launch_recipe") {
		t.Errorf("allowed differences %v", c.Allowed)
	}
	if len(c.Evaluations) != 9 {
		t.Errorf("%d evaluations, want 9 (4 row rules x 2 rows + 1 result rule)", len(c.Evaluations))
	}
	// Direction matters: the pair is declared baseline cpu-a, candidate cpu-b.
	r := compareAt(t, frozenRoot, recB1, recA1, frozenPolicy(t))
	if r.Compatible || r.OK || !hasDifference(r.Rejected, ErrModeRefused, "workload.variant") || len(r.Evaluations) != 0 {
		t.Fatalf("reversed pair accepted:%s", describe(r))
	}
}

// Same environment, same variant, on real evidence: two runs of cpu-a a minute apart. The
// receipts are like for like; a-2's row c2-r0 is degraded (its client fell behind its schedule,
// frozen), so every performance rule on that row is refused (degraded_row, naming the row)
// rather than evaluated; the other row's rules are evaluated.
func TestCompareSameEnvironment(t *testing.T) {
	c := compareAt(t, frozenRoot, recA1, recA2, frozenPolicy(t))
	if !c.Compatible || c.Mode != SameEnvironmentPerformance || c.OK {
		t.Fatalf("compatible %v mode %s ok %v:%s", c.Compatible, c.Mode, c.OK, describe(c))
	}
	var failed, evaluated []Evaluation
	for _, e := range c.Evaluations {
		if e.Status == "failed" {
			failed = append(failed, e)
		} else if strings.Contains(e.Scope, "/rows/c1-r0/") {
			evaluated = append(evaluated, e)
		}
	}
	if len(failed) == 0 || len(evaluated) == 0 {
		t.Fatalf("failed evaluations %+v, evaluated on c1-r0 %+v", failed, evaluated)
	}
	for _, e := range failed {
		if e.Code != ErrDegradedRow.Code() || e.MetricClass != "performance" || !strings.Contains(e.Scope, "/rows/c2-r0/") ||
			!strings.Contains(e.Reason, "row c2-r0 of result chat-stream is degraded in the candidate's evidence") || e.Violation != nil {
			t.Errorf("failed evaluation %+v, want a degraded_row refusal of row c2-r0", e)
		}
	}
	if same := compareAt(t, frozenRoot, recA1, recA1, frozenPolicy(t)); same.Compatible {
		t.Fatal("a receipt compared with itself")
	}
	// A policy tightens a rule, never loosens it.
	p := frozenPolicy(t)
	p.Metrics = []MetricTolerance{{Metric: "ttft_ms.p50", AbsoluteTolerance: 100, RelativeTolerance: 10}, {Metric: "output_throughput_window", AbsoluteTolerance: 0, RelativeTolerance: 0.01}}
	for _, e := range compareAt(t, frozenRoot, recA1, recA2, p).Evaluations {
		switch e.Metric {
		case "ttft_ms.p50":
			if e.AbsoluteTolerance != 5 || e.RelativeTolerance != 0.5 {
				t.Errorf("ttft tolerance loosened to %v/%v", e.AbsoluteTolerance, e.RelativeTolerance)
			}
		case "output_throughput_window":
			if e.RelativeTolerance != 0.01 {
				t.Errorf("throughput tolerance not tightened: %v", e.RelativeTolerance)
			}
		}
	}
}

// resealedPair copies the frozen evidence, applies change, and seals a-1, a-2 and b-1 again with
// a test key, returning the root and a policy pinning that key.
func resealedPair(t *testing.T, change func(root string, run func(string) string)) (string, Policy) {
	t.Helper()
	root := copyTree(t, frozenRoot)
	k := newTestKey(t)
	run := func(receipt string) string { return filepath.Join(root, runDirOf(t, root, receipt)) }
	change(root, run)
	for _, r := range frozenReceipts {
		reseal(t, root, r, k)
	}
	p := k.policy()
	p.RequirePublishable = false
	return root, p
}

func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	m := readTree(t, path)
	edit(m)
	writeTree(t, path, m)
}

func TestCompareRefusesUnlikeRows(t *testing.T) {
	caseResult := func(run func(string) string, r string) string {
		return filepath.Join(run(r), "cases/000-chat-stream-r000/case-result.json")
	}
	cases := []struct {
		name   string
		change func(root string, run func(string) string)
		reason *Reason
		path   string
	}{
		{"environment differs in a same-environment comparison", func(root string, run func(string) string) {
			editJSON(t, filepath.Join(root, recA2), func(m map[string]any) {
				m["environment"].(map[string]any)["os"].(map[string]any)["kernel"] = "6.1.0-other"
			})
		}, ErrEnvironmentMismatch, "environment.os.kernel"},
		{"a row is missing", func(root string, run func(string) string) {
			editJSON(t, caseResult(run, recA2), func(m map[string]any) {
				m["rows"] = m["rows"].([]any)[:1]
			})
		}, ErrUnlikeRows, "results.chat-stream.r0.rows.c2-r0"},
		{"other prompts", func(root string, run func(string) string) {
			editJSON(t, caseResult(run, recA2), func(m map[string]any) {
				m["rows"].([]any)[0].(map[string]any)["prompt_set_sha256"] = "sha256:" + strings.Repeat("0", 64)
			})
		}, ErrCorpusMismatch, "results.chat-stream.r0.rows.c1-r0.prompt_set_sha256"},
		{"mixed formula ids: a decode rate against a window throughput", func(root string, run func(string) string) {
			editJSON(t, caseResult(run, recA2), func(m map[string]any) {
				for _, x := range m["rows"].([]any)[0].(map[string]any)["metrics"].([]any) {
					if mm := x.(map[string]any); mm["name"] == "output_throughput_window" {
						mm["formula"] = "decode_rate.v1"
					}
				}
			})
		}, ErrFormulaMismatch, "results.chat-stream.r0.rows.c1-r0.metrics.output_throughput_window"},
		{"another model file", func(root string, run func(string) string) {
			editJSON(t, filepath.Join(root, recA2), func(m map[string]any) {
				m["artifacts"] = append(m["artifacts"].([]any), map[string]any{"kind": "model_weight", "path": "/models/m/model.safetensors",
					"digest": "sha256:" + strings.Repeat("1", 64), "bytes": json.Number("42")})
			})
		}, ErrArtifactMismatch, "artifacts.model_weight"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, p := resealedPair(t, tc.change)
			c := compareAt(t, root, recA1, recA2, p)
			if c.Compatible || c.OK || !hasDifference(c.Rejected, tc.reason, tc.path) {
				t.Fatalf("compatible %v, want a %s rejection at %s:%s", c.Compatible, tc.reason.Code(), tc.path, describe(c))
			}
			if len(c.Evaluations) != 0 {
				t.Errorf("%d rules evaluated on incomparable receipts", len(c.Evaluations))
			}
		})
	}
}

// crossBackend turns the frozen workload into a cross-backend correctness workload (cpu-a on cpu,
// cpu-b on cuda) and b-1 into a CUDA receipt on a GPU host.
func crossBackend(t *testing.T, extra func(root string, run func(string) string)) (string, Policy) {
	return resealedPair(t, func(root string, run func(string) string) {
		editJSON(t, filepath.Join(root, "workloads/frozen.json"), func(w map[string]any) {
			w["kind"] = "correctness"
			v := w["variants"].([]any)[1].(map[string]any)
			v["backend"], v["device_requirement"], v["skip_policy"] = "cuda", "required", "fail"
			cp := w["comparison_policy"].(map[string]any)
			cp["mode"] = "cross_backend_correctness"
			cp["variant_pairs"] = []any{}
			cp["backend_pairs"] = []any{map[string]any{"backend_a": "cpu", "variant_a_id": "cpu-a", "backend_b": "cuda", "variant_b_id": "cpu-b",
				"allowed_environment_differences": []any{"device.architecture", "device.driver", "device.name"}}}
			var rules []any
			for _, r := range cp["metric_rules"].([]any) {
				if r.(map[string]any)["metric_class"] == "correctness" {
					rules = append(rules, r)
				}
			}
			cp["metric_rules"] = rules
		})
		for _, r := range frozenReceipts {
			editJSON(t, filepath.Join(root, r), func(m map[string]any) {
				m["qualification"].(map[string]any)["kind"] = "correctness"
			})
		}
		editJSON(t, filepath.Join(root, recB1), func(m map[string]any) {
			m["qualification"].(map[string]any)["backend"] = "cuda"
			d := m["environment"].(map[string]any)["device"].(map[string]any)
			d["name"], d["architecture"], d["driver"] = "NVIDIA H200", "sm_90", "cuda 13.0"
		})
		renameRun(t, root, recB1) // the receipt id names the backend
		if extra != nil {
			extra(root, run)
		}
	})
}

func TestCompareCrossBackendCorrectness(t *testing.T) {
	root, p := crossBackend(t, nil)
	c := compareAt(t, root, recA1, recB1, p)
	if !c.OK || c.Mode != CrossBackendCorrectness {
		t.Fatalf("ok %v mode %s:%s", c.OK, c.Mode, describe(c))
	}
	for _, path := range []string{"environment.device.name", "environment.device.driver", "environment.device.architecture"} {
		if !hasDifference(c.Allowed, ErrEnvironmentMismatch, path) {
			t.Errorf("%s not reported as an allowed difference", path)
		}
	}
	outputs := 0
	for _, e := range c.Evaluations {
		if e.MetricClass != "correctness" {
			t.Errorf("a %s rule was evaluated across backends", e.MetricClass)
		}
		if e.Metric == "output_set_sha256" {
			outputs++
		}
	}
	if outputs != 2 {
		t.Errorf("%d output comparisons, want one per row (2)", outputs)
	}
	// Order-insensitive: the pair may be compared either way.
	if r := compareAt(t, root, recB1, recA1, p); !r.OK {
		t.Fatalf("reversed pair:%s", describe(r))
	}
	// Same backend on both sides is not the declared pair.
	if r := compareAt(t, root, recA1, recA2, p); r.Compatible || !hasDifference(r.Rejected, ErrModeRefused, "qualification.backend") {
		t.Fatalf("cpu against cpu accepted:%s", describe(r))
	}
}

func TestCompareCrossBackendRejections(t *testing.T) {
	t.Run("undeclared environment difference", func(t *testing.T) {
		root, p := crossBackend(t, func(root string, run func(string) string) {
			editJSON(t, filepath.Join(root, recB1), func(m map[string]any) {
				m["environment"].(map[string]any)["os"].(map[string]any)["kernel"] = "6.8.0-gpu"
			})
		})
		if c := compareAt(t, root, recA1, recB1, p); c.Compatible || !hasDifference(c.Rejected, ErrEnvironmentMismatch, "environment.os.kernel") {
			t.Fatalf("accepted:%s", describe(c))
		}
	})
	t.Run("outputs differ", func(t *testing.T) {
		root, p := crossBackend(t, func(root string, run func(string) string) { otherOutput(t, run) })
		c := compareAt(t, root, recA1, recB1, p)
		if !c.Compatible || c.OK {
			t.Fatalf("compatible %v ok %v:%s", c.Compatible, c.OK, describe(c))
		}
		found := false
		for _, e := range c.Evaluations {
			found = found || (e.Metric == "output_set_sha256" && e.Status == "failed" && strings.Contains(e.Scope, "c1-r0"))
		}
		if !found {
			t.Fatalf("no failed output comparison:%s", describe(c))
		}
	})
}

// otherOutput changes one output of b-1's row c1-r0 (its record's output digest, and the row's
// output set hash to match): the evidence is consistent, the outputs differ from a-1's.
func otherOutput(t *testing.T, run func(string) string) {
	t.Helper()
	rows := filepath.Join(run(recB1), "cases/000-chat-stream-r000/rows/c0001-r000.jsonl")
	b, _ := os.ReadFile(rows)
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	i := strings.Index(lines[1], `"output_digest":"sha256:`) + len(`"output_digest":"sha256:`)
	lines[1] = lines[1][:i] + strings.Repeat("e", 64) + lines[1][i+64:]
	mustWrite(t, rows, []byte(strings.Join(lines, "\n")+"\n"))
	f, _ := os.Open(rows)
	defer f.Close()
	_, _, set, err := record.Read(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	var measured []*record.Record
	for i := range set.Records {
		if !set.Records[i].Warmup {
			measured = append(measured, &set.Records[i])
		}
	}
	editJSON(t, filepath.Join(run(recB1), "cases/000-chat-stream-r000/case-result.json"), func(m map[string]any) {
		m["rows"].([]any)[0].(map[string]any)["output_set_sha256"] = *record.OutputSet(measured)
	})
}

func TestCompareSelfContainedRefused(t *testing.T) {
	root, p := resealedPair(t, func(root string, run func(string) string) {
		editJSON(t, filepath.Join(root, "workloads/frozen.json"), func(w map[string]any) {
			w["kind"] = "correctness"
			cp := w["comparison_policy"].(map[string]any)
			cp["mode"], cp["variant_pairs"], cp["metric_rules"] = "self_contained_correctness", []any{}, []any{}
		})
		for _, r := range frozenReceipts {
			editJSON(t, filepath.Join(root, r), func(m map[string]any) { m["qualification"].(map[string]any)["kind"] = "correctness" })
		}
	})
	c := compareAt(t, root, recA1, recA2, p)
	if c.Compatible || !hasDifference(c.Rejected, ErrModeRefused, "comparison_policy.mode") {
		t.Fatalf("accepted:%s", describe(c))
	}
}
