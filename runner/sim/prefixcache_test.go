package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/runner/sim"
)

// cachedTokens posts a non-streamed chat request and returns its usage's prompt tokens and
// prompt_tokens_details.cached_tokens (-1 when absent).
func cachedTokens(t *testing.T, ts *testServer, system, user string) (prompt, cached int) {
	t.Helper()
	body := chatBody("qualsim-tiny", user, 2)
	body["messages"] = []map[string]any{{"role": "system", "content": system}, {"role": "user", "content": user}}
	resp, b, err := ts.post("/v1/chat/completions", body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v %s", resp, err, b)
	}
	var r struct {
		Usage struct {
			Prompt  int `json:"prompt_tokens"`
			Details *struct {
				Cached int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Usage.Details == nil {
		return r.Usage.Prompt, -1
	}
	return r.Usage.Prompt, r.Usage.Details.Cached
}

// TestPrefixCache: with the cache on, a repeated prompt hits its leading full blocks (never the
// whole prompt), a shared system prompt hits its blocks, a prompt with a different first word
// hits nothing, and /metrics counts queries and hits in tokens; with the cache off usage has no
// cached_tokens.
func TestPrefixCache(t *testing.T) {
	cfg := fastConfig()
	cfg.PrefixCache = sim.PrefixCache{Enabled: true, BlockTokens: 4, CapacityBlocks: 1024}
	ts := start(t, cfg, true)
	system := "you are a terse assistant who counts" // 7 words
	user := strings.Repeat("alpha ", 9)              // 9 words
	p, c := cachedTokens(t, ts, system, user)        // 1 + (3+7) + (3+9) = 23 tokens
	if p != 23 || c != 0 {
		t.Fatalf("first request: prompt %d cached %d, want 23 and 0", p, c)
	}
	if _, c := cachedTokens(t, ts, system, user); c != 20 { // floor((23-1)/4)*4
		t.Fatalf("repeat: cached %d, want 20", c)
	}
	// Same system prompt, other user text: BOS + system message (11 tokens) + user role and start
	// (2) = 13 shared tokens, so 3 full blocks.
	if _, c := cachedTokens(t, ts, system, "beta gamma delta epsilon zeta eta theta"); c != 12 {
		t.Fatalf("shared system prompt: cached %d, want 12", c)
	}
	// A nonce in front of the system prompt: the first block differs, nothing hits.
	if _, c := cachedTokens(t, ts, "nonce-1 "+system, user); c != 0 {
		t.Fatalf("nonce in front: cached %d, want 0", c)
	}
	if q, h := metric(t, ts, "qualsim_prefix_cache_queries_total"), metric(t, ts, "qualsim_prefix_cache_hits_total"); q != 23+23+21+24 || h != 32 {
		t.Fatalf("counters: queries %v hits %v, want 91 and 32", q, h)
	}

	off := start(t, fastConfig(), true)
	if _, c := cachedTokens(t, off, system, user); c != -1 {
		t.Fatalf("cache off: cached_tokens %d present", c)
	}
}

// TestResetPrefixCache: POST /reset_prefix_cache (vLLM's endpoint) empties the cache, so a prompt
// that hit before misses once and hits again after; /metrics counts the resets; a server without
// a cache answers 404.
func TestResetPrefixCache(t *testing.T) {
	cfg := fastConfig()
	cfg.PrefixCache = sim.PrefixCache{Enabled: true, BlockTokens: 4, CapacityBlocks: 1024}
	ts := start(t, cfg, true)
	system, user := "you are a terse assistant who counts", strings.Repeat("alpha ", 9)
	cachedTokens(t, ts, system, user)
	if _, c := cachedTokens(t, ts, system, user); c != 20 {
		t.Fatalf("before the reset: cached %d, want 20", c)
	}
	resp, b, err := ts.post("/reset_prefix_cache", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("reset: %v %v %s", resp, err, b)
	}
	if _, c := cachedTokens(t, ts, system, user); c != 0 {
		t.Fatalf("after the reset: cached %d, want 0", c)
	}
	if _, c := cachedTokens(t, ts, system, user); c != 20 {
		t.Fatalf("cached again: %d, want 20", c)
	}
	if n := metric(t, ts, "qualsim_prefix_cache_resets_total"); n != 1 {
		t.Fatalf("resets counter %v", n)
	}
	off := start(t, fastConfig(), true)
	if resp, _, err := off.post("/reset_prefix_cache", ""); err != nil || resp.StatusCode != 404 {
		t.Fatalf("without a cache: %v %v", resp, err)
	}
}
