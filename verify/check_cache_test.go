package verify

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRowCacheRecomputed: qualverify recomputes a row's cache object (docs/caching.md) from the
// request records of resealed frozen evidence: a cache object no declaration and no record
// supports, records reporting cached prompt tokens under a row without one, and an observed regime
// the records contradict are each a row_mismatch.
func TestRowCacheRecomputed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	const caseDir = "cases/000-chat-stream-r000"
	addCache := func(t *testing.T, root, run string, cache map[string]any) {
		p := filepath.Join(root, run, caseDir, "case-result.json")
		cr := readTree(t, p)
		cr["rows"].([]any)[0].(map[string]any)["cache"] = cache
		writeTree(t, p, cr)
	}
	reportCached := func(t *testing.T, root, run string) {
		p := filepath.Join(root, run, caseDir, "rows/c0001-r000.jsonl")
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		mustWrite(t, p, []byte(strings.ReplaceAll(string(b), `"error":null}`, `"error":null,"cached_prompt_tokens":3}`)))
	}
	for _, tc := range []struct {
		name   string
		tamper func(t *testing.T, root, run string)
		also   string
	}{
		{"cache object without cause", func(t *testing.T, root, run string) {
			addCache(t, root, run, map[string]any{"declared": "natural", "observed": "unreported", "reporting": json.Number("0"), "cached_prompt_tokens": json.Number("0"), "contradiction": nil})
		}, "has a cache object, but its case declares no cache_regime"},
		{"cached tokens without cache object", reportCached, "has no cache object"},
		{"observed regime the records contradict", func(t *testing.T, root, run string) {
			reportCached(t, root, run)
			addCache(t, root, run, map[string]any{"declared": "natural", "observed": "no_hits", "reporting": json.Number("4"), "cached_prompt_tokens": json.Number("0"), "contradiction": nil})
		}, "the records say hits"},
		{"warm without a priming pass", func(t *testing.T, root, run string) {
			wp := filepath.Join(root, "workloads/frozen.json")
			w := readTree(t, wp)
			for _, v := range w["variants"].([]any) {
				for _, c := range v.(map[string]any)["cases"].([]any) {
					if cm := c.(map[string]any); cm["id"] == "chat-stream" {
						cm["cache_regime"] = "warm"
					}
				}
			}
			writeTree(t, wp, w)
			addCache(t, root, run, map[string]any{"declared": "warm", "observed": "unreported", "reporting": json.Number("0"), "cached_prompt_tokens": json.Number("0"), "contradiction": nil})
		}, "declares cache_regime warm, but no priming request asked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			k := newTestKey(t)
			tc.tamper(t, root, runDirOf(t, root, receipt))
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if res.Verdict != Rejected {
				t.Fatal("tampered evidence verified")
			}
			for _, f := range res.Check(CheckTolerances).Findings {
				if errors.Is(f, ErrRowMismatch) && strings.Contains(f.Error(), tc.also) {
					return
				}
			}
			t.Fatalf("no row_mismatch finding mentioning %q; findings:%s", tc.also, findingsOf(res))
		})
	}
}
