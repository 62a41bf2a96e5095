package verify

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// scrapePage is a qualsim-like /metrics page whose generation and prefix-cache query counters
// stand at n, its hits at n/4.
func scrapePage(n int) []byte {
	var b bytes.Buffer
	for _, fam := range []string{"qualsim_generation_tokens_total", "qualsim_prefix_cache_queries_total", "qualsim_prefix_cache_hits_total"} {
		v := n
		if fam == "qualsim_prefix_cache_hits_total" {
			v = n / 4
		}
		b.WriteString("# TYPE " + fam + " counter\n" + fam + `{model="qualsim-tiny"} ` + strconv.Itoa(v) + "\n")
	}
	b.WriteString("# TYPE qualsim_slots_busy gauge\nqualsim_slots_busy 0\n")
	return b.Bytes()
}

// TestServerScrapesResealed: a row that keeps its /metrics pages has its server deltas and ratios
// recomputed from them. The runner's row verifies; an edited delta, a page edited to disagree (its
// digests re-bound, the receipt re-signed), a missing page, a page over MaxScrapeBytes, a page that
// does not parse, a reference to a file that is not a server_metrics artifact and a ratio left out
// are rejected, each with its reason. A row without pages verifies with a note that its deltas
// rest on the runner's word.
func TestServerScrapesResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	k := newTestKey(t)
	before, after := scrapePage(100), scrapePage(260)
	ms, _, _, err := metric.ServerTelemetry(before, after)
	if err != nil || len(ms) != 4 {
		t.Fatalf("the pages give %v, %v; want 3 deltas and a ratio", ms, err)
	}
	type edit struct {
		before, after []byte                  // the pages written (nil: none)
		listed        bool                    // the pages are server_metrics artifacts
		metrics       func([]any) []any       // the row's server metrics, from the pages' own
		bind          func(sm map[string]any) // a last edit of the row's server_metrics
	}
	runner := func(ms []any) []any { return ms }
	cases := []struct {
		name   string
		e      edit
		reason *Reason
		text   string // "" when it verifies
	}{
		{"the runner's row", edit{before, after, true, runner, nil}, nil, ""},
		{"a delta edited", edit{before, after, true, func(ms []any) []any {
			ms[0].(map[string]any)["value"] = json.Number("200")
			return ms
		}, nil}, ErrMetricMismatch, "server.qualsim_generation_tokens_total.delta is 200, the row's /metrics pages give 160"},
		{"a page edited and re-bound", edit{before, bytes.Replace(after, []byte("} 260"), []byte("} 300"), 1), true, runner, nil}, ErrMetricMismatch, "the row's /metrics pages give 200"},
		{"a delta the pages do not give", edit{before, after, true, func(ms []any) []any {
			m := map[string]any{}
			for k, v := range ms[0].(map[string]any) {
				m[k] = v
			}
			m["name"] = "server.qualsim_made_up_total.delta"
			return append(ms, m)
		}, nil}, ErrMetricMismatch, "server.qualsim_made_up_total.delta is 160, but the row's /metrics pages do not give it"},
		{"the ratio left out", edit{before, after, true, func(ms []any) []any { return ms[:3] }, nil}, ErrMetricMismatch, "server_prefix_cache_hit_rate is missing (the row's /metrics pages give 0.25)"},
		{"a missing page", edit{before, nil, true, runner, nil}, ErrMissingFile, "metrics-after.prom does not exist"},
		{"a page over MaxScrapeBytes", edit{before, append(bytes.Repeat([]byte("# pad\n"), MaxScrapeBytes/6), after...), true, runner, nil}, ErrUnreadableFile, "larger than the limit of 16777216 bytes: the row's server deltas are not recomputed"},
		{"a page that does not parse", edit{before, append([]byte("qualsim_x{\n"), after...), true, runner, nil}, ErrMetricMismatch, "does not parse"},
		{"a page not listed", edit{before, after, false, runner, nil}, ErrReferenceMismatch, "is not a server_metrics artifact"},
		{"a page bound by another digest", edit{before, after, true, runner, func(sm map[string]any) {
			sm["before"].(map[string]any)["digest"] = "sha256:" + strings.Repeat("0", 64)
		}}, ErrDigestMismatch, "the page hashes to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			run := runDirOf(t, root, receipt)
			rows := run + "/cases/000-chat-stream-r000/rows/"
			paths := []string{rows + "c0001-r000.metrics-before.prom", rows + "c0001-r000.metrics-after.prom"}
			pages := [][]byte{tc.e.before, tc.e.after}
			for i, p := range pages {
				if p != nil {
					if err := os.WriteFile(filepath.Join(root, paths[i]), p, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			// The digests the runner bound: the pages it wrote (a missing page's is that of the one it wrote).
			bound := []string{evidence.DigestOf(before), evidence.DigestOf(after)}
			if tc.e.before != nil {
				bound[0] = evidence.DigestOf(tc.e.before)
			}
			if tc.e.after != nil {
				bound[1] = evidence.DigestOf(tc.e.after)
			}
			editJSON(t, filepath.Join(root, run, "cases/000-chat-stream-r000/case-result.json"), func(cr map[string]any) {
				row := cr["rows"].([]any)[0].(map[string]any)
				var own []any
				for _, m := range ms {
					b, _ := json.Marshal(m)
					var x map[string]any
					dec := json.NewDecoder(bytes.NewReader(b))
					dec.UseNumber()
					if err := dec.Decode(&x); err != nil {
						t.Fatal(err)
					}
					own = append(own, x)
				}
				row["metrics"] = append(row["metrics"].([]any), tc.e.metrics(own)...)
				sm := map[string]any{"before": map[string]any{"path": paths[0], "digest": bound[0]}, "after": map[string]any{"path": paths[1], "digest": bound[1]}}
				if tc.e.bind != nil {
					tc.e.bind(sm)
				}
				row["server_metrics"] = sm
			})
			if tc.e.listed {
				editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
					for i, p := range paths {
						rc["artifacts"] = append(rc["artifacts"].([]any), map[string]any{"kind": "server_metrics", "path": p, "digest": bound[i], "bytes": json.Number("0")})
					}
				})
			}
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if tc.reason == nil {
				if res.Verdict != Verified {
					t.Fatalf("the runner's row refused:%s", findingsOf(res))
				}
				return
			}
			if !hasFinding(res, CheckTolerances, tc.reason, tc.text) {
				t.Fatalf("not rejected (%s %q):%s", tc.reason, tc.text, findingsOf(res))
			}
		})
	}
	t.Run("a row without pages", func(t *testing.T) {
		root := copyTree(t, frozenRoot)
		run := runDirOf(t, root, receipt)
		editJSON(t, filepath.Join(root, run, "cases/000-chat-stream-r000/case-result.json"), func(cr map[string]any) {
			row := cr["rows"].([]any)[0].(map[string]any)
			row["metrics"] = append(row["metrics"].([]any), map[string]any{"name": "server.qualsim_generation_tokens_total.delta", "value": json.Number("7"), "unit": "count",
				"aggregation": "sum", "direction": "none", "formula": "telemetry_delta.v1", "samples": json.Number("1"), "diagnostic": true})
		})
		reseal(t, root, receipt, k)
		res := verifyAt(t, root, receipt, k.policy())
		if res.Verdict != Verified || !strings.Contains(res.Check(CheckTolerances).Note, "server counter deltas rest on the runner's word") {
			t.Fatalf("verdict %s, note %q:%s", res.Verdict, res.Check(CheckTolerances).Note, findingsOf(res))
		}
	})
}
