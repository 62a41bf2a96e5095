package tokenize

import (
	"reflect"
	"testing"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
)

// TestSyntheticTokensExact: load.SyntheticTokens with the tiny vocabulary gives every prompt
// exactly its seeded target, for short and long targets and both templates, and the same
// prompts for the same seed.
func TestSyntheticTokensExact(t *testing.T) {
	tk := tiny(t)
	for _, c := range []struct {
		template contract.TokenizerTemplate
		min, max int
	}{
		{contract.TokenizerTemplateLines, 1, 40},
		{contract.TokenizerTemplateContents, 1, 40},
		{contract.TokenizerTemplateLines, 500, 2000},
	} {
		ps, err := load.SyntheticTokens(7, 60, c.min, c.max, tk, c.template)
		if err != nil {
			t.Fatalf("%s %d-%d: %v", c.template, c.min, c.max, err)
		}
		seen := map[int64]bool{}
		for _, p := range ps {
			n, err := tk.PromptTokens(c.template, []string{"user"}, []string{p.Text})
			if err != nil {
				t.Fatal(err)
			}
			if n < int64(c.min) || n > int64(c.max) {
				t.Fatalf("%s: prompt %s counts %d, outside %d-%d", c.template, p.ID, n, c.min, c.max)
			}
			seen[n] = true
		}
		if len(seen) < 10 {
			t.Errorf("%s %d-%d: only %d distinct lengths in 60 prompts", c.template, c.min, c.max, len(seen))
		}
		again, _ := load.SyntheticTokens(7, 60, c.min, c.max, tk, c.template)
		for i := range ps {
			if !reflect.DeepEqual(ps[i], again[i]) {
				t.Fatalf("prompt %d differs between two runs of the same seed", i)
			}
		}
	}
}

// BenchmarkCount measures the ledger's cost per request: a 64-token completion of the tiny
// model's kind and a 1,000-token prompt.
func BenchmarkCount(b *testing.B) {
	tk := tiny(b)
	ps, err := load.SyntheticTokens(1, 1, 1000, 1000, tk, contract.TokenizerTemplateLines)
	if err != nil {
		b.Fatal(err)
	}
	completion := "hello world token stream bench model fast slow test data value random tiny llama load queue batch cache start stop ready light quiet river stone green blue"
	b.Run("completion", func(b *testing.B) {
		for b.Loop() {
			tk.TextTokens(completion)
		}
	})
	b.Run("prompt-1000", func(b *testing.B) {
		for b.Loop() {
			tk.PromptTokens(contract.TokenizerTemplateLines, []string{"user"}, []string{ps[0].Text})
		}
	})
}

// The tokenizer gives runner/load its count limits, so a session case binding it is checked at
// plan time (load.CountLimits).
var _ load.CountLimits = (*Tokenizer)(nil)
