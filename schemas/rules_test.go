package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// load reads a base document for the rule tests as a generic tree.
func load(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "rules", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// at walks a JSON pointer to the container of its last token.
func at(t *testing.T, doc any, pointer string) (any, string) {
	t.Helper()
	toks := strings.Split(pointer, "/")[1:]
	cur := doc
	for _, tok := range toks[:len(toks)-1] {
		switch c := cur.(type) {
		case map[string]any:
			cur = c[tok]
		case []any:
			i, _ := strconv.Atoi(tok)
			cur = c[i]
		}
	}
	return cur, toks[len(toks)-1]
}

// set replaces (or, for value == deleteMe, removes) the value at pointer.
func set(t *testing.T, doc any, pointer string, value any) {
	t.Helper()
	parent, last := at(t, doc, pointer)
	switch p := parent.(type) {
	case map[string]any:
		if value == deleteMe {
			delete(p, last)
		} else {
			p[last] = value
		}
	case []any:
		i, _ := strconv.Atoi(last)
		p[i] = value
	default:
		t.Fatalf("no container at %s", pointer)
	}
}

type deleteMarker struct{}

var deleteMe = deleteMarker{}

func roundTrip(t *testing.T, doc any) []byte {
	t.Helper()
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBasesAreValid(t *testing.T) {
	for _, name := range []string{"workload-command.json", "workload-serving.json", "launch-recipe.json", "receipt.json", "lifecycle-record.json"} {
		out, err := CheckDocument(roundTrip(t, load(t, name)))
		if err != nil || !out.Valid() {
			t.Errorf("%s: %v %v", name, err, out.Violations)
		}
	}
}

// TestSemanticRules breaks one rule per case on a valid base document and expects exactly that
// rule's violation: ErrSemantic at the given pointer.
func TestSemanticRules(t *testing.T) {
	str := func(s string) any { return s }
	cmd := "/variants/0/cases/0"
	for _, tc := range []struct {
		name, base, pointer string
		mutate              func(t *testing.T, doc map[string]any)
	}{
		{"variable unused", "workload-command.json", "/variables/0/name", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/10", str("fixed-label"))
		}},
		{"required variable with default", "workload-command.json", "/variables/0/default", func(t *testing.T, d map[string]any) {
			set(t, d, "/variables/0/default", str("x"))
		}},
		{"reserved variable name", "workload-command.json", "/variables/0/name", func(t *testing.T, d map[string]any) {
			set(t, d, "/variables/0/name", str("seed"))
		}},
		{"placeholder inside a value", "workload-command.json", cmd + "/command/10", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/10", str("label=${host_label}"))
		}},
		{"placeholder as argv0", "workload-command.json", cmd + "/command/0", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/0", str("${host_label}"))
		}},
		{"undeclared placeholder", "workload-command.json", cmd + "/command/5", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/5", str("${nope_var}"))
		}},
		{"shell eval", "workload-command.json", cmd + "/command/1", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/0", str("/bin/bash"))
			set(t, d, cmd+"/command/1", str("-lc"))
		}},
		{"shell eval through env", "workload-command.json", cmd + "/command/2", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/0", str("env"))
			set(t, d, cmd+"/command/1", str("sh"))
			set(t, d, cmd+"/command/2", str("-c"))
		}},
		{"runner-owned env", "workload-command.json", cmd + "/environment/QUALKIT_CASE_RESULT", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/environment/QUALKIT_CASE_RESULT", str("/tmp/x"))
		}},
		{"seed not delivered", "workload-command.json", cmd, func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/command/8", str("-x"))
		}},
		{"seed null outside environment", "workload-command.json", "/determinism/seed", func(t *testing.T, d map[string]any) {
			set(t, d, "/determinism/seed", nil)
			set(t, d, "/determinism/seed_delivery", str("not_applicable"))
		}},
		{"runner case without case_pass", "workload-command.json", cmd + "/result_protocol/declared_metrics", func(t *testing.T, d map[string]any) {
			set(t, d, cmd+"/result_protocol/declared_metrics", []any{"exit_code"})
		}},
		{"cuda without required device", "workload-command.json", "/variants/0/device_requirement", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/backend", str("cuda"))
		}},
		{"network forbidden with a serving case", "workload-serving.json", "/determinism/network_access", func(t *testing.T, d map[string]any) {
			set(t, d, "/determinism/network_access", str("forbidden"))
		}},
		{"requests over the serving bound", "workload-serving.json", "/variants/0/cases/0/requests", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/requests", float64(1000000))
		}},
		{"ignore_eos needed", "workload-serving.json", "/variants/0/cases/0/output_assertions/1", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/sampling/ignore_eos", false)
		}},
		{"stream needed for TTFT gate", "workload-serving.json", "/variants/0/cases/0/stream", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/stream", false)
		}},
		{"metric rule names no case", "workload-serving.json", "/comparison_policy/metric_rules/0/result_id", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparison_policy/metric_rules/0/result_id", str("no-such-case"))
		}},
		{"null comparison policy for serving", "workload-serving.json", "/comparison_policy", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparison_policy", nil)
		}},
		{"too many serving requests", "workload-serving.json", "/variants/0/cases/0", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/repetitions", 1000)
			set(t, d, "/variants/0/cases/0/warmup_requests", 1000)
			set(t, d, "/variants/0/cases/0/concurrency", []any{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32})
		}},
		{"synthetic prompt_tokens without a tokenizer", "workload-serving.json", "/variants/0/cases/0/corpus/prompt_tokens", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/corpus", map[string]any{"source": "synthetic", "generator": "qualkit.synthetic-words.v1", "seed": 1, "count": 8,
				"prompt_words": map[string]any{"min": 1, "max": 1}, "prompt_tokens": map[string]any{"min": 8, "max": 16}})
		}},
		{"synthetic prompt_tokens min over max", "workload-serving.json", "/variants/0/cases/0/corpus/prompt_tokens/min", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/corpus", map[string]any{"source": "synthetic", "generator": "qualkit.synthetic-words.v1", "seed": 1, "count": 8,
				"prompt_words": map[string]any{"min": 1, "max": 1}, "prompt_tokens": map[string]any{"min": 16, "max": 8}})
			set(t, d, "/variants/0/cases/0/tokenizer", map[string]any{"format": "gguf", "path": "models/t.gguf", "digest": "sha256:" + strings.Repeat("ab", 32), "template": "lines"})
		}},
		{"recipe secret env", "launch-recipe.json", "/environment/API_TOKEN", func(t *testing.T, d map[string]any) {
			set(t, d, "/environment/API_TOKEN", str("abc"))
		}},
		{"recipe env both declared and passed", "launch-recipe.json", "/environment/PATH", func(t *testing.T, d map[string]any) {
			set(t, d, "/environment/PATH", str("/usr/bin"))
			set(t, d, "/environment_passthrough", []any{"PATH"})
		}},
		{"recipe token variable declared as a literal", "launch-recipe.json", "/auth/token_env", func(t *testing.T, d map[string]any) {
			set(t, d, "/auth", map[string]any{"scheme": "bearer", "token_env": "QS_BEARER"})
			set(t, d, "/environment/QS_BEARER", str("committed-value"))
		}},
		{"recipe declared secret not passed through", "launch-recipe.json", "/secret_environment/0", func(t *testing.T, d map[string]any) {
			set(t, d, "/secret_environment", []any{"MIRROR_ACCESS"})
		}},
		{"recipe declared secret set as a literal", "launch-recipe.json", "/secret_environment/0", func(t *testing.T, d map[string]any) {
			set(t, d, "/secret_environment", []any{"MIRROR_ACCESS"})
			set(t, d, "/environment/MIRROR_ACCESS", str("committed"))
		}},
		{"recipe exit codes unsorted", "launch-recipe.json", "/acceptable_exit_codes", func(t *testing.T, d map[string]any) {
			set(t, d, "/acceptable_exit_codes", []any{143, 0})
		}},
		{"recipe placeholder", "launch-recipe.json", "/command/2", func(t *testing.T, d map[string]any) {
			set(t, d, "/command/2", str("${port}"))
		}},
		{"recipe port out of range", "launch-recipe.json", "/base_url", func(t *testing.T, d map[string]any) {
			set(t, d, "/base_url", str("http://127.0.0.1:99999"))
		}},
		{"recipe host not loopback", "launch-recipe.json", "/base_url", func(t *testing.T, d map[string]any) {
			set(t, d, "/base_url", str("http://127.999.0.1:8000"))
		}},
		{"receipt artifact repeated", "receipt.json", "/artifacts/1", func(t *testing.T, d map[string]any) {
			arts := d["artifacts"].([]any)
			arts[1] = arts[0]
		}},
		{"receipt created before finished", "receipt.json", "/created_at", func(t *testing.T, d map[string]any) {
			set(t, d, "/created_at", d["qualification"].(map[string]any)["started_at"])
		}},
		{"receipt duration disagrees with its span", "receipt.json", "/qualification/duration_seconds", func(t *testing.T, d map[string]any) {
			set(t, d, "/qualification/duration_seconds", json.Number("1.25"))
		}},
		{"receipt declares a wall-clock step within the tolerance", "receipt.json", "/qualification/wall_clock_step_seconds", func(t *testing.T, d map[string]any) {
			set(t, d, "/qualification/wall_clock_step_seconds", json.Number("0.5"))
		}},
		{"receipt declares a wall-clock step that does not explain its span", "receipt.json", "/qualification/duration_seconds", func(t *testing.T, d map[string]any) {
			set(t, d, "/qualification/wall_clock_step_seconds", json.Number("-3.5"))
		}},
		{"receipt passed with dirty source", "receipt.json", "/qualification/verdict", func(t *testing.T, d map[string]any) {
			set(t, d, "/source/clean", false)
			set(t, d, "/publishable", false)
			set(t, d, "/unpublishable_reasons", []any{"dirty tree"})
		}},
		{"receipt publishable off origin/main", "receipt.json", "/publishable", func(t *testing.T, d map[string]any) {
			set(t, d, "/source/origin_main", str(strings.Repeat("a", 40)))
		}},
		{"receipt interrupted without interruption", "receipt.json", "/qualification/interruption", func(t *testing.T, d map[string]any) {
			set(t, d, "/qualification/verdict", str("interrupted"))
			set(t, d, "/publishable", false)
			set(t, d, "/unpublishable_reasons", []any{"interrupted"})
		}},
		{"receipt interruption on a passed verdict", "receipt.json", "/qualification/interruption", func(t *testing.T, d map[string]any) {
			set(t, d, "/qualification/interruption", map[string]any{"signal": "SIGTERM", "phase": "readiness"})
		}},
		{"receipt interrupted and publishable", "receipt.json", "/publishable", func(t *testing.T, d map[string]any) {
			set(t, d, "/qualification/verdict", str("interrupted"))
			set(t, d, "/qualification/interruption", map[string]any{"signal": "SIGTERM", "phase": "readiness"})
		}},
		{"receipt device probe repeated", "receipt.json", "/environment/device_probes/1/probe", func(t *testing.T, d map[string]any) {
			set(t, d, "/environment/device_probes", []any{probe("nvml", false), probe("nvml", false)})
		}},
		{"receipt fixture mixed with host devices", "receipt.json", "/environment/devices", func(t *testing.T, d map[string]any) {
			set(t, d, "/environment/devices", []any{cpuEntry(false), gpuEntry(true)})
			set(t, d, "/environment/device_probes", []any{probe("nvml", true), probe("procfs", false)})
		}},
		{"receipt fixture device as environment.device", "receipt.json", "/environment/device/driver", func(t *testing.T, d map[string]any) {
			set(t, d, "/environment/devices", []any{cpuEntry(true), gpuEntry(true)})
			set(t, d, "/environment/device_probes", []any{probe("nvml", true), probe("procfs", true)})
			set(t, d, "/environment/device/driver", str("nvidia 550.54.15"))
		}},
		{"integer written as float", "workload-serving.json", "/variants/0/cases/0/max_tokens", func(t *testing.T, d map[string]any) {
			set(t, d, "/variants/0/cases/0/max_tokens", json.Number("32.0"))
		}},
		{"redacted value recorded", "lifecycle-record.json", "/launch/environment/3/value", func(t *testing.T, d map[string]any) {
			set(t, d, "/launch/environment/3/value", str("hf_secret"))
		}},
		{"plain value missing", "lifecycle-record.json", "/launch/environment/1/value", func(t *testing.T, d map[string]any) {
			set(t, d, "/launch/environment/1/value", nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := load(t, tc.base)
			tc.mutate(t, doc)
			out, err := CheckDocument(roundTrip(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range out.Violations {
				if !errors.Is(v, ErrSemantic) {
					t.Errorf("unexpected non-semantic violation %v", v)
				}
				if v.Pointer == tc.pointer {
					found = true
				}
			}
			if !found {
				t.Errorf("want a semantic violation at %s, got %v", tc.pointer, out.Violations)
			}
		})
	}
}

// TestWallClockStepExplainsSpan: a receipt whose wall-clock span differs from its monotonic
// duration is valid when it declares the step that explains the difference, forwards (the CI host's
// clock jumped 2.2 s mid-run) or backwards (finished_at before started_at).
func TestWallClockStepExplainsSpan(t *testing.T) {
	for _, tc := range []struct{ finished, created, step string }{
		{"2026-11-30T14:15:07.798112Z", "2026-11-30T14:15:07.811020Z", "2.2"},
		{"2026-11-30T14:14:55.598112Z", "2026-11-30T14:14:55.611020Z", "-10.000622"},
	} {
		doc := load(t, "receipt.json")
		set(t, doc, "/qualification/finished_at", tc.finished)
		set(t, doc, "/created_at", tc.created)
		set(t, doc, "/qualification/wall_clock_step_seconds", json.Number(tc.step))
		out, err := CheckDocument(roundTrip(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		if !out.Valid() {
			t.Errorf("step %s: %v", tc.step, out.Violations)
		}
		delete(doc["qualification"].(map[string]any), "wall_clock_step_seconds")
		if out, _ := CheckDocument(roundTrip(t, doc)); out.Valid() {
			t.Errorf("step %s: valid without the declared step", tc.step)
		}
	}
}

func probe(name string, fixture bool) map[string]any {
	return map[string]any{"probe": name, "status": "found", "detail": name + " found", "fixture": fixture}
}

func cpuEntry(fixture bool) map[string]any {
	return map[string]any{"kind": "cpu", "vendor": "authenticamd", "model": "AMD EPYC", "api_families": []any{"cpu"},
		"driver": map[string]any{"name": "none", "version": nil}, "memory_bytes": nil, "probe": "procfs", "fixture": fixture}
}

func gpuEntry(fixture bool) map[string]any {
	return map[string]any{"kind": "gpu", "vendor": "nvidia", "model": "NVIDIA H100 80GB HBM3", "api_families": []any{"cuda"},
		"driver": map[string]any{"name": "nvidia", "version": "550.54.15"}, "memory_bytes": json.Number("85520809984"), "probe": "nvml", "fixture": fixture}
}
