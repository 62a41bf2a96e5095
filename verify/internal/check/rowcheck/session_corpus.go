package rowcheck

import (
	"bytes"
	"cmp"
	"fmt"
	"iter"
	"maps"
	"slices"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// A session row's corpus, written again (docs/verification.md, the body check's session corpora):
// a conversations corpus from its bound file, a synthetic one by qualkit.synthetic-conversations.v1
// from the workload's seed (synth.SyntheticConversations, which the runner's generator equals).
// From it the verifier recomputes what the runner took from the corpus:
//
//   - the row's prompt_set_sha256: every turn in declared order, each under its session's id and
//     system message (corpus_mismatch);
//   - a session's id at its corpus_index (row_mismatch);
//   - each turn's think_ms, the corpus's (row_mismatch);
//   - each turn's history_chars (the code points of every message content sent): turn 0's is the
//     system message and the turn's text, exactly; a later turn's also holds the server's earlier
//     replies, whose lengths the evidence does not keep (only their digests), so it is bounded from
//     below: at least the system message and the texts of turns 0..k, and at least the previous
//     turn's history plus this turn's text (row_mismatch).
//
// The request bodies of session turns still rest on the records: they hold the replies.

// sessionShape is what the checks read of one session: its id, its system message's code points,
// and per turn the text's code points and the think time.
type sessionShape struct {
	id          string
	systemChars int64
	turnChars   []int64
	thinkMs     []float64
}

// SessionCorpus is a session case's corpus as the verifier wrote it again: its prompt set digest
// and the shapes of the sessions the case's records name (by corpus index).
type SessionCorpus struct {
	PromptSet string
	sessions  map[int64]*sessionShape
}

// SessionCorpusOf writes a session case's corpus again, keeping the shapes of the sessions its rows'
// records name; nil and why (a note) when it cannot. A conversations corpus file the receipt does not
// bind, or binds with another digest than the workload pins, is corpus_mismatch: the runner binds it
// as a corpus artifact (since it began to, and every evidence of a session case the verifier accepts
// was written since), so leaving it out would skip these checks.
func SessionCorpusOf(s *load.Snapshot, c *finding.Collector, cr *contract.CaseResultDoc, wc *contract.Case) (*SessionCorpus, string) {
	if !wc.RunsSessions() {
		return nil, ""
	}
	want := map[int64]bool{}
	for _, row := range cr.Rows {
		f := s.Files[row.Records.Path]
		if f == nil || f.Records == nil {
			continue
		}
		for i := range f.Records.Records {
			if r := &f.Records.Records[i]; r.Session != nil && !r.Warmup && r.CaseID == cr.CaseID {
				want[r.SessionIndex] = true
			}
		}
	}
	var sessions iter.Seq2[int, synth.Conversation]
	cp := wc.Corpus
	if cp.Source == contract.CorpusSourceConversations {
		f := s.Files[cp.Path]
		switch {
		case f == nil:
			c.Add(s.Receipt.Path, "/artifacts", reason.ErrCorpusMismatch, "the workload's conversation corpus %s is not bound by the receipt: the runner binds every corpus a serving case reads", cp.Path)
			return nil, "conversation corpus " + cp.Path + " is not bound by the receipt: the session turns were not checked against it"
		case !f.Present || f.Raw == nil:
			return nil, "conversation corpus " + cp.Path + " is not available: the session turns were not checked against it"
		case f.Digest != cp.Digest:
			c.Add(s.Receipt.Path, "/artifacts", reason.ErrCorpusMismatch, "the receipt binds conversation corpus %s with digest %s, the workload declares %s", cp.Path, f.Digest, cp.Digest)
			return nil, "conversation corpus " + cp.Path + " does not match the workload's digest: the session turns were not checked against it"
		}
		var err error
		if sessions, err = ParseConversations(f.Raw, cp.Path); err != nil {
			return nil, err.Error() + ": the session turns were not checked against it"
		}
	} else {
		a, err := synth.CheckSyntheticConversations(*cp)
		if err != nil {
			return nil, "synthetic conversations: " + err.Error() + ": the session turns were not checked against the generator"
		}
		sessions = a.Sessions()
	}
	sc := &SessionCorpus{sessions: map[int64]*sessionShape{}}
	ps := evidence.NewPromptSetHash()
	for i, sess := range sessions {
		sh := &sessionShape{id: sess.ID, systemChars: int64(utf8.RuneCountInString(sess.System))}
		for _, t := range sess.Turns {
			if err := ps.Add(contract.Prompt{ID: sess.ID, Text: t.Text, System: sess.System}); err != nil {
				return nil, fmt.Sprintf("session %s: prompt set: %v", sess.ID, err)
			}
			if want[int64(i)] {
				sh.turnChars = append(sh.turnChars, int64(utf8.RuneCountInString(t.Text)))
				sh.thinkMs = append(sh.thinkMs, t.ThinkMs)
			}
		}
		if want[int64(i)] {
			sc.sessions[int64(i)] = sh
		}
	}
	sc.PromptSet = ps.Sum()
	return sc, ""
}

// ParseConversations reads a conversation corpus as the runner does: one
// qualkit.conversation-session.v1 object per line (checked against the contract, strict JSON), no
// blank line but after the last, at most synth.MaxSessions lines. Sessions are yielded one at a
// time; the error is the first line that is not one (name names the file).
func ParseConversations(data []byte, name string) (iter.Seq2[int, synth.Conversation], error) {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > synth.MaxSessions {
		return nil, fmt.Errorf("conversation corpus %s has more than %d sessions", name, synth.MaxSessions)
	}
	out := make([]synth.Conversation, 0, len(lines))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("conversation corpus %s line %d: blank line", name, i+1)
		}
		if err := schemas.CheckAs(line, fmt.Sprintf("%s line %d", name, i+1), contract.ConversationSession); err != nil {
			return nil, fmt.Errorf("conversation corpus %w", err)
		}
		var s contract.ConversationSessionDoc
		if err := jsonstrict.DecodeInto(line, &s); err != nil {
			return nil, fmt.Errorf("conversation corpus %s line %d: %v", name, i+1, err)
		}
		cv := synth.Conversation{ID: s.ID, System: s.System, Turns: make([]synth.ConversationTurn, len(s.Turns))}
		for j, t := range s.Turns {
			cv.Turns[j] = synth.ConversationTurn{Text: t.Text, ThinkMs: t.ThinkMs}
		}
		out = append(out, cv)
	}
	return func(yield func(int, synth.Conversation) bool) {
		for i, cv := range out {
			if !yield(i, cv) {
				return
			}
		}
	}, nil
}

// Check checks a session row against its corpus: its prompt set (corpus_mismatch), and for every
// measured session turn its session's id at its corpus_index, its think_ms and its history_chars
// (row_mismatch; see above), and a corpus_index that names no session of the corpus (row_mismatch).
// A turn's think time and exact turn-0 history are those of its first request (the least history
// among the turn's records: the turn as the user sent it).
func (sc *SessionCorpus) Check(c *finding.Collector, path string, j int, row contract.Row, recs []*record.Record) {
	if sc == nil {
		return
	}
	if row.PromptSetSHA256 != sc.PromptSet {
		c.Add(path, finding.Pointer("rows", j, "prompt_set_sha256"), reason.ErrCorpusMismatch, "prompt set %s, the session corpus hashes to %s", row.PromptSetSHA256, sc.PromptSet)
	}
	type turnKey struct{ index, turn int64 }
	first := map[turnKey]*record.Record{} // the least history of each turn
	file := row.Records.Path
	for _, r := range recs {
		if r.Warmup || r.Session == nil {
			continue
		}
		sh := sc.sessions[r.SessionIndex]
		if sh == nil {
			c.Add(file, finding.Pointer(r.Line, "corpus_index"), reason.ErrRowMismatch, "session %s is corpus_index %d: the corpus has no session there", r.Session.ID, r.SessionIndex)
			continue
		}
		t := r.Session.Turn
		switch {
		case r.Session.ID != sh.id:
			c.Add(file, finding.Pointer(r.Line, "session", "id"), reason.ErrRowMismatch, "session %s is corpus_index %d, which is session %s of the corpus", r.Session.ID, r.SessionIndex, sh.id)
			continue
		case t < 0 || t >= int64(len(sh.turnChars)):
			c.Add(file, finding.Pointer(r.Line, "session", "turn"), reason.ErrRowMismatch, "session %s turn %d: the corpus's session has %d turns", r.Session.ID, t, len(sh.turnChars))
			continue
		}
		lower := sh.systemChars
		for k := int64(0); k <= t; k++ {
			lower += sh.turnChars[k]
		}
		if r.Session.HistoryChars < lower {
			c.Add(file, finding.Pointer(r.Line, "session", "history_chars"), reason.ErrRowMismatch, "session %s turn %d sent %d characters of history: its system message and the corpus's texts of turns 0 to %d alone have %d", r.Session.ID, t, r.Session.HistoryChars, t, lower)
		}
		k := turnKey{r.SessionIndex, t}
		if f := first[k]; f == nil || r.Session.HistoryChars < f.Session.HistoryChars {
			first[k] = r
		}
	}
	keys := slices.SortedFunc(maps.Keys(first), func(a, b turnKey) int {
		return cmp.Or(cmp.Compare(a.index, b.index), cmp.Compare(a.turn, b.turn))
	})
	for _, k := range keys {
		r, sh := first[k], sc.sessions[k.index]
		if want := sh.thinkMs[k.turn]; r.Session.ThinkMs != want {
			c.Add(file, finding.Pointer(r.Line, "session", "think_ms"), reason.ErrRowMismatch, "session %s turn %d records think time %g ms, the corpus declares %g ms", r.Session.ID, k.turn, r.Session.ThinkMs, want)
		}
		if k.turn == 0 {
			if want := sh.systemChars + sh.turnChars[0]; r.Session.HistoryChars != want {
				c.Add(file, finding.Pointer(r.Line, "session", "history_chars"), reason.ErrRowMismatch, "session %s turn 0 sent %d characters of history: its system message and first text have %d", r.Session.ID, r.Session.HistoryChars, want)
			}
			continue
		}
		if p := first[turnKey{k.index, k.turn - 1}]; p != nil && r.Session.HistoryChars < p.Session.HistoryChars+sh.turnChars[k.turn] {
			c.Add(file, finding.Pointer(r.Line, "session", "history_chars"), reason.ErrRowMismatch, "session %s turn %d sent %d characters of history: turn %d sent %d, and this turn's text has %d more", r.Session.ID, k.turn, r.Session.HistoryChars, k.turn-1, p.Session.HistoryChars, sh.turnChars[k.turn])
		}
	}
}
