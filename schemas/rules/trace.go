package rules

import (
	"fmt"
	"math"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/trace"
)

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

// CheckTraceSchedule is the semantic rule of a serving case's bound trace (its entries, read from
// the file the workload binds by digest, which the workload rules alone cannot see): the entries
// it replays (the first requests, or all) must be scheduled, scaled by time_scale, within the
// case's timeout_seconds and within int64 nanoseconds (trace.OffsetNs). A problem names the first
// entry past it. A case without a trace corpus, or without entries, has none.
func CheckTraceSchedule(caseBase string, c contract.Case, entries []trace.Entry) []Problem {
	cp := c.Corpus
	if cp == nil || cp.Source != contract.CorpusSourceTrace || len(entries) == 0 {
		return nil
	}
	scale := 1.0
	if cp.TimeScale != nil {
		scale = *cp.TimeScale
	}
	var r rules
	at := caseBase + "/corpus/time_scale"
	if !(scale > 0) || math.IsInf(scale, 0) {
		r.add(at, "time_scale %g: want a finite number above 0", scale)
		return r.out
	}
	replayed := entries
	if c.Requests != nil && *c.Requests >= 1 && *c.Requests < int64(len(entries)) {
		replayed = entries[:*c.Requests]
	}
	limit := math.Inf(1)
	if c.TimeoutSeconds > 0 {
		limit = float64(c.TimeoutSeconds)
	}
	if k := trace.FirstPast(replayed, scale, limit); k >= 0 {
		why := fmt.Sprintf("past the case's timeout_seconds %d: the replay cannot finish; shorten the trace (requests), lower time_scale or raise timeout_seconds", c.TimeoutSeconds)
		if _, ok := trace.OffsetNs(replayed[k].TimestampMs, replayed[0].TimestampMs, scale); !ok {
			why = "more than int64 nanoseconds can hold (2^62 ns): lower time_scale"
		}
		r.add(at, "trace %s: %v", cp.Path, trace.SpanError(replayed, k, scale, why))
	}
	return r.out
}
