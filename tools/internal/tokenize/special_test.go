package tokenize

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ollama/ollama/tokenizer"

	"github.com/qualkit/qualkit/tools/internal/gguf"
	"github.com/qualkit/qualkit/tools/internal/qualgguf"
)

// reference is ollama's own encoder of the vocabulary of a GGUF file: the count special.go and
// the per-fragment merges must agree with.
func reference(t testing.TB, data []byte) tokenizer.SentencePiece {
	t.Helper()
	h, err := gguf.Read(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	tokens, _ := h.Lookup("tokenizer.ggml.tokens")
	scores, _ := h.Lookup("tokenizer.ggml.scores")
	types, _ := h.Lookup("tokenizer.ggml.token_type")
	return tokenizer.NewSentencePiece(&tokenizer.Vocabulary{Values: tokens.([]string), Scores: scores.([]float32), Types: types.([]int32)})
}

// randomVocabulary is a SentencePiece vocabulary over a small alphabet whose special tokens
// overlap each other in every way (one a prefix, suffix or infix of another, repeated, earlier
// or later in vocabulary order than the tokens inside them).
func randomVocabulary(r *rand.Rand, vocabularyWithInnerSpace bool) *tokenizer.Vocabulary {
	const alphabet = "ab<>▁"
	word := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteByte(alphabet[r.IntN(4)]) // ASCII only: a special token is matched bytewise
		}
		return b.String()
	}
	v := &tokenizer.Vocabulary{}
	add := func(s string, typ int32) {
		v.Values = append(v.Values, s)
		v.Scores = append(v.Scores, float32(r.IntN(5)))
		v.Types = append(v.Types, typ)
	}
	add("<unk>", tokenizer.TOKEN_TYPE_UNKNOWN)
	for b := 0; b < 256; b++ {
		add(fmt.Sprintf("<0x%02X>", b), tokenizer.TOKEN_TYPE_BYTE)
	}
	for range 20 + r.IntN(40) {
		typ := int32(tokenizer.TOKEN_TYPE_NORMAL)
		if r.IntN(2) == 0 {
			typ = tokenizer.TOKEN_TYPE_CONTROL + int32(r.IntN(2)) // control or user-defined
		}
		s := word(1 + r.IntN(4))
		if typ != tokenizer.TOKEN_TYPE_NORMAL && r.IntN(3) == 0 {
			s = s[:1] + " " + s[1:] // a special token is matched in the text as given, spaces and all
		}
		switch r.IntN(12) {
		case 0, 1, 2, 3:
			s = "▁" + s
		case 4:
			s = "▁▁" + s
		case 5:
			if vocabularyWithInnerSpace {
				s += "▁" + word(1) // no merging piece by piece for this vocabulary
			}
		}
		add(s, typ)
	}
	return v
}

// TestSpecialsAgreeWithOllama: the count is the length of ollama's Encode for the tiny and the
// hostile vocabularies on prompts with special tokens in them, and for 300 random vocabularies
// with overlapping special tokens on random texts.
func TestSpecialsAgreeWithOllama(t *testing.T) {
	texts := []string{"", "hello world", "<s>hello</s> world <s><s>", "</s<s>>", "say hello to a new é\xff", "   ", "<unk><0x41>"}
	for name, data := range map[string][]byte{"tiny": tinyBytes(t), "hostile": hostileBytes(t)} {
		tk, err := Load(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		ref := reference(t, data)
		for _, s := range append(texts, promptOf(t, tk, 700)) {
			want, _ := ref.Encode(s, false)
			if got, err := tk.TextTokens(s); err != nil || got != int64(len(want)) {
				t.Errorf("%s: TextTokens(%.40q) = %d, %v; ollama %d", name, s, got, err, len(want))
			}
		}
	}
	r := rand.New(rand.NewPCG(27, 7))
	for i := range 300 {
		v := randomVocabulary(r, i%2 == 0)
		tk, err := fromVocabulary(v.Values, v.Scores, v.Types)
		if err != nil {
			t.Fatal(err)
		}
		ref := tokenizer.NewSentencePiece(&tokenizer.Vocabulary{Values: v.Values, Scores: v.Scores, Types: v.Types})
		for range 20 {
			var b strings.Builder
			for range r.IntN(40) {
				b.WriteString([]string{"a", "b", "<", ">", " ", "▁", "é", "\xff"}[r.IntN(8)])
			}
			s := b.String()
			want, _ := ref.Encode(s, false)
			if got, err := tk.count(s); err != nil || got != int64(len(want)) {
				t.Fatalf("vocabulary %d %q: count(%q) = %d, %v; ollama %d", i, v.Values[257:], s, got, err, len(want))
			}
		}
	}
}

// TestCountWorkLinear: a count's work (trie steps, candidates and bitset words of the special
// tokens, specials.find; runes and heap operations of the merges, merger.count) per byte of a
// prompt does not grow with the prompt: for the hostile and the tiny vocabularies on the
// generator's words, for the hostile one on a text of nothing but special tokens, and for a
// vocabulary of nested special tokens (a, aa, ..., 128 a's, the longest first, and the shortest
// first) on a run of a's, where it is at most 2 words per special-token length. Before, ollama's
// Encode ran a pass per special token over a fragment list rebuilt at each match.
func TestCountWorkLinear(t *testing.T) {
	nested := make([]string, MaxSpecialTokenBytes)
	for i := range nested {
		nested[i] = strings.Repeat("a", MaxSpecialTokenBytes-i)
	}
	hk, tk := hostile(t), tiny(t)
	count := func(tk *Tokenizer) func(string, *int64) {
		return func(s string, ops *int64) {
			if _, err := tk.encodeCount(s, ops); err != nil {
				t.Fatal(err)
			}
		}
	}
	find := func(m *specials) func(string, *int64) { return func(s string, ops *int64) { m.find(s, ops) } }
	words := func(n int) string { return promptOf(t, tk, n) }
	for _, c := range []struct {
		name string
		work func(string, *int64)
		text func(n int) string
	}{
		{"hostile words", count(hk), words},
		{"tiny words", count(tk), words},
		{"hostile specials only", count(hk), func(n int) string { return strings.Repeat("ab cd", n/5+1)[:n] }},
		{"nested a's", find(newSpecials(nested)), func(n int) string { return strings.Repeat("a", n) }},
		{"nested a's, shortest first", find(newSpecials(reversed(nested))), func(n int) string { return strings.Repeat("a", n) }},
	} {
		var perByte []float64
		for _, n := range []int{1 << 10, 1 << 12, 1 << 14, 1 << 16} {
			var ops int64
			c.work(c.text(n), &ops)
			perByte = append(perByte, float64(ops)/float64(n))
		}
		// Quadratic work would grow 4 times a step; the first bytes of a text (fewer matches
		// end there) make the smallest size a little cheaper.
		for _, p := range perByte[1:] {
			if p > perByte[0]*1.1+1 || p > 4+2*MaxSpecialTokenBytes {
				t.Errorf("%s: work per byte %.2f over 1, 4, 16, 64 KiB: it grows", c.name, perByte)
			}
		}
		t.Logf("%s: work per byte %.2f", c.name, perByte)
	}
	if !tk.merge.pieces || !hk.merge.pieces {
		t.Error("the tiny vocabulary's texts are not merged piece by piece")
	}
}

func reversed(s []string) []string {
	r := make([]string, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}

// TestVocabularyLimits: a vocabulary over a limit is refused when it is loaded, with an error
// naming the limit and the value; one at the limit loads.
func TestVocabularyLimits(t *testing.T) {
	base, err := qualgguf.TinyLlama(qualgguf.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(key string) any {
		for _, kv := range base.Metadata {
			if kv.Key == key {
				return kv.Value
			}
		}
		t.Fatalf("no %s", key)
		return nil
	}
	tokens := lookup("tokenizer.ggml.tokens").([]string)
	scores := lookup("tokenizer.ggml.scores").([]float32)
	types := lookup("tokenizer.ggml.token_type").([]int32)
	// grown is the tiny vocabulary plus n tokens of the given type and text.
	grown := func(n int, typ int32, text func(i int) string) []byte {
		tk, sc, ty := append([]string(nil), tokens...), append([]float32(nil), scores...), append([]int32(nil), types...)
		for i := range n {
			tk, sc, ty = append(tk, text(i)), append(sc, 0), append(ty, typ)
		}
		return write(t, base, map[string]any{"tokenizer.ggml.tokens": tk, "tokenizer.ggml.scores": sc, "tokenizer.ggml.token_type": ty})
	}
	name := func(i int) string { return fmt.Sprintf("<x%d>", i) }
	specials := 2 // <s> and </s>
	for _, c := range []struct {
		name string
		data []byte
		want string // "" when the file loads
	}{
		{"special tokens at the limit", grown(MaxSpecialTokens-specials, tokenizer.TOKEN_TYPE_USER_DEFINED, name), ""},
		{"special tokens over", grown(MaxSpecialTokens-specials+1, tokenizer.TOKEN_TYPE_CONTROL, name), fmt.Sprintf("more than MaxSpecialTokens %d", MaxSpecialTokens)},
		{"special token at the limit", grown(1, tokenizer.TOKEN_TYPE_CONTROL, func(int) string { return strings.Repeat("x", MaxSpecialTokenBytes) }), ""},
		{"special token over", grown(1, tokenizer.TOKEN_TYPE_CONTROL, func(int) string { return strings.Repeat("x", MaxSpecialTokenBytes+1) }),
			fmt.Sprintf("is %d bytes, over MaxSpecialTokenBytes %d", MaxSpecialTokenBytes+1, MaxSpecialTokenBytes)},
		{"normal token over", grown(1, tokenizer.TOKEN_TYPE_NORMAL, func(int) string { return strings.Repeat("x", MaxTokenBytes+1) }),
			fmt.Sprintf("is %d bytes, over MaxTokenBytes %d", MaxTokenBytes+1, MaxTokenBytes)},
		{"vocabulary over", grown(MaxVocabulary-len(tokens)+1, tokenizer.TOKEN_TYPE_NORMAL, name), fmt.Sprintf("has %d strings, over MaxVocabulary %d", MaxVocabulary+1, MaxVocabulary)},
		{"merges over", write(t, base, map[string]any{"tokenizer.ggml.merges": make([]string, MaxMerges+1)}), fmt.Sprintf("at most MaxMerges %d strings, got %d", MaxMerges, MaxMerges+1)},
		{"merges not strings", write(t, base, map[string]any{"tokenizer.ggml.merges": uint32(3)}), "got a uint32"},
		{"merges at the limit", write(t, base, map[string]any{"tokenizer.ggml.merges": make([]string, MaxMerges)}), ""},
	} {
		_, err := Load(bytes.NewReader(c.data))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (!errors.Is(err, ErrVocabulary) || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want ErrVocabulary with %q", c.name, err, c.want)
		}
	}
}

// write is base with the metadata values of set replaced or added, as GGUF bytes.
func write(t testing.TB, base *gguf.File, set map[string]any) []byte {
	t.Helper()
	f := *base
	f.Metadata = nil
	done := map[string]bool{}
	for _, kv := range base.Metadata {
		if v, ok := set[kv.Key]; ok {
			kv.Value, done[kv.Key] = v, true
		}
		f.Metadata = append(f.Metadata, kv)
	}
	for k, v := range set {
		if !done[k] {
			f.Metadata = append(f.Metadata, gguf.KV{Key: k, Value: v})
		}
	}
	var b bytes.Buffer
	if _, err := gguf.Write(&b, &f); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// FuzzAgreeWithOllama: any text counts as many tokens as ollama's Encode returns, with the tiny
// and the hostile vocabularies.
func FuzzAgreeWithOllama(f *testing.F) {
	type pair struct {
		tk  *Tokenizer
		ref tokenizer.SentencePiece
	}
	var vs []pair
	for _, data := range [][]byte{tinyBytes(f), hostileBytes(f)} {
		tk, err := Load(bytes.NewReader(data))
		if err != nil {
			f.Fatal(err)
		}
		vs = append(vs, pair{tk, reference(f, data)})
	}
	for _, s := range []string{"", "hello world", "<s>say</s> hello", "é\x00\xff▁▁ a", "aaaa    bb"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 512 {
			s = s[:512] // ollama's Encode is slow on the hostile vocabulary
		}
		for i, v := range vs {
			want, _ := v.ref.Encode(s, false)
			if got, err := v.tk.TextTokens(s); err != nil || got != int64(len(want)) {
				t.Fatalf("vocabulary %d: TextTokens(%q) = %d, %v; ollama %d", i, s, got, err, len(want))
			}
		}
	})
}
