package load

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestSharedPrefixTokens: with lengths in tokens every group's suffixes share one prefix of
// exactly prefix_tokens tokens of bare text, each prompt counts exactly the prefix's prompt count
// plus a suffix count within the declared range (the draws cover it), the same seed gives the
// same prompts, and against qualsim counting with the same tokenizer the client ledger and usage
// agree on every request.
func TestSharedPrefixTokens(t *testing.T) {
	tc := thirds{}
	tmpl := contract.TokenizerTemplateLines
	ps, err := SharedPrefixTokens(9, 3, 200, 4, [2]int{5, 40}, tc, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 12 {
		t.Fatalf("%d prompts", len(ps))
	}
	again, _ := SharedPrefixTokens(9, 3, 200, 4, [2]int{5, 40}, tc, tmpl)
	if !reflect.DeepEqual(ps, again) {
		t.Fatal("the same seed gave other prompts")
	}
	var suffixes []int64
	for g := range 3 {
		first := ps[g*4].Text
		var prefix string
		for s := range 4 {
			p := ps[g*4+s]
			if p.ID != "prefix-g000"+string(rune('0'+g))+"-s000"+string(rune('0'+s)) {
				t.Fatalf("id %s", p.ID)
			}
			// The prefix is the longest common word prefix that counts 200 bare-text tokens.
			if s == 0 {
				words := strings.Split(first, " ")
				for k := range words {
					cand := strings.Join(words[:k+1], " ")
					if n, _ := tc.TextTokens(cand); n == 200 {
						prefix = cand
						break
					}
				}
				if prefix == "" {
					t.Fatalf("group %d: no word prefix of 200 tokens", g)
				}
			}
			if !strings.HasPrefix(p.Text, prefix+" ") {
				t.Fatalf("%s does not start with its group's prefix", p.ID)
			}
			base, _ := tc.PromptTokens(tmpl, []string{"user"}, []string{prefix})
			n, _ := tc.PromptTokens(tmpl, []string{"user"}, []string{p.Text})
			if n-base < 5 || n-base > 40 {
				t.Fatalf("%s: suffix adds %d tokens, want 5 to 40", p.ID, n-base)
			}
			suffixes = append(suffixes, n-base)
		}
	}
	if slices.Min(suffixes) == slices.Max(suffixes) {
		t.Fatalf("every suffix adds %d tokens: the seeded counts do not vary", suffixes[0])
	}
	if _, err := SharedPrefixTokens(9, 1, 10, 1, [2]int{4, 3}, tc, tmpl); err == nil {
		t.Fatal("a suffix range with min over max was accepted")
	}

	cfg := fastSim()
	cfg.Tokens = simThirds{}
	url := startSim(t, cfg)
	zero, frac := int64(0), 0.0
	c := servingCase([]int64{2}, 1, 0, 12)
	c.Tokenizer = &contract.Tokenizer{Format: contract.TokenizerFormat, Path: "models/t.gguf", Digest: "sha256:" + strings.Repeat("ab", 32), Template: tmpl, MaxRequestDifference: &zero, MaxMismatchFraction: &frac}
	c.OutputAssertions = nil
	res, err := Run(context.Background(), Plan{CaseID: "prefix", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: ps, Seed: 1, Epoch: time.Now(), Tokens: tc})
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	byID := map[string]string{}
	for _, p := range ps {
		byID[p.ID] = p.Text
	}
	if len(row.Records) < len(ps) {
		t.Fatalf("%d records for %d prompts", len(row.Records), len(ps))
	}
	for _, r := range row.Records {
		text, ok := byID[r.PromptID]
		if !ok {
			t.Fatalf("record %d: prompt %q", r.Index, r.PromptID)
		}
		want, _ := tc.PromptTokens(tmpl, []string{"user"}, []string{text})
		if r.Error != nil || r.Usage == nil || r.ClientTokens == nil || r.Usage.PromptTokens != want || r.ClientTokens.PromptTokens != want {
			t.Fatalf("record %d: error %+v, usage %+v, client %+v, want %d prompt tokens", r.Index, r.Error, r.Usage, r.ClientTokens, want)
		}
	}
	t.Logf("%d requests, suffixes adding %v tokens", len(row.Records), suffixes)
}
