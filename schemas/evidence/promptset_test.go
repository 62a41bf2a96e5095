package evidence

import (
	"math/rand/v2"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// TestPromptSetHashIsTheDigest: prompts added one at a time hash to the definition of the prompt
// set hash (the sha256 of the RFC 8785 canonical JSON array of them all), and so does
// PromptSetDigest, on plain text (the fast path) and on text the canonical form escapes (quotes,
// backslashes, control characters, non-ASCII), with and without system messages; empty sets too.
// A fast path that wrote a string the canonical form escapes would differ.
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
		b, err := jsonstrict.Canonical(ps)
		if err != nil {
			t.Fatal(err)
		}
		want := DigestOf(b)
		if got := h.Sum(); got != want {
			t.Fatalf("set %d %q: streamed %s, the canonical array %s", n, ps, got, want)
		}
		if got, err := PromptSetDigest(ps); err != nil || got != want {
			t.Fatalf("set %d %q: PromptSetDigest %s (%v), the canonical array %s", n, ps, got, err, want)
		}
	}
	if err := NewPromptSetHash().Add(contract.Prompt{ID: "x", Text: "\xff"}); err == nil {
		t.Fatal("text that is not UTF-8 was added")
	}
}
