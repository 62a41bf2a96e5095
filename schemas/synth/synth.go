package synth

import (
	"fmt"
	"iter"
	"math"
	"strings"
	"unicode"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// Prompt is one synthesised prompt: its id, its text and its system message ("" when none).
type Prompt struct{ ID, Text, System string }

// Words is the vocabulary of qualkit.synthetic-words.v1: 256 distinct lower-case
// English words, indexed 0-255 in this order. Changing it changes the generator's version.
var Words = [256]string{
	"able", "about", "above", "act", "add", "after", "again", "air", "all", "also",
	"always", "among", "and", "animal", "answer", "any", "area", "around", "ask", "away",
	"back", "ball", "base", "bear", "beauty", "bed", "before", "began", "begin", "behind",
	"best", "better", "between", "big", "bird", "black", "blue", "boat", "body", "book",
	"both", "box", "boy", "bring", "brown", "build", "busy", "call", "came", "can",
	"car", "care", "carry", "cause", "center", "change", "check", "city", "class", "clear",
	"close", "cold", "color", "come", "common", "complete", "could", "country", "course", "cover",
	"cross", "cry", "cut", "dark", "day", "deep", "did", "differ", "direct", "distant",
	"does", "dog", "door", "down", "draw", "dry", "during", "each", "early", "earth",
	"ease", "east", "eat", "end", "enough", "even", "ever", "every", "example", "eye",
	"face", "fact", "fall", "family", "far", "farm", "fast", "father", "feel", "few",
	"field", "figure", "fill", "final", "find", "fine", "fire", "first", "fish", "five",
	"fly", "follow", "food", "foot", "force", "form", "found", "four", "free", "friend", // not a contract value: a word of the synthetic corpus
	"from", "front", "full", "game", "gave", "general", "get", "girl", "give", "gold",
	"good", "got", "govern", "great", "green", "ground", "group", "grow", "half", "hand",
	"happen", "hard", "has", "have", "head", "hear", "heard", "heat", "help", "here",
	"high", "hold", "home", "horse", "hot", "hour", "house", "how", "hundred", "idea", // not a contract value: a word of the synthetic corpus
	"inch", "interest", "island", "just", "keep", "kind", "king", "knew", "know", "land",
	"large", "last", "late", "laugh", "lay", "lead", "learn", "leave", "left", "less",
	"letter", "life", "light", "like", "line", "list", "listen", "little", "live", "long",
	"look", "made", "main", "make", "man", "many", "map", "mark", "may", "mean",
	"measure", "men", "might", "mile", "mind", "minute", "miss", "money", "moon", "more",
	"morning", "most", "mother", "mountain", "move", "much", "music", "must", "name", "near",
	"need", "never", "new", "next", "night", "north", "note", "nothing", "notice", "noun",
	"now", "number", "numeral", "object", "ocean", "off", "often", "old", "once", "only",
	"open", "order", "other", "our", "out", "over", // not a contract value: a word of the synthetic corpus
}

// SpacedWords[k] is " " + Words[k], a word after another.
var SpacedWords = func() (out [len(Words)]string) {
	for k, w := range Words {
		out[k] = " " + w
	}
	return out
}()

// MaxWordBytes is the longest word of the vocabulary.
var MaxWordBytes = func() int {
	n := 0
	for _, w := range Words {
		n = max(n, len(w))
	}
	return n
}()

// SyntheticID is prompt i's id under qualkit.synthetic-words.v1: "synthetic-" and i as six or
// more zero-padded digits.
func SyntheticID(i int) string { return fmt.Sprintf("synthetic-%06d", i) }

// SyntheticWords is the generator qualkit.synthetic-words.v1, yielding prompt i for
// i = 0, 1, ..., count-1 in turn. One SplitMix64 stream is seeded with seed; for each prompt it
// draws the word count n = minWords + (next mod (maxWords - minWords + 1)), then n words, each
// Words[next mod 256], joined by single spaces. Prompt i's id is SyntheticID(i); it has no system
// message. The modulo bias is part of the definition. Each prompt is written when it is yielded,
// so a consumer that keeps none holds one at a time.
func SyntheticWords(seed uint64, count, minWords, maxWords int) iter.Seq2[int, Prompt] {
	return func(yield func(int, Prompt) bool) {
		rng := metric.SplitMix64{State: seed}
		var sb strings.Builder
		for i := range count {
			if !yield(i, Prompt{ID: SyntheticID(i), Text: WordText(&rng, &sb, minWords+int(rng.Next()%uint64(maxWords-minWords+1)))}) {
				return
			}
		}
	}
}

// WordText draws n words from rng (Words[next mod 256] each) joined by single spaces, built in sb.
func WordText(rng *metric.SplitMix64, sb *strings.Builder, n int) string {
	sb.Reset()
	for j := range n {
		if j > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(Words[rng.Next()%256])
	}
	return sb.String()
}

// SharedPrefixID is prompt s of group g's id under qualkit.shared-prefix.v1: "prefix-g" g "-s" s,
// each four or more zero-padded digits.
func SharedPrefixID(g, s int) string { return fmt.Sprintf("prefix-g%04d-s%04d", g, s) }

// SharedPrefix is the generator qualkit.shared-prefix.v1, yielding prompt g × suffixes + s in
// turn. One SplitMix64 stream is seeded with seed; for group g = 0, 1, ..., groups-1 in turn it
// draws the group's prefix, prefixWords words as qualkit.synthetic-words.v1 draws them
// (Words[next mod 256], joined by single spaces), then for each suffix s < suffixes the word count
// n = suffixWords[0] + (next mod (suffixWords[1] - suffixWords[0] + 1)) and n words. Prompt
// g × suffixes + s (groups in order, each group's suffixes together) has the text prefix, a space
// and the suffix, the id SharedPrefixID(g, s), and no system message.
func SharedPrefix(seed uint64, groups, prefixWords, suffixes int, suffixWords [2]int) iter.Seq2[int, Prompt] {
	return func(yield func(int, Prompt) bool) {
		rng := metric.SplitMix64{State: seed}
		var sb strings.Builder
		for g := range groups {
			prefix := WordText(&rng, &sb, prefixWords)
			for s := range suffixes {
				n := suffixWords[0] + int(rng.Next()%uint64(suffixWords[1]-suffixWords[0]+1))
				if !yield(g*suffixes+s, Prompt{ID: SharedPrefixID(g, s), Text: prefix + " " + WordText(&rng, &sb, n)}) {
					return
				}
			}
		}
	}
}

// WarmupSalt separates a row's warmup words from other streams.
const WarmupSalt = 0x51574B5741524D55

// TextFields is the length of a text in words: its space-separated fields, as strings.Fields
// splits them (runs of unicode.IsSpace), counted without allocating. A corpus prompt's warmups
// copy its length in these; qualsim counts a prompt's words and a token trace's plan its
// prompts' words with it.
func TextFields(text string) int {
	n, in := 0, false
	for _, r := range text {
		space := unicode.IsSpace(r)
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// Warmups returns the warmup prompts of a row over a corpus of size prompts given by shape
// (prompt i's system message and the TextFields of its text): warmup w keeps the system message
// of corpus prompt w mod size and replaces its text with as many synthetic words as that text has
// fields (at least one), drawn from a SplitMix64 stream seeded with
// seed ^ (concurrency << 32) ^ repetition ^ WarmupSalt. Warmups thus match the corpus's shapes
// and shared system prompt without priming a prefix cache with the measured prompts. Their ids
// are metric.WarmupPromptID(w).
func Warmups(size int, shape func(i int) (system string, fields int), n int, seed int64, concurrency, repetition int64) []Prompt {
	rng := metric.SplitMix64{State: uint64(seed) ^ uint64(concurrency)<<32 ^ uint64(repetition) ^ WarmupSalt}
	out := make([]Prompt, n)
	var sb strings.Builder
	for w := range n {
		system, fields := shape(w % size)
		out[w] = Prompt{ID: metric.WarmupPromptID(int64(w)), System: system, Text: WordText(&rng, &sb, max(1, fields))}
	}
	return out
}

// NonceSalt separates a cold row's nonces from other streams.
const NonceSalt = 0x51574B4E4F4E4345

// Nonces are a cold row's n per-request nonces ("qk-nonce-" and 16 hex digits), drawn from a
// SplitMix64 stream seeded with seed ^ (c << 32) ^ rep ^ NonceSalt: request i's is the i-th.
func Nonces(seed int64, c, rep int64, n int) []string {
	rng := metric.SplitMix64{State: uint64(seed) ^ uint64(c)<<32 ^ uint64(rep) ^ NonceSalt}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("qk-nonce-%016x", rng.Next())
	}
	return out
}

// WithNonce puts nonce in front of a prompt's first message: its system message when it has one,
// else its text.
func WithNonce(p Prompt, nonce string) Prompt {
	if p.System != "" {
		p.System = nonce + " " + p.System
	} else {
		p.Text = nonce + " " + p.Text
	}
	return p
}

// TraceSalt separates the words of a trace's synthesised prompts from other streams.
const TraceSalt = 0x51574B5452414345

// TraceID is trace entry i's prompt id: "trace-" and i as six or more zero-padded digits.
func TraceID(i int) string { return fmt.Sprintf("trace-%06d", i) }

// TraceWords is the length in words of the prompt of a trace entry of inputLength tokens under
// length_unit words_per_token: max(1, round(inputLength × wordsPerToken)).
func TraceWords(inputLength int64, wordsPerToken float64) int {
	return max(1, int(math.Round(float64(inputLength)*wordsPerToken)))
}

// TraceBlockWords is the length in words of one hash block of blockTokens tokens:
// max(1, round(blockTokens × wordsPerToken)).
func TraceBlockWords(blockTokens int64, wordsPerToken float64) int {
	return max(1, int(math.Round(float64(blockTokens)*wordsPerToken)))
}

// AppendTraceWords appends trace entry i's prompt text to b: total words, block j of blockWords
// words drawn from SplitMix64 seeded with hash id j ⊕ TraceSalt while words are left, the words
// past the last block (or of an entry without hash ids) from SplitMix64 seeded with
// i ⊕ TraceSalt ⊕ 1<<62, joined by single spaces. Requests sharing a hash id prefix thus share
// that prefix of words.
func AppendTraceWords(b []byte, i int, hashIDs iter.Seq[int64], total, blockWords int) []byte {
	n := 0
	for h := range hashIDs {
		if n >= total {
			break
		}
		rng := metric.SplitMix64{State: uint64(h) ^ TraceSalt}
		k := 0
		if n == 0 {
			b = append(b, Words[rng.Next()%256]...)
			k, n = 1, 1
		}
		for ; k < blockWords && n < total; k++ {
			b = append(b, SpacedWords[rng.Next()%256]...)
			n++
		}
	}
	rng := metric.SplitMix64{State: uint64(i) ^ TraceSalt ^ 1<<62}
	if n == 0 && total > 0 {
		b = append(b, Words[rng.Next()%256]...)
		n = 1
	}
	for ; n < total; n++ {
		b = append(b, SpacedWords[rng.Next()%256]...)
	}
	return b
}

// Bounds of a synthesised corpus, the runner's and the verifier's.
const (
	// MaxPrompts bounds the prompts of one corpus.
	MaxPrompts = 1_000_000
	// MaxWords bounds a length in words of a generator's declaration (prompt_words, prefix_words,
	// suffix_words).
	MaxWords = 100_000
	// MaxPromptBytes bounds one prompt's text or system message (1 Mi runes of up to 4 bytes); a
	// trace entry of more than MaxPromptBytes / 8 words is refused before it is written.
	MaxPromptBytes = 4 << 20
	// MaxCorpusBytes bounds a committed JSONL corpus file (a file corpus or a conversation
	// corpus); a trace is bounded by trace.MaxBytes.
	MaxCorpusBytes = 256 << 20
)

// CheckSynthetic checks a synthetic corpus's declaration of qualkit.synthetic-words.v1 (its
// generator, a non-negative seed, 1 to MaxPrompts prompts, 1 <= prompt_words min <= max <=
// MaxWords) and returns SyntheticWords' arguments.
func CheckSynthetic(corpus contract.Corpus) (seed uint64, count, minWords, maxWords int, err error) {
	pw := corpus.PromptWords
	switch {
	case corpus.Generator != contract.SyntheticCorpusGenerator:
		return 0, 0, 0, 0, fmt.Errorf("generator %q: want %s", corpus.Generator, contract.SyntheticCorpusGenerator)
	case corpus.Seed == nil || *corpus.Seed < 0:
		return 0, 0, 0, 0, fmt.Errorf("synthetic corpus needs a non-negative seed")
	case corpus.Count < 1 || corpus.Count > MaxPrompts:
		return 0, 0, 0, 0, fmt.Errorf("synthetic count %d: want 1 to %d", corpus.Count, MaxPrompts)
	case pw == nil || pw.Min < 1 || pw.Max < pw.Min || pw.Max > MaxWords:
		return 0, 0, 0, 0, fmt.Errorf("synthetic prompt_words: want 1 <= min <= max <= %d", MaxWords)
	}
	return uint64(*corpus.Seed), int(corpus.Count), int(pw.Min), int(pw.Max), nil
}

// SharedPrefixArgs are SharedPrefix's arguments.
type SharedPrefixArgs struct {
	Seed                          uint64
	Groups, PrefixWords, Suffixes int
	SuffixWords                   [2]int
}

// Prompts are the prompts SharedPrefix yields.
func (a SharedPrefixArgs) Prompts() iter.Seq2[int, Prompt] {
	return SharedPrefix(a.Seed, a.Groups, a.PrefixWords, a.Suffixes, a.SuffixWords)
}

// CheckSharedPrefix checks a shared_prefix corpus's declaration of qualkit.shared-prefix.v1 in
// words (its generator, a non-negative seed, groups × suffixes of 1 to MaxPrompts prompts, 1 to
// MaxWords prefix_words, 1 <= suffix_words min <= max <= MaxWords) and returns SharedPrefix's
// arguments.
func CheckSharedPrefix(corpus contract.Corpus) (SharedPrefixArgs, error) {
	sw := corpus.SuffixWords
	switch {
	case corpus.Generator != contract.SharedPrefixCorpusGenerator:
		return SharedPrefixArgs{}, fmt.Errorf("generator %q: want %s", corpus.Generator, contract.SharedPrefixCorpusGenerator)
	case corpus.Seed == nil || *corpus.Seed < 0:
		return SharedPrefixArgs{}, fmt.Errorf("shared-prefix corpus needs a non-negative seed")
	case corpus.Groups < 1 || corpus.Suffixes < 1 || corpus.Groups*corpus.Suffixes > MaxPrompts:
		return SharedPrefixArgs{}, fmt.Errorf("shared-prefix groups %d × suffixes %d: want 1 to %d prompts", corpus.Groups, corpus.Suffixes, MaxPrompts)
	case corpus.PrefixWords < 1 || corpus.PrefixWords > MaxWords:
		return SharedPrefixArgs{}, fmt.Errorf("shared-prefix prefix_words %d: want 1 to %d", corpus.PrefixWords, MaxWords)
	case sw == nil || sw.Min < 1 || sw.Max < sw.Min || sw.Max > MaxWords:
		return SharedPrefixArgs{}, fmt.Errorf("shared-prefix suffix_words: want 1 <= min <= max <= %d", MaxWords)
	}
	return SharedPrefixArgs{Seed: uint64(*corpus.Seed), Groups: int(corpus.Groups), PrefixWords: int(corpus.PrefixWords), Suffixes: int(corpus.Suffixes), SuffixWords: [2]int{int(sw.Min), int(sw.Max)}}, nil
}
