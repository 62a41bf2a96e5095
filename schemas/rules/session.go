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
	if t := c.Tools; t != nil && t.Results != nil {
		// Each turn may take up to rounds tool rounds, each a request.
		perRow *= 1 + ToolRounds(*t)
	}
	if c.CacheRegime != "" && c.CacheRegime != contract.CacheRegimeNatural {
		r.add(cb+"/cache_regime", "a session corpus takes cache_regime natural (or none): %s would change the history each turn shares", c.CacheRegime)
	}
	return perRow
}

// sessionRecord checks a request record's session block: it sent turn + 1 user messages, one
// assistant message per reply digest and tool_messages tool messages (and a system message or
// not); without tool messages turn k carries the k earlier replies, and a tool round r (which
// answers calls, so carries tool messages) at least turn + r.
func (r *rules) sessionRecord(q *contract.RequestRecordDoc) {
	s := q.Session
	if s == nil {
		return
	}
	replies := int64(len(s.ReplyDigests))
	switch {
	case s.ToolMessages == 0 && s.Round > 0:
		r.add("/session/tool_messages", "tool round %d carries no tool message: a round answers the calls of the request before it", s.Round)
	case s.ToolMessages == 0 && replies != s.Turn:
		r.add("/session/reply_digests", "turn %d carries %d earlier replies, want %d", s.Turn, replies, s.Turn)
	case replies < s.Turn+s.Round:
		r.add("/session/reply_digests", "turn %d round %d carries %d earlier replies, want at least %d", s.Turn, s.Round, replies, s.Turn+s.Round)
	}
	if m, want := s.HistoryMessages, s.Turn+1+replies+s.ToolMessages; m != want && m != want+1 {
		r.add("/session/history_messages", "turn %d sends %d messages, want %d (or %d with a system message): %d user, %d assistant and %d tool messages", s.Turn, m, want, want+1, s.Turn+1, replies, s.ToolMessages)
	}
	if s.Turn > 0 && s.ThinkMs < 0 {
		r.add("/session/think_ms", "negative think time")
	}
}

// toolResults refuses tool results outside a multi-turn session case (only a session has a next
// request to carry them) and rounds without results.
func (r *rules) toolResults(cb string, c contract.Case) {
	t := c.Tools
	if t == nil {
		return
	}
	if t.Results != nil && !c.RunsSessions() {
		r.add(cb+"/tools/results", "tool results answer the calls of a multi-turn session's turn: the case has no conversation corpus")
	}
	if t.Rounds > 0 && t.Results == nil {
		r.add(cb+"/tools/rounds", "rounds bounds the tool rounds the client answers with results: declare results")
	}
}

// DefaultToolRounds is the bound on a turn's tool rounds when a session case's tools declare
// results without rounds.
const DefaultToolRounds = 4

// ToolRounds is the most tool rounds one turn of a session case with tools t may send: t.rounds,
// DefaultToolRounds when absent, 0 without results (the client answers no call).
func ToolRounds(t contract.Tools) int64 {
	switch {
	case t.Results == nil:
		return 0
	case t.Rounds > 0:
		return t.Rounds
	}
	return DefaultToolRounds
}

// minMax refuses a range whose min is greater than its max (at the range's /min).
func (r *rules) minMax(at string, lo, hi int64) {
	if lo > hi {
		r.add(at+"/min", "min %d is greater than max %d", lo, hi)
	}
}
