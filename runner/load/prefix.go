package load

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/synth"
)

// Shared-prefix workloads (docs/caching.md "Shared prefixes"): the anchors are vLLM's
// prefix_repetition dataset and GuideLLM's prefix_tokens/prefix_count. Lengths are in words of
// the synthetic vocabulary unless the case binds a tokenizer and declares prefix_tokens and
// suffix_tokens (SharedPrefixTokens): qualsim counts one token per word; a real engine's
// tokenizer makes each of these short English words one or two tokens, so a word count
// approximates a token count from below.

// resolveSharedPrefix resolves a shared_prefix corpus (see Resolve).
func resolveSharedPrefix(corpus contract.Corpus) ([]Prompt, error) {
	a, err := synth.CheckSharedPrefix(corpus)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorpus, err)
	}
	return SharedPrefix(a.Seed, a.Groups, a.PrefixWords, a.Suffixes, a.SuffixWords), nil
}

// SharedPrefix is the generator qualkit.shared-prefix.v1 (synth.SharedPrefix), every prompt
// held.
func SharedPrefix(seed uint64, groups, prefixWords, suffixes int, suffixWords [2]int) []Prompt {
	out := make([]Prompt, 0, groups*suffixes)
	for _, p := range synth.SharedPrefix(seed, groups, prefixWords, suffixes, suffixWords) {
		out = append(out, Prompt{ID: p.ID, Text: p.Text})
	}
	return out
}

// SharedPrefixTokens is qualkit.shared-prefix.v1 with its lengths in tokens (prefix_tokens and
// suffix_tokens), as tc counts them: one SplitMix64 stream is seeded with seed; for each group in
// turn it synthesises the prefix, exactly prefixTokens tokens of bare text (tc.TextTokens), by
// the exact-length synthesis of SyntheticTokens; then for each suffix it draws
// n = suffixTokens[0] + (next mod (suffixTokens[1] - suffixTokens[0] + 1)) and continues the
// same synthesis after the prefix and a space until the prompt (a user message rendered with
// template) counts exactly P + n, P the prefix's own prompt count. Ids are SharedPrefix's. A
// length the tokenizer cannot reach exactly is an error naming the prompt.
func SharedPrefixTokens(seed uint64, groups, prefixTokens, suffixes int, suffixTokens [2]int, tc TokenCounter, template contract.TokenizerTemplate) ([]Prompt, error) {
	if groups < 1 || suffixes < 1 || groups*suffixes > MaxCorpusPrompts || prefixTokens < 1 || suffixTokens[0] < 1 || suffixTokens[1] < suffixTokens[0] || tc == nil {
		return nil, fmt.Errorf("%w: shared-prefix tokens: want groups, suffixes, prefix_tokens and 1 <= suffix_tokens min <= max, and a tokenizer", ErrCorpus)
	}
	prompt := func(text string) (int64, error) {
		return tc.PromptTokens(template, []string{"user"}, []string{text})
	}
	rng := metric.SplitMix64{State: seed}
	out := make([]Prompt, 0, groups*suffixes)
	for g := range groups {
		prefix, err := exactText(&rng, int64(prefixTokens), tc.TextTokens)
		if err != nil {
			return nil, fmt.Errorf("%w: shared-prefix group %d prefix (%d tokens): %v", ErrCorpus, g, prefixTokens, err)
		}
		base, err := prompt(prefix)
		if err != nil {
			return nil, fmt.Errorf("%w: shared-prefix group %d: %v", ErrCorpus, g, err)
		}
		for s := range suffixes {
			n := int64(suffixTokens[0] + int(rng.Next()%uint64(suffixTokens[1]-suffixTokens[0]+1)))
			suffix, err := exactText(&rng, base+n, func(t string) (int64, error) { return prompt(prefix + " " + t) })
			if err != nil {
				return nil, fmt.Errorf("%w: shared-prefix prompt g%d s%d (%d + %d tokens): %v", ErrCorpus, g, s, base, n, err)
			}
			text := prefix + " " + suffix
			if len(text) > MaxPromptBytes {
				return nil, fmt.Errorf("%w: shared-prefix prompt g%d s%d: %d bytes exceed the prompt bound of %d bytes", ErrCorpus, g, s, len(text), MaxPromptBytes)
			}
			out = append(out, Prompt{ID: synth.SharedPrefixID(g, s), Text: text})
		}
	}
	return out, nil
}
