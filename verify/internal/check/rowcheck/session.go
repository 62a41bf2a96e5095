package rowcheck

import (
	"sort"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Session rows (docs/caching.md "Conversations"). The per-turn and per-session metrics
// (ttft_by_turn.v1, session_duration.v1, session_tokens.v1) are recomputed with every other row
// metric from the records' session blocks (package metric, session.go); what is checked here is
// that the records tell one consistent story of each session:
//
//   - a session's measured turns are 0, 1, ..., k with no gap or repeat, and only its last turn
//     may have failed (a failed turn ends its session);
//   - turn j re-sent the replies of turns 0..j-1: its reply_digests are their output digests;
//   - its history grows: history_messages = turn 0's + 2j, history_chars strictly increasing;
//   - turn j was scheduled after turn j-1's last content event plus its declared think time;
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
		declared := wc.Corpus != nil && (wc.Corpus.Source == contract.CorpusSourceConversations || wc.Corpus.Source == contract.CorpusSourceSyntheticConversations)
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
		sort.SliceStable(rs, func(a, b int) bool { return rs[a].Session.Turn < rs[b].Session.Turn })
		if !sessionIdentity(c, file, row, wc, id, rs, owner) {
			continue
		}
		for j, r := range rs {
			s := r.Session
			if s.Turn != int64(j) {
				c.Add(file, finding.Pointer(r.Line, "session", "turn"), reason.ErrRowMismatch, "session %s: turn %d where turn %d belongs: a session's turns are 0, 1, ... without gap or repeat", id, s.Turn, j)
				break
			}
			if j == 0 {
				firsts[r.SessionIndex] = r
				continue
			}
			prev := rs[j-1]
			if prev.Failed {
				c.Add(file, finding.Pointer(r.Line, "session", "turn"), reason.ErrRowMismatch, "session %s: turn %d was sent after turn %d failed: a failed turn ends its session", id, j, j-1)
				break
			}
			for k, d := range s.ReplyDigests {
				if k < j && d != rs[k].Output {
					c.Add(file, finding.Pointer(r.Line, "session", "reply_digests", k), reason.ErrRowMismatch, "session %s turn %d re-sent reply %s as turn %d's, whose output digest is %s", id, j, d, k, rs[k].Output)
					break
				}
			}
			if s.HistoryMessages != rs[0].Session.HistoryMessages+2*int64(j) {
				c.Add(file, finding.Pointer(r.Line, "session", "history_messages"), reason.ErrRowMismatch, "session %s turn %d sent %d messages, turn 0 sent %d: want %d", id, j, s.HistoryMessages, rs[0].Session.HistoryMessages, rs[0].Session.HistoryMessages+2*int64(j))
			}
			if s.HistoryChars <= prev.Session.HistoryChars {
				c.Add(file, finding.Pointer(r.Line, "session", "history_chars"), reason.ErrRowMismatch, "session %s turn %d sent %d characters of history, turn %d sent %d: a history only grows", id, j, s.HistoryChars, j-1, prev.Session.HistoryChars)
			}
			if ready := prev.End + int64(s.ThinkMs*1e6); prev.HasEnd && r.Sched < ready-scheduleToleranceNs {
				c.Add(file, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrRowMismatch, "session %s turn %d is scheduled at %d ns, before turn %d's reply ended (%d ns) plus its think time %g ms", id, j, r.Sched, j-1, prev.End, s.ThinkMs)
			}
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
