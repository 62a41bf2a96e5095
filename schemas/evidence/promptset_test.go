package evidence

import (
	"math/rand/v2"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestPromptSetHashIsTheDigest: prompts added one at a time hash to PromptSetDigest of them all,
// on plain text (the fast path) and on text the canonical form escapes (quotes, backslashes,
// control characters, non-ASCII), with and without system messages; empty sets too. A fast path
// that wrote a string the canonical form escapes would differ.
func TestPromptSetHashIsTheDigest(t *testing.T) {
	pieces := []string{"a", "word", " ", `"`, `\`, "\n", "\x01", "é", "日本", "\u2028", "</", "~"}
	rng := rand.New(rand.NewPCG(1, 2))
	text := func() string {
		s := ""
		for range rng.IntN(6) {
			s += pieces[rng.IntN(len(pieces))]
		}
		return s
	}
	for n := range 40 {
		ps := make([]contract.Prompt, n%7)
		h := NewPromptSetHash()
		for i := range ps {
			ps[i] = contract.Prompt{ID: "p" + text(), Text: text()}
			if rng.IntN(2) == 0 {
				ps[i].System = "s" + text()
			}
			if err := h.Add(ps[i]); err != nil {
				t.Fatal(err)
			}
		}
		want, err := PromptSetDigest(ps)
		if err != nil {
			t.Fatal(err)
		}
		if got := h.Sum(); got != want {
			t.Fatalf("set %d %q: streamed %s, PromptSetDigest %s", n, ps, got, want)
		}
	}
	if err := NewPromptSetHash().Add(contract.Prompt{ID: "x", Text: "\xff"}); err == nil {
		t.Fatal("text that is not UTF-8 was added")
	}
}
