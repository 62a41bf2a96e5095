package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestSessionRules: the session and shared-prefix corpora's rules a schema cannot express (the
// documents pass the schema; CUE, Go and ajv agree on that): each fixture under testdata/rules is
// refused with a semantic violation at its pointer, and with nothing else.
func TestSessionRules(t *testing.T) {
	for file, pointer := range map[string]string{
		"sessions-cold-regime.json":                   "/variants/0/cases/0/cache_regime",
		"sessions-synthetic-turns-min-over-max.json":  "/variants/0/cases/0/corpus/turns/min",
		"sessions-with-requests.json":                 "/variants/0/cases/0/requests",
		"shared-prefix-suffix-min-over-max.json":      "/variants/0/cases/0/corpus/suffix_words/min",
		"session-turn-missing-reply-digest.json":      "/session/reply_digests",
		"session-round-without-tool-messages.json":    "/session/tool_messages",
		"session-round-history-miscounted.json":       "/session/history_messages",
		"tool-results-without-sessions.json":          "/variants/0/cases/0/tools/results",
		"tool-rounds-without-results.json":            "/variants/0/cases/0/tools/rounds",
		"trace-tokens-without-tokenizer.json":         "/variants/0/cases/0/corpus/length_unit",
		"trace-words-per-token-missing.json":          "/variants/0/cases/0/corpus/words_per_token",
		"trace-tokens-with-words-per-token.json":      "/variants/0/cases/0/corpus/words_per_token",
		"shared-prefix-tokens-without-tokenizer.json": "/variants/0/cases/0/corpus/prefix_tokens",
		"shared-prefix-tokens-suffix-missing.json":    "/variants/0/cases/0/corpus/suffix_tokens",
		"shared-prefix-tokens-min-over-max.json":      "/variants/0/cases/0/corpus/suffix_tokens/min",
	} {
		t.Run(file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "rules", file))
			if err != nil {
				t.Fatal(err)
			}
			out, err := CheckDocument(data)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range out.Violations {
				if !errors.Is(v, ErrSemantic) {
					t.Errorf("a non-semantic violation: %v", v)
				}
				found = found || v.Pointer == pointer
			}
			if !found {
				t.Errorf("no semantic violation at %s: %v", pointer, out.Violations)
			}
		})
	}
}
