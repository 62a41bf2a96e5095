package rules

import "github.com/qualkit/qualkit/schemas/contract"

// Rules of the multi-turn session and shared-prefix corpora (docs/caching.md) that a schema
// cannot express.

// sessionCorpus checks a serving case whose corpus is a conversation corpus or a shared-prefix
// generator; it returns the number of requests one row sends (0 when the file decides).
func (r *rules) sessionCorpus(cb string, c contract.Case) (perRow int64) {
	cp := c.Corpus
	rng := func(field string, lo, hi int64) { r.minMax(cb+"/corpus/"+field, lo, hi) }
	switch cp.Source {
	case contract.CorpusSourceSyntheticConversations:
		if t := cp.Turns; t != nil {
			rng("turns", t.Min, t.Max)
			perRow = cp.Count * t.Max
		}
		if w := cp.PromptWords; w != nil {
			rng("prompt_words", w.Min, w.Max)
		}
		if w := cp.ThinkMs; w != nil {
			rng("think_ms", w.Min, w.Max)
		}
	case contract.CorpusSourceConversations:
	case contract.CorpusSourceSharedPrefix:
		if w := cp.SuffixWords; w != nil {
			rng("suffix_words", w.Min, w.Max)
		}
		return cp.Groups * cp.Suffixes
	default:
		return 0
	}
	// A session row runs every session once, each turn after the last reply: no request count,
	// duration or stop rule cuts it, and only the natural regime keeps a session's history
	// shareable (a cold nonce per request would break the history prefix it is made of).
	if c.Requests != nil {
		r.add(cb+"/requests", "a session corpus runs every session once per row: requests does not apply")
	}
	if c.Duration != nil {
		r.add(cb+"/duration", "a session corpus runs every session once per row: duration does not apply")
	}
	if c.Stop != nil {
		r.add(cb+"/stop", "a session corpus runs every session once per row: stop rules do not apply")
	}
	if c.CacheRegime != "" && c.CacheRegime != contract.CacheRegimeNatural {
		r.add(cb+"/cache_regime", "a session corpus takes cache_regime natural (or none): %s would change the history each turn shares", c.CacheRegime)
	}
	return perRow
}

// sessionRecord checks a request record's session block: turn k carries the k earlier replies
// and 2k+1 messages (2k+2 with a system message).
func (r *rules) sessionRecord(q *contract.RequestRecordDoc) {
	s := q.Session
	if s == nil {
		return
	}
	if int64(len(s.ReplyDigests)) != s.Turn {
		r.add("/session/reply_digests", "turn %d carries %d earlier replies, want %d", s.Turn, len(s.ReplyDigests), s.Turn)
	}
	if m := s.HistoryMessages; m != 2*s.Turn+1 && m != 2*s.Turn+2 {
		r.add("/session/history_messages", "turn %d sends %d messages, want %d (or %d with a system message)", s.Turn, m, 2*s.Turn+1, 2*s.Turn+2)
	}
	if s.Turn > 0 && s.ThinkMs < 0 {
		r.add("/session/think_ms", "negative think time")
	}
}

// minMax refuses a range whose min is greater than its max (at the range's /min).
func (r *rules) minMax(at string, lo, hi int64) {
	if lo > hi {
		r.add(at+"/min", "min %d is greater than max %d", lo, hi)
	}
}
