package rules

import "github.com/qualkit/qualkit/schemas/contract"

// traceCorpus checks a trace corpus's length unit against the case (docs/metrics.md "Trace
// replay"): tokens needs the case's tokenizer to count with and takes no words_per_token; the
// words_per_token approximation needs its words_per_token and is refused where a tokenizer is
// bound (the lengths are then in tokens).
func (r *rules) traceCorpus(cb string, c contract.Case) {
	cp := c.Corpus
	if cp == nil || cp.Source != contract.CorpusSourceTrace {
		return
	}
	switch cp.LengthUnit {
	case contract.TraceCorpusLengthUnitTokens:
		if c.Tokenizer == nil {
			r.add(cb+"/corpus/length_unit", "length_unit tokens needs a tokenizer to count with: bind one in the case's tokenizer, or declare words_per_token")
		}
		if cp.WordsPerToken != nil {
			r.add(cb+"/corpus/words_per_token", "words_per_token is the words_per_token unit's approximation: absent with length_unit tokens")
		}
	case contract.TraceCorpusLengthUnitWordsPerToken:
		if cp.WordsPerToken == nil {
			r.add(cb+"/corpus/words_per_token", "length_unit words_per_token needs its words_per_token")
		}
		if c.Tokenizer != nil {
			r.add(cb+"/corpus/length_unit", "the case binds a tokenizer: a trace's lengths are then in tokens (length_unit tokens)")
		}
	}
}

// sharedPrefixTokens checks a shared-prefix corpus's token lengths (docs/caching.md "Shared
// prefixes"): prefix_tokens and suffix_tokens come together, need the case's tokenizer, and the
// suffix range is ordered.
func (r *rules) sharedPrefixTokens(cb string, c contract.Case) {
	cp := c.Corpus
	if cp == nil || cp.Source != contract.CorpusSourceSharedPrefix || (cp.PrefixTokens == nil && cp.SuffixTokens == nil) {
		return
	}
	if (cp.PrefixTokens == nil) != (cp.SuffixTokens == nil) {
		field := "prefix_tokens"
		if cp.SuffixTokens == nil {
			field = "suffix_tokens"
		}
		r.add(cb+"/corpus/"+field, "prefix_tokens and suffix_tokens come together: declare %s too, or neither", field)
	}
	if st := cp.SuffixTokens; st != nil {
		r.minMax(cb+"/corpus/suffix_tokens", st.Min, st.Max)
	}
	if c.Tokenizer == nil {
		r.add(cb+"/corpus/prefix_tokens", "prefix_tokens and suffix_tokens need a tokenizer to count with: bind one in the case's tokenizer")
	}
}
