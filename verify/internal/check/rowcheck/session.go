package rowcheck

import (
	"sort"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Session rows (docs/caching.md "Conversations"). The per-turn and per-session metrics
// (ttft_by_turn.v1, session_duration.v1, session_tokens.v1) are recomputed with every other row
// metric from the records' session blocks (package metric, session.go); what is checked here is
// that the records tell one consistent story of each session:
//
//   - a session's measured turns are 0, 1, ..., k with no gap or repeat, each followed by its
//     tool rounds 1, 2, ... (docs/caching.md "Tool rounds"), and only its last request may have
//     failed (a failed request ends its session);
//   - the n-th request of a session re-sent the replies of the n earlier ones: its reply_digests
//     are their output digests, in order;
//   - its history grows: a new turn sends the previous request's history_messages + 2 (its reply
//     and the new user message) and the same tool_messages, a tool round + 1 + the previous
//     request's calls (its reply and one tool message per call), history_chars strictly
//     increasing into a new turn; a round sends the previous request's history_chars plus its
//     calls' declared results (tools.results) and its reply's text: exactly that when the reply
//     is empty (its output digest is the empty text's), at least that otherwise;
//   - every round of a turn carries the turn's think_ms (the corpus's: rowcheck.SessionCorpus);
//   - turn j was scheduled after the last reply of turn j-1 ended plus its declared think time;
//   - a tool round r is justified by the request before it: a success of the same turn, round
//     r - 1, whose tool_calls all name functions of the case's tools.results; r is at most the
//     case's rounds bound, and it was scheduled after that request closed. Conversely such a
//     success below the bound is followed by a round (not by the next turn, nor by nothing) in a
//     row that did not end early;
//   - in an open-loop row, session i's turn 0 is scheduled on the declared arrival process
//     (metric.Arrivals of the workload's seed, the row's concurrency and repetition), session i
//     being the corpus_index of its records.
//
// A finding is ErrRowMismatch (the records disagree with each other) or ErrLoadNotReached (the
// sessions did not arrive as declared).

// Sessions checks a session row's records and reports whether the row is one (the caller
// then skips the request-level open-loop schedule check, which sessions replace).
func Sessions(c *finding.Collector, row contract.Row, wc *contract.Case, seed int64, recs []*record.Record) bool {
	by := map[string][]*record.Record{}
	var order []string
	for _, r := range recs {
		if r.Warmup || r.Session == nil {
			continue
		}
		if by[r.Session.ID] == nil {
			order = append(order, r.Session.ID)
		}
		by[r.Session.ID] = append(by[r.Session.ID], r)
	}
	file := row.Records.Path
	if wc != nil {
		// The workload decides what the row is: session blocks in the records of a case without a
		// conversation corpus (or none in one with) do not change which checks the row gets.
		declared := wc.RunsSessions()
		switch {
		case !declared && len(order) > 0:
			c.Add(file, "", reason.ErrRowMismatch, "row c%d-r%d: the measured records of %d sessions carry session blocks, but case %s declares no conversation corpus", row.Concurrency, row.Repetition, len(order), wc.ID)
			return false
		case declared && len(order) == 0 && row.Requests > 0:
			c.Add(file, "", reason.ErrRowMismatch, "row c%d-r%d of session case %s: no measured record carries a session block", row.Concurrency, row.Repetition, wc.ID)
			return true
		}
	}
	if len(order) == 0 {
		return false
	}
	firsts := map[int64]*record.Record{}
	owner := map[int64]string{} // corpus_index -> the session that holds it
	for _, id := range order {
		rs := by[id]
		sort.SliceStable(rs, func(a, b int) bool {
			sa, sb := rs[a].Session, rs[b].Session
			return sa.Turn < sb.Turn || sa.Turn == sb.Turn && sa.Round < sb.Round
		})
		if !sessionIdentity(c, file, row, wc, id, rs, owner) {
			continue
		}
		sessionRounds(c, file, row, wc, id, rs)
		if len(rs) > 0 && rs[0].Session.Turn == 0 && rs[0].Session.Round == 0 {
			firsts[rs[0].SessionIndex] = rs[0]
		}
	}
	if wc == nil || wc.Rate == nil || row.Loop != contract.RowLoopOpen {
		return true
	}
	maxI := int64(-1)
	for i := range firsts {
		maxI = max(maxI, i)
	}
	if maxI < 0 || maxI >= 1<<24 {
		return true
	}
	offs := metric.Arrivals(wc.Rate, int(maxI)+1, seed, row.Concurrency, row.Repetition)
	lo := int64(-1) // the first session due at its arrival (no think time before turn 0)
	for i, r := range firsts {
		if r.Session.ThinkMs == 0 && (lo < 0 || i < lo) {
			lo = i
		}
	}
	if lo < 0 {
		return true
	}
	t0 := firsts[lo].Sched - offs[lo]
	idx := make([]int64, 0, len(firsts))
	for i := range firsts {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(a, b int) bool { return idx[a] < idx[b] })
	for _, i := range idx {
		r := firsts[i]
		if r.Session.ThinkMs > 0 {
			continue // turn 0 then waits its think time after the arrival
		}
		if d := r.Sched - (t0 + offs[i]); d < -scheduleToleranceNs || d > scheduleToleranceNs {
			c.Add(file, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrLoadNotReached, "open-loop session row c%d-r%d: session %d (%s) starts at %d ns, the %s schedule of seed %d puts it at %d ns (%+d ns): the row did not run the declared session arrival process", row.Concurrency, row.Repetition, i, r.Session.ID, r.Sched, wc.Rate.Mode, seed, t0+offs[i], d)
			return true
		}
	}
	return true
}

// sessionRounds checks one session's records rs, in (turn, round) order, as one story (see
// Sessions).
func sessionRounds(c *finding.Collector, file string, row contract.Row, wc *contract.Case, id string, rs []*record.Record) {
	bound := maxRound
	var results map[string]string
	if wc != nil {
		bound = 0
		if wc.Tools != nil {
			bound, results = rules.ToolRounds(*wc.Tools), wc.Tools.Results
		}
	}
	// owed reports whether a request's reply must be answered by a tool round.
	owed := func(r *record.Record) bool {
		if r.Failed || len(r.Calls) == 0 || results == nil || r.Session.Round >= bound {
			return false
		}
		for _, call := range r.Calls {
			if _, ok := results[call.Name]; !ok {
				return false
			}
		}
		return true
	}
	at := func(r *record.Record, field string) string { return finding.Pointer(r.Line, "session", field) }
	for j, r := range rs {
		s := r.Session
		if j == 0 {
			if s.Turn != 0 || s.Round != 0 {
				c.Add(file, at(r, "turn"), reason.ErrRowMismatch, "session %s starts at turn %d round %d: a session's turns are 0, 1, ... without gap or repeat, each from round 0", id, s.Turn, s.Round)
				return
			}
			continue
		}
		prev := rs[j-1]
		ps := prev.Session
		round := s.Round > 0
		switch {
		case round && (s.Turn != ps.Turn || s.Round != ps.Round+1):
			c.Add(file, at(r, "round"), reason.ErrRowMismatch, "session %s: turn %d round %d follows turn %d round %d: a turn's tool rounds are 1, 2, ... without gap or repeat", id, s.Turn, s.Round, ps.Turn, ps.Round)
			return
		case !round && s.Turn != ps.Turn+1:
			c.Add(file, at(r, "turn"), reason.ErrRowMismatch, "session %s: turn %d where turn %d belongs: a session's turns are 0, 1, ... without gap or repeat", id, s.Turn, ps.Turn+1)
			return
		case prev.Failed:
			c.Add(file, at(r, "turn"), reason.ErrRowMismatch, "session %s: turn %d round %d was sent after turn %d round %d failed: a failed turn ends its session, a failed round too", id, s.Turn, s.Round, ps.Turn, ps.Round)
			return
		}
		if int64(len(s.ReplyDigests)) != int64(j) {
			c.Add(file, at(r, "reply_digests"), reason.ErrRowMismatch, "session %s turn %d round %d re-sent %d replies, and %d requests of the session came before it", id, s.Turn, s.Round, len(s.ReplyDigests), j)
		}
		for k, d := range s.ReplyDigests {
			if k < j && d != rs[k].Output {
				c.Add(file, finding.Pointer(r.Line, "session", "reply_digests", k), reason.ErrRowMismatch, "session %s turn %d round %d re-sent reply %s as the reply of turn %d round %d, whose output digest is %s", id, s.Turn, s.Round, d, rs[k].Session.Turn, rs[k].Session.Round, rs[k].Output)
				break
			}
		}
		if round {
			calls := int64(len(prev.Calls))
			switch {
			case s.Round > bound:
				c.Add(file, at(r, "round"), reason.ErrRowMismatch, "session %s turn %d: tool round %d, the case bounds a turn's tool rounds at %d", id, s.Turn, s.Round, bound)
			case !owed(prev):
				c.Add(file, at(r, "round"), reason.ErrRowMismatch, "session %s turn %d: tool round %d follows a reply that called %d tools, not only functions of the case's tools.results: a round answers the calls of the request before it", id, s.Turn, s.Round, calls)
			}
			if s.HistoryMessages != ps.HistoryMessages+1+calls {
				c.Add(file, at(r, "history_messages"), reason.ErrRowMismatch, "session %s turn %d round %d sent %d messages: want %d, the previous request's %d, its reply and one tool message for each of its %d calls", id, s.Turn, s.Round, s.HistoryMessages, ps.HistoryMessages+1+calls, ps.HistoryMessages, calls)
			}
			if s.ToolMessages != ps.ToolMessages+calls {
				c.Add(file, at(r, "tool_messages"), reason.ErrRowMismatch, "session %s turn %d round %d carried %d tool messages: want %d, the previous request's %d and one for each of its %d calls", id, s.Turn, s.Round, s.ToolMessages, ps.ToolMessages+calls, ps.ToolMessages, calls)
			}
			if s.ThinkMs != ps.ThinkMs {
				c.Add(file, at(r, "think_ms"), reason.ErrRowMismatch, "session %s turn %d round %d records think time %g ms, round %d of the turn %g ms: every round of a turn carries the turn's think time", id, s.Turn, s.Round, s.ThinkMs, ps.Round, ps.ThinkMs)
			}
			switch want, exact := roundChars(prev, results); {
			case exact && s.HistoryChars != want:
				c.Add(file, at(r, "history_chars"), reason.ErrRowMismatch, "session %s turn %d round %d sent %d characters of history: want %d, the request before it %d, its empty reply and the results of its %d calls", id, s.Turn, s.Round, s.HistoryChars, want, ps.HistoryChars, calls)
			case s.HistoryChars < want:
				c.Add(file, at(r, "history_chars"), reason.ErrRowMismatch, "session %s turn %d round %d sent %d characters of history: the request before it sent %d and the results of its %d calls have %d more", id, s.Turn, s.Round, s.HistoryChars, ps.HistoryChars, calls, want-ps.HistoryChars)
			}
			if done := prev.Close; prev.HasClose && r.Sched < done-scheduleToleranceNs {
				c.Add(file, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrRowMismatch, "session %s turn %d round %d is scheduled at %d ns, before the request it answers closed (%d ns)", id, s.Turn, s.Round, r.Sched, done)
			}
			continue
		}
		if owed(prev) && row.Ended == nil {
			c.Add(file, at(r, "turn"), reason.ErrRowMismatch, "session %s: turn %d follows turn %d round %d, whose reply called only functions of the case's tools.results below the bound of %d rounds: a tool round was owed", id, s.Turn, ps.Turn, ps.Round, bound)
		}
		if s.HistoryMessages != ps.HistoryMessages+2 {
			c.Add(file, at(r, "history_messages"), reason.ErrRowMismatch, "session %s turn %d sent %d messages: want %d, the previous request's %d, its reply and this turn's user message", id, s.Turn, s.HistoryMessages, ps.HistoryMessages+2, ps.HistoryMessages)
		}
		if s.ToolMessages != ps.ToolMessages {
			c.Add(file, at(r, "tool_messages"), reason.ErrRowMismatch, "session %s turn %d carried %d tool messages, the request before it %d: a new turn adds none", id, s.Turn, s.ToolMessages, ps.ToolMessages)
		}
		if s.HistoryChars <= ps.HistoryChars {
			c.Add(file, at(r, "history_chars"), reason.ErrRowMismatch, "session %s turn %d sent %d characters of history, turn %d round %d sent %d: a history only grows", id, s.Turn, s.HistoryChars, ps.Turn, ps.Round, ps.HistoryChars)
		}
		if ready := prev.End + int64(s.ThinkMs*1e6); prev.HasEnd && r.Sched < ready-scheduleToleranceNs {
			c.Add(file, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrRowMismatch, "session %s turn %d is scheduled at %d ns, before turn %d's reply ended (%d ns) plus its think time %g ms", id, s.Turn, r.Sched, ps.Turn, prev.End, s.ThinkMs)
		}
	}
	if last := rs[len(rs)-1]; owed(last) && row.Ended == nil {
		c.Add(file, at(last, "turn"), reason.ErrRowMismatch, "session %s ends with turn %d round %d, whose reply called only functions of the case's tools.results below the bound of %d rounds: a tool round was owed", id, last.Session.Turn, last.Session.Round, bound)
	}
}

// sessionIdentity checks where a session's records place it: the runner sends every turn of
// session i (the corpus's i-th) as prompt_id = the session's id, corpus_index i, cycle 0 (a
// session row runs each session once), so every turn of one session names the same corpus_index,
// no two sessions share one, and it is below the corpus's declared count where the workload
// says it (a synthetic corpus). It reports whether the session's records agree.
func sessionIdentity(c *finding.Collector, file string, row contract.Row, wc *contract.Case, id string, rs []*record.Record, owner map[int64]string) bool {
	i := rs[0].SessionIndex
	for _, r := range rs {
		switch {
		case r.PromptID != id:
			c.Add(file, finding.Pointer(r.Line, "prompt_id"), reason.ErrRowMismatch, "session %s turn %d asks prompt %s: every turn of a session asks the session's id", id, r.Session.Turn, r.PromptID)
			return false
		case r.HasCorpus && r.Cycle != 0:
			c.Add(file, finding.Pointer(r.Line, "cycle"), reason.ErrRowMismatch, "session %s turn %d is in cycle %d: a session row runs each session once (cycle 0)", id, r.Session.Turn, r.Cycle)
			return false
		case r.SessionIndex != i:
			c.Add(file, finding.Pointer(r.Line, "corpus_index"), reason.ErrRowMismatch, "session %s turn %d is corpus_index %d, its turn %d is %d: a session is one entry of the corpus", id, r.Session.Turn, r.SessionIndex, rs[0].Session.Turn, i)
			return false
		}
	}
	if other, ok := owner[i]; ok {
		c.Add(file, finding.Pointer(rs[0].Line, "corpus_index"), reason.ErrRowMismatch, "row c%d-r%d: sessions %s and %s are both corpus_index %d", row.Concurrency, row.Repetition, other, id, i)
		return false
	}
	owner[i] = id
	if wc != nil && wc.Corpus != nil && wc.Corpus.Source == contract.CorpusSourceSyntheticConversations && (i < 0 || i >= wc.Corpus.Count) {
		c.Add(file, finding.Pointer(rs[0].Line, "corpus_index"), reason.ErrRowMismatch, "session %s is corpus_index %d: the case's synthetic corpus has %d sessions", id, i, wc.Corpus.Count)
		return false
	}
	return true
}

// maxRound is the contract's most tool rounds of a turn (a request record's session.round), the
// bound of a row checked without its workload's case.
var maxRound = schemas.MustBoundsOf(contract.RequestRecord).IntLimit("session.round", "maximum")

// emptyOutput is the output digest of an empty reply (a reply that only calls tools).
var emptyOutput = evidence.DigestOf(nil)

// roundChars is the least history a tool round answering prev sends, in code points: prev's,
// its reply's text and one tool message per call holding its function's declared result
// (tools.results). It is exact when prev's reply is empty (its output digest is the empty
// text's); otherwise the reply's length is unknown (the evidence keeps it by digest only).
// A call without a declared result adds nothing (the round is then refused as not owed).
func roundChars(prev *record.Record, results map[string]string) (chars int64, exact bool) {
	chars = prev.Session.HistoryChars
	for _, call := range prev.Calls {
		chars += int64(utf8.RuneCountInString(results[call.Name]))
	}
	return chars, prev.Output == emptyOutput
}
