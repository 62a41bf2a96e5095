package verify

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
)

// The gaps the mutation closure's shapes found (verify/testdata/mutation), each closed at its root:
// one edit of real evidence, re-bound and re-signed as in TestMutationClosure, must be rejected
// with the named reason. Each verified before its fix.

// shapeEdit is one edit of a shape's evidence: the file whose path (relative to the evidence
// root) matches file, its line (JSON Lines; -1 for a JSON document), the member at pointer set to
// value.
type shapeEdit struct {
	shape   string
	file    string // a regular expression
	line    int
	pointer string
	value   any
	want    error
}

// editedShape applies e to a fresh, re-bound copy of its shape and verifies it; the unedited copy
// must verify.
func editedShape(t *testing.T, e shapeEdit) *Result {
	t.Helper()
	var sh mutationShape
	for _, s := range mutationShapes {
		if s.name == e.shape {
			sh = s
		}
	}
	if sh.name == "" {
		t.Fatalf("no shape %s", e.shape)
	}
	root := copyTree(t, sh.root)
	checkoutShape(t, root, sh.receipt)
	k := newTestKey(t)
	rebind(t, root, sh.receipt, k)
	if res := verifyAt(t, root, sh.receipt, k.policy()); res.Verdict != Verified {
		t.Fatalf("the re-signed shape %s does not verify:%s", e.shape, findingsOf(res))
	}
	re := regexp.MustCompile(e.file)
	var path string
	for f := range mutableFiles(t, root, sh.receipt) {
		if re.MatchString(f) {
			if path != "" {
				t.Fatalf("%s matches %s and %s", e.file, path, f)
			}
			path = f
		}
	}
	if path == "" {
		t.Fatalf("no file of shape %s matches %s", e.shape, e.file)
	}
	full := filepath.Join(root, path)
	doc := readDoc(t, full)
	set := func(v any) any { return setAt(t, v, e.pointer, e.value) }
	if e.line >= 0 {
		lines := doc.([]any)
		lines[e.line] = set(lines[e.line])
	} else {
		doc = set(doc)
	}
	writeDoc(t, full, doc)
	rebind(t, root, sh.receipt, k)
	return verifyAt(t, root, sh.receipt, k.policy())
}

// dropItem as a shapeEdit's value removes the array item at its pointer; dupItem duplicates it.
type (
	dropItem struct{}
	dupItem  struct{}
)

// setAt sets the member at ptr (RFC 6901, no escapes) of doc, a tree of maps and slices, to v
// (removes it, an array item, when v is dropItem{}).
func setAt(t *testing.T, doc any, ptr string, v any) any {
	t.Helper()
	if _, ok := v.(dropItem); ok {
		return apply(doc, ptr, "drop")
	}
	if _, ok := v.(dupItem); ok {
		return apply(doc, ptr, "dup")
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	cur := doc
	for i, p := range parts {
		last := i == len(parts)-1
		switch x := cur.(type) {
		case map[string]any:
			if last {
				x[p] = v
			} else {
				cur = x[p]
			}
		case []any:
			n, err := strconv.Atoi(p)
			if err != nil || n >= len(x) {
				t.Fatalf("%s: no item %s", ptr, p)
			}
			if last {
				x[n] = v
			} else {
				cur = x[n]
			}
		default:
			t.Fatalf("%s: %s is not in a container", ptr, p)
		}
	}
	return doc
}

func TestMutationGapsClosed(t *testing.T) {
	edits := map[string]shapeEdit{
		// A session's turn names another prompt, cycle or corpus position than its session's.
		"session-prompt-id":              {"sessions", `000-chat-r000/rows/.*\.jsonl$`, 0, "/prompt_id", "chat-gamma", ErrRowMismatch},
		"session-cycle":                  {"sessions", `000-chat-r000/rows/.*\.jsonl$`, 0, "/cycle", 1, ErrRowMismatch},
		"session-corpus-index":           {"sessions", `000-chat-r000/rows/.*\.jsonl$`, 0, "/corpus_index", 2, ErrRowMismatch},
		"synthetic-session-beyond-count": {"sessions", `001-open-r000/rows/.*\.jsonl$`, 0, "/corpus_index", 9, ErrRowMismatch},
		// A generated corpus's request names another prompt, or another place in a trace.
		"trace-prompt-id":     {"trace", `000-replay-r000/rows/.*\.jsonl$`, 1, "/prompt_id", "trace-000002", ErrRowMismatch},
		"trace-cycle":         {"trace", `000-replay-r000/rows/.*\.jsonl$`, 1, "/cycle", 1, ErrRowMismatch},
		"trace-corpus-index":  {"trace", `000-replay-r000/rows/.*\.jsonl$`, 3, "/corpus_index", 4, ErrRowMismatch},
		"prefix-prompt-id":    {"trace", `001-prefix-r000/rows/.*\.jsonl$`, 1, "/prompt_id", "prefix-g0000-s0002", ErrRowMismatch},
		"prefix-cycle":        {"trace", `001-prefix-r000/rows/.*\.jsonl$`, 3, "/cycle", 1, ErrRowMismatch},
		"synthetic-prompt-id": {"capacity", `000-search-r000/rows/c0002-r000\.jsonl$`, 0, "/prompt_id", "synthetic-000009", ErrRowMismatch},
		// The server's launch environment: the runner's entries, sorted, each hashed; the run
		// marker is the receipt's id; the owner is the leader's parent.
		"env-renamed":        {"trace", `lifecycle\.json$`, -1, "/launch/environment/0/name", "QUALKIT_RUN_ID", ErrLifecycleMismatch},
		"env-digest":         {"trace", `lifecycle\.json$`, -1, "/launch/environment/0/digest", "sha256:" + strings.Repeat("0", 64), ErrLifecycleMismatch},
		"env-run-id":         {"trace", `lifecycle\.json$`, -1, "/launch/environment/1", map[string]any{"name": "QUALKIT_RUN_ID", "redacted": false, "value": "x", "digest": "sha256:2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881"}, ErrLifecycleMismatch},
		"env-unknown":        {"trace", `lifecycle\.json$`, -1, "/launch/environment/1/name", "QUALKIT_RUN_IE", ErrLifecycleMismatch},
		"env-owner":          {"trace", `lifecycle\.json$`, -1, "/launch/environment/0", map[string]any{"name": "QUALKIT_OWNER", "redacted": false, "value": "5:2", "digest": "sha256:038423688a80e226c989396b2e2a130fdfebdb95347488df4db688f4fed3873e"}, ErrLifecycleImplausible},
		"leader-escaped":     {"trace", `lifecycle\.json$`, -1, "/shutdown/processes_at_signal/0/escaped", true, ErrLifecycleImplausible},
		"leader-missing":     {"trace", `lifecycle\.json$`, -1, "/shutdown/processes_at_signal/0/pid", 3, ErrLifecycleImplausible},
		"server-binary-path": {"trace", `receipts/trace\.json$`, -1, "/artifacts/2/path", "/usr/local/bin/qualsim", ErrLifecycleMismatch},
		// A record's tool calls are one per stream index, in index order (line 1: a measured record).
		"tool-call-duplicated": {"apis", `000-tools-r000/rows/.*\.jsonl$`, 1, "/tool_calls/0", dupItem{}, ErrRowMismatch},
		// A file the workload binds is listed among the receipt's artifacts.
		"corpus-artifact-dropped": {"trace", `receipts/trace\.json$`, -1, "/artifacts/3", dropItem{}, ErrReferenceMismatch},
		// A driver result is what the worker output beside it and the request file say.
		"driver-worker-output-body": {"driver", `001-reference-paths-r000/worker-output\.json$`, -1, "/body/paths/0/max_abs_error", 0.5, ErrReferenceMismatch},
		"driver-worker-request-id":  {"driver", `001-reference-paths-r000/worker-output\.json$`, -1, "/request_id", "reference-request-2", ErrReferenceMismatch},
		"driver-result-request-id":  {"driver", `000-reference-next-token-r000/result\.json$`, -1, "/request/id", "reference-request-2", ErrReferenceMismatch},
		"driver-executable":         {"driver", `001-reference-paths-r000/result\.json$`, -1, "/implementation/executable/digest", "sha256:" + strings.Repeat("1", 64), ErrReferenceMismatch},
		"driver-model-path":         {"driver", `001-reference-paths-r000/result\.json$`, -1, "/model/path", "drivers/reference/tiny-modem.json", ErrReferenceMismatch},
		"driver-duration":           {"driver", `002-reference-layers-r000/result\.json$`, -1, "/duration_seconds", 0.5, ErrResultMismatch},
		"driver-origin-main":        {"driver", `001-reference-paths-r000/result\.json$`, -1, "/source/origin_main", strings.Repeat("a", 40), ErrReferenceMismatch},
		"driver-qualrun-version":    {"driver", `001-reference-paths-r000/result\.json$`, -1, "/implementation/qualrun/version", "dew", ErrReferenceMismatch},
		"driver-model-id":           {"driver", `001-reference-paths-r000/result\.json$`, -1, "/model/id", "tiny-model.jsoo", ErrReferenceMismatch},
		"driver-forced":             {"driver", `001-reference-paths-r000/result\.json$`, -1, "/containment/forced", true, ErrResultMismatch},
		// A session row against its corpus (rowcheck.SessionCorpus): the prompt set, a turn's think
		// time, turn 0's history exactly, a later turn's history at least the previous turn's and
		// its text (chat-beta turn 1: 12 + 13 characters at least), and the conversation corpus
		// listed among the artifacts (artifact 3).
		"session-prompt-set":         {"sessions", `000-chat-r000/case-result\.json$`, -1, "/rows/0/prompt_set_sha256", "sha256:" + strings.Repeat("0", 64), ErrCorpusMismatch},
		"session-think-ms":           {"sessions", `000-chat-r000/rows/.*\.jsonl$`, 2, "/session/think_ms", 19, ErrRowMismatch},
		"session-history-turn0":      {"sessions", `000-chat-r000/rows/.*\.jsonl$`, 0, "/session/history_chars", 13, ErrRowMismatch},
		"session-history-below":      {"sessions", `000-chat-r000/rows/.*\.jsonl$`, 2, "/session/history_chars", 24, ErrRowMismatch},
		"synthetic-session-think-ms": {"sessions", `001-open-r000/rows/.*\.jsonl$`, 2, "/session/think_ms", 1, ErrRowMismatch},
		"synthetic-session-history":  {"sessions", `001-open-r000/rows/.*\.jsonl$`, 2, "/session/history_chars", 20, ErrRowMismatch},
		// A tool round (rowcheck.Sessions): it carries its turn's think time, and after an empty
		// reply its history is exactly the previous request's plus its calls' declared results
		// (session-000000 turn 0 round 1: 9 + 21 characters).
		"tool-round-think-ms":         {"sessions", `002-tool-rounds-r000/rows/.*\.jsonl$`, 2, "/session/think_ms", 5, ErrRowMismatch},
		"tool-round-history-over":     {"sessions", `002-tool-rounds-r000/rows/.*\.jsonl$`, 2, "/session/history_chars", 31, ErrRowMismatch},
		"tool-round-history-later":    {"sessions", `002-tool-rounds-r000/rows/.*\.jsonl$`, 8, "/session/history_chars", 280, ErrRowMismatch},
		"conversation-corpus-dropped": {"sessions", `receipts/sessions\.json$`, -1, "/artifacts/4", dropItem{}, ErrCorpusMismatch},
		// Every input the workload or the recipe names is listed as the runner lists it: a
		// recipe's --config and --tokenizer files as config_files (apis artifacts 3 and 4), a
		// tokenizer as a tokenizer (6), a driver case's executable, script, request and model
		// under their kinds (driver artifacts 1-4).
		"config-file-dropped":       {"apis", `receipts/apis\.json$`, -1, "/artifacts/3", dropItem{}, ErrReferenceMismatch},
		"config-file-moved":         {"apis", `receipts/apis\.json$`, -1, "/artifacts/3/path", "configs/sim.jsoo", ErrReferenceMismatch},
		"tokenizer-config-dropped":  {"apis", `receipts/apis\.json$`, -1, "/artifacts/4", dropItem{}, ErrReferenceMismatch},
		"tokenizer-listing-dropped": {"apis", `receipts/apis\.json$`, -1, "/artifacts/6", dropItem{}, ErrReferenceMismatch},
		"tokenizer-listing-moved":   {"apis", `receipts/apis\.json$`, -1, "/artifacts/6/path", "models/tiny.gguh", ErrReferenceMismatch},
		"driver-executable-dropped": {"driver", `receipts/driver\.json$`, -1, "/artifacts/1", dropItem{}, ErrReferenceMismatch},
		"driver-script-dropped":     {"driver", `receipts/driver\.json$`, -1, "/artifacts/2", dropItem{}, ErrReferenceMismatch},
		"driver-request-dropped":    {"driver", `receipts/driver\.json$`, -1, "/artifacts/3", dropItem{}, ErrReferenceMismatch},
		"driver-model-dropped":      {"driver", `receipts/driver\.json$`, -1, "/artifacts/4", dropItem{}, ErrReferenceMismatch},
		"driver-model-moved":        {"driver", `receipts/driver\.json$`, -1, "/artifacts/4/path", "drivers/reference/tiny-modem.json", ErrReferenceMismatch},
		// A trace row's offered rate is its trace's (metric.TraceRate: 3 entries over 50 ms).
		"trace-offered-rate": {"trace", `000-replay-r000/case-result\.json$`, -1, "/rows/0/fidelity/offered_rate", 60.6, ErrLoadNotReached},
		// A row's send calibration: every sample above 0 (sample 1 is the row's smallest, so the
		// 0.9-quantile is unchanged), 32 samples in a passed case, and the samples inside the
		// case's duration (send_cost_ns recomputed for both, so only the bound can refuse them).
		"calibration-sample-zero":   {"trace", `000-replay-r000/case-result\.json$`, -1, "/rows/0/fidelity/calibration/samples_ns/1", 0, ErrRowMismatch},
		"calibration-too-few":       {"trace", `000-replay-r000/case-result\.json$`, -1, "/rows/0/fidelity/calibration", traceCalibration(t, 1, -1), ErrRowMismatch},
		"calibration-over-duration": {"trace", `000-replay-r000/case-result\.json$`, -1, "/rows/0/fidelity/calibration", traceCalibration(t, 1, 100_000_000), ErrRowMismatch},
	}
	for name, e := range edits {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res := editedShape(t, e)
			if res.Verdict == Verified {
				t.Fatalf("%s %s = %v verified", e.file, e.pointer, e.value)
			}
			for _, f := range res.Findings {
				if errors.Is(f, e.want) {
					return
				}
			}
			t.Fatalf("%s %s = %v: want %v, got%s", e.file, e.pointer, e.value, e.want, findingsOf(res))
		})
	}
}

// traceCalibration is the trace shape's first replay row's calibration with sample i set to v
// (dropped when v < 0) and its send cost recomputed.
func traceCalibration(t *testing.T, i int, v int64) map[string]any {
	t.Helper()
	files, _ := filepath.Glob(mutationRoot + "/trace/.qualification/runs/*/cases/000-replay-r000/case-result.json")
	if len(files) != 1 {
		t.Fatalf("the trace shape's replay case result: %v", files)
	}
	var cr contract.CaseResultDoc
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cr); err != nil || len(cr.Rows) == 0 || cr.Rows[0].Fidelity.Calibration == nil {
		t.Fatalf("%s: no calibration (%v)", files[0], err)
	}
	samples := slices.Clone(cr.Rows[0].Fidelity.Calibration.SamplesNs)
	if v < 0 {
		samples = slices.Delete(samples, i, i+1)
	} else {
		samples[i] = v
	}
	out := make([]any, len(samples))
	for k, x := range samples {
		out[k] = x
	}
	return map[string]any{"samples_ns": out, "send_cost_ns": metric.SendCostNs(samples), "connections": nil}
}

// TestServerDeltaIdentity: in a row without kept scrapes (evidence written before they were
// kept), a server family delta's value rests on the runner's word, but its identity does not:
// its name and formula go together, and its unit is its family's (s for _seconds_sum), its
// aggregation, direction and diagnostic flag the formula's. Each edit verified before (the
// sessions and trace shapes' first sweep, made before rows kept their scrapes).
func TestServerDeltaIdentity(t *testing.T) {
	ok := func() []contract.Metric {
		one := int64(1)
		return []contract.Metric{
			{Name: "server.qualsim_errors_total.delta", Value: 0, Unit: "count", Aggregation: contract.AggregationSum, Direction: contract.DirectionNone, Formula: metric.TelemetryDelta, Samples: &one, Diagnostic: true},
			{Name: "server.qualsim_queue_wait_seconds_sum.delta", Value: 0.5, Unit: "s", Aggregation: contract.AggregationSum, Direction: contract.DirectionNone, Formula: metric.TelemetryDelta, Samples: &one, Diagnostic: true},
		}
	}
	for name, edit := range map[string]func([]contract.Metric){
		"none":        func([]contract.Metric) {},
		"formula":     func(ms []contract.Metric) { ms[0].Formula = "telemetry_delta.v2" },
		"name":        func(ms []contract.Metric) { ms[0].Name = "server.qualsim_errors_total.deltb" },
		"unit":        func(ms []contract.Metric) { ms[1].Unit = "count" },
		"aggregation": func(ms []contract.Metric) { ms[0].Aggregation = contract.AggregationMean },
		"diagnostic":  func(ms []contract.Metric) { ms[1].Diagnostic = false },
	} {
		t.Run(name, func(t *testing.T) {
			ms := ok()
			edit(ms)
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.ServerRatios(c, "case-result.json", "/rows/0", contract.Row{Metrics: ms}, DefaultPolicy().Recompute)
			res := c.Result()
			if name == "none" {
				if len(res.Findings) != 0 {
					t.Fatalf("an unedited row: %v", res.Findings)
				}
				return
			}
			if len(res.Findings) == 0 || !errors.Is(res.Findings[0], ErrMetricMismatch) {
				t.Fatalf("%s edited: %v, want metric_mismatch", name, res.Findings)
			}
		})
	}
}
