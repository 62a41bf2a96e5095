package tokenize

import (
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/ollama/ollama/tokenizer"
)

// TestPieceCacheAgrees: counts through the piece cache are the counts of merging every piece
// (countMerging) and ollama's, for the tiny and the hostile vocabularies and random ones, on texts
// of words (every piece repeated, so nearly every count is a cache hit), of spaces, "▁", special
// tokens, multi-byte and invalid UTF-8, counted by four goroutines at once; and the cache holds
// only short pieces that it does not share with the counted text.
func TestPieceCacheAgrees(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 9))
	atoms := []string{"a", "b", "ab", " ", "  ", "▁", "<s>", "</s>", "é", "\xff", "hello", " world", "▁say", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}
	text := func(words string, n int) string {
		var b strings.Builder
		fields := strings.Fields(words)
		for range n {
			if r.IntN(3) == 0 {
				b.WriteString(atoms[r.IntN(len(atoms))])
			} else {
				b.WriteString(" " + fields[r.IntN(len(fields))])
			}
		}
		return b.String()
	}
	check := func(name string, tk *Tokenizer, ref tokenizer.SentencePiece, texts []string) {
		t.Helper()
		if tk.merge.cache == nil {
			t.Fatalf("%s: no piece cache", name)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				for k, s := range texts {
					if k%4 != g && k%3 != 0 {
						continue
					}
					got, _ := tk.TextTokens(s)
					want, _ := tk.encodeCount(s, new(int64)) // ops: every piece merged
					if got != want {
						t.Errorf("%s: TextTokens(%.60q) = %d cached, %d merged", name, s, got, want)
						return
					}
					if len(s) <= 200 {
						if ids, _ := ref.Encode(s, false); int64(len(ids)) != got {
							t.Errorf("%s: TextTokens(%.60q) = %d, ollama %d", name, s, got, len(ids))
							return
						}
					}
				}
			})
		}
		wg.Wait()
		held := 0
		for i := range tk.merge.cache.slots {
			if e := tk.merge.cache.slots[i].Load(); e != nil {
				held++
				if len(e.piece) > maxCachedPiece {
					t.Fatalf("%s: cached a piece of %d bytes", name, len(e.piece))
				}
				at := uintptr(unsafe.Pointer(unsafe.StringData(e.piece)))
				for _, s := range texts {
					if from := uintptr(unsafe.Pointer(unsafe.StringData(s))); at >= from && at < from+uintptr(len(s)) {
						t.Fatalf("%s: cached piece %q points into a counted text", name, e.piece)
					}
				}
			}
		}
		if held == 0 {
			t.Fatalf("%s: nothing cached", name)
		}
	}
	words := promptOf(t, tiny(t), 2000)
	for name, data := range map[string][]byte{"tiny": tinyBytes(t), "hostile": hostileBytes(t)} {
		tk := tiny(t)
		if name == "hostile" {
			tk = hostile(t)
		}
		ref := reference(t, data)
		var texts []string
		for range 200 {
			texts = append(texts, text(words, 1+r.IntN(60)))
		}
		texts = append(texts, words, text(words, 3000))
		check(name, tk, ref, texts)
	}
	for i := range 100 {
		v := randomVocabulary(r, false)
		tk, err := fromVocabulary(v.Values, v.Scores, v.Types)
		if err != nil {
			t.Fatal(err)
		}
		ref := tokenizer.NewSentencePiece(&tokenizer.Vocabulary{Values: v.Values, Scores: v.Scores, Types: v.Types})
		var texts []string
		for range 20 {
			var b strings.Builder
			for range r.IntN(60) {
				b.WriteString([]string{"a", "b", "<", ">", " ", "▁", "é", "\xff", "ab", " ab"}[r.IntN(10)])
			}
			texts = append(texts, b.String())
		}
		if tk.merge.pieces {
			check("random "+string(rune('A'+i%26)), tk, ref, texts)
		}
	}
}
