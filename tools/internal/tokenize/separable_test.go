package tokenize

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ollama/ollama/tokenizer"
)

// TestSeparable: wherever Separable says a text splits, the two sides' counts add up to the
// whole's, for the tiny and the hostile vocabularies on the generator's words with special tokens
// sprinkled in, and for 200 random vocabularies; and it says so at most joins before a space of
// the generator's words with the tiny vocabulary (what a block-by-block count needs).
func TestSeparable(t *testing.T) {
	r := rand.New(rand.NewPCG(28, 4))
	tk := tiny(t)
	words := promptOf(t, tk, 3000)
	var sprinkled strings.Builder
	for _, w := range strings.Fields(words) {
		sprinkled.WriteString([]string{" ", " ", " ", "  ", " <s>", "</s> ", " é\xff", "▁"}[r.IntN(8)])
		sprinkled.WriteString(w)
	}
	check := func(name string, tk *Tokenizer, text string, joins int) (separable, tried int) {
		t.Helper()
		for range joins {
			i := r.IntN(len(text) + 1)
			if r.IntN(2) == 0 { // mostly at a space
				if k := strings.IndexByte(text[i:], ' '); k >= 0 {
					i += k
				}
			}
			p, s := text[:i], text[i:]
			if !tk.Separable(p, s) {
				tried++
				continue
			}
			separable++
			tried++
			whole, _ := tk.TextTokens(p + s)
			a, _ := tk.TextTokens(p)
			b, _ := tk.TextTokens(s)
			if whole != a+b {
				t.Fatalf("%s: Separable(%.30q..., ...%.30q) but %d != %d + %d", name, p[max(0, len(p)-30):], s, whole, a, b)
			}
		}
		return separable, tried
	}
	hk := hostile(t)
	for _, c := range []struct {
		name string
		tk   *Tokenizer
		text string
	}{{"tiny words", tk, words}, {"tiny sprinkled", tk, sprinkled.String()}, {"hostile words", hk, words}, {"hostile sprinkled", hk, sprinkled.String()}} {
		n, tried := check(c.name, c.tk, c.text, 300)
		t.Logf("%s: %d of %d joins separable", c.name, n, tried)
	}
	// At a space, the tiny vocabulary separates nearly every join of the generator's words.
	atSpace, sep := 0, 0
	for i := 1; i < len(words); i++ {
		if words[i] == ' ' && words[i-1] != ' ' {
			atSpace++
			if tk.Separable(words[:i], words[i:]) {
				sep++
			}
		}
	}
	if sep < atSpace*9/10 {
		t.Errorf("tiny words: %d of %d joins at a space separable, want 90%%", sep, atSpace)
	}
	randomSep, randomTried := 0, 0
	for i := range 200 {
		v := randomVocabulary(r, i%2 == 0)
		rk, err := fromVocabulary(v.Values, v.Scores, v.Types)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for range 200 {
			b.WriteString([]string{"a", "b", "<", ">", "a", "b", " ", " ", "▁", "é"}[r.IntN(10)])
		}
		n, tried := check("random", rk, b.String(), 60)
		randomSep, randomTried = randomSep+n, randomTried+tried
	}
	t.Logf("random vocabularies: %d of %d joins separable", randomSep, randomTried)
	if randomSep == 0 {
		t.Error("no join of a random vocabulary's text separable: the check is not exercised")
	}
}

// TestSeparableFragmentTokens: a side whose text next to the join is a whole fragment that is a
// token is counted as that one token alone but merged when joined, so the join is not separable:
// "xyz" and "▁ab" are tokens that no merge reaches.
func TestSeparableFragmentTokens(t *testing.T) {
	tokens := []string{"<unk>", "<x>", "▁", "a", "b", "c", "q", "x", "y", "z", "▁ab", "xyz"}
	types := make([]int32, len(tokens))
	for i := range types {
		types[i] = tokenizer.TOKEN_TYPE_NORMAL
	}
	types[0], types[1] = tokenizer.TOKEN_TYPE_UNKNOWN, tokenizer.TOKEN_TYPE_CONTROL
	tk, err := fromVocabulary(tokens, make([]float32, len(tokens)), types)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		prefix, suffix string
		separable      bool
	}{
		{"c q", " ab<x> c c", false},  // the suffix's first fragment " ab" is a token
		{"c q", " ab c<x> c c", true}, // it is not: " ab c" merges as when joined
		{"xyz", " c c", false},        // the prefix is one fragment, a token
		{"c xyz", " c c", true},       // it is not
		{"c c<x>xyz", " c c", false},  // the prefix's last fragment is a token
		{"c xyz ", " c c", false},     // the suffix's space follows a space
		{"c xyz", "c c", false},       // the suffix does not start with a space
	} {
		got := tk.Separable(c.prefix, c.suffix)
		whole, _ := tk.TextTokens(c.prefix + c.suffix)
		a, _ := tk.TextTokens(c.prefix)
		b, _ := tk.TextTokens(c.suffix)
		if got != c.separable || (got && whole != a+b) {
			t.Errorf("Separable(%q, %q) = %v, want %v (counts %d, %d + %d)", c.prefix, c.suffix, got, c.separable, whole, a, b)
		}
		if !c.separable && whole == a+b && c.suffix[0] == ' ' && c.prefix[len(c.prefix)-1] != ' ' {
			t.Errorf("%q + %q: the counts add up, the case shows nothing", c.prefix, c.suffix)
		}
	}
}
