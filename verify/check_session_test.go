package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// sessionRecords builds a consistent session row: two sessions of three turns, each turn
// 10 ms long and scheduled 5 ms after the previous reply ended (think 5 ms).
func sessionRecords() []*record.Record {
	var out []*record.Record
	idx := int64(0)
	for si, id := range []string{"session-a", "session-b"} {
		t := int64(si) * 1_000_000
		var replies []string
		for k := range 3 {
			d := "sha256:" + strings.Repeat(string(rune('a'+si*3+k)), 64)
			think := 5.0
			if k == 0 {
				think = 0
			}
			r := &record.Record{Line: int(idx), Index: idx, PromptID: id, Sched: t, Send: t, HasSend: true, End: t + 10_000_000, HasEnd: true, HasUsage: true, PromptTokens: 10, CompletionTokens: 4,
				Content: []int64{t + 2_000_000}, Output: d, SessionIndex: int64(si),
				Session: &contract.SessionTurn{ID: id, Turn: int64(k), HistoryMessages: int64(1 + 2*k), HistoryChars: int64(20 * (k + 1)), ReplyDigests: append([]string{}, replies...), ThinkMs: think}}
			out = append(out, r)
			replies = append(replies, d)
			t = r.End + 5_000_000
			idx++
		}
	}
	return out
}

// TestCheckSessions: a consistent session row passes; each inconsistency a runner (or an edit)
// could leave is named, with its reason.
func TestCheckSessions(t *testing.T) {
	row := contract.Row{Loop: contract.RowLoopClosed, Concurrency: 2, Records: contract.FileRef{Path: "rows/c0002-r000.jsonl"}}
	for _, tc := range []struct {
		name string
		edit func([]*record.Record)
		want *Reason
		also string
	}{
		{"consistent", func([]*record.Record) {}, nil, ""},
		{"reply not re-sent", func(rs []*record.Record) { rs[2].Session.ReplyDigests[1] = rs[0].Output }, ErrRowMismatch, "re-sent reply"},
		{"history shrank", func(rs []*record.Record) { rs[1].Session.HistoryChars = 10 }, ErrRowMismatch, "a history only grows"},
		{"messages miscounted", func(rs []*record.Record) { rs[4].Session.HistoryMessages = 4 }, ErrRowMismatch, "sent 4 messages"},
		{"think time skipped", func(rs []*record.Record) { rs[1].Sched = rs[0].End + 1_000_000 }, ErrRowMismatch, "plus its think time 5 ms"},
		{"turn missing", func(rs []*record.Record) { rs[4].Session.Turn = 2 }, ErrRowMismatch, "without gap or repeat"},
		{"sent after a failure", func(rs []*record.Record) { rs[0].Failed = true }, ErrRowMismatch, "a failed turn ends its session"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rs := sessionRecords()
			tc.edit(rs)
			c := &finding.Collector{Check: CheckTolerances}
			if !rowcheck.Sessions(c, row, nil, 1, rs) {
				t.Fatal("not recognised as a session row")
			}
			res := c.Result()
			if tc.want == nil {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if errors.Is(f, tc.want) && strings.Contains(f.Error(), tc.also) {
					return
				}
			}
			t.Fatalf("no %s mentioning %q: %v", tc.want.Code(), tc.also, res.Findings)
		})
	}
	if rowcheck.Sessions(&finding.Collector{Check: CheckTolerances}, row, nil, 1, []*record.Record{{Index: 0}}) {
		t.Error("a row without sessions is not a session row")
	}
}

// TestCheckSessionArrivals: an open-loop session row's sessions start on the declared schedule.
func TestCheckSessionArrivals(t *testing.T) {
	rate := &contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: 50}
	wc := &contract.Case{Rate: rate, Corpus: &contract.Corpus{Source: contract.CorpusSourceSyntheticConversations, Count: 2}}
	row := contract.Row{Loop: contract.RowLoopOpen, Concurrency: 2, Repetition: 0}
	offs := metric.Arrivals(rate, 2, 9, 2, 0)
	place := func(rs []*record.Record, start1 int64) {
		shift := start1 - rs[3].Sched
		for _, r := range rs[3:] {
			r.Sched += shift
			r.Send += shift
			r.End += shift
		}
	}
	rs := sessionRecords()
	place(rs, rs[0].Sched+offs[1])
	c := &finding.Collector{Check: CheckTolerances}
	rowcheck.Sessions(c, row, wc, 9, rs)
	if res := c.Result(); len(res.Findings) != 0 {
		t.Fatalf("on schedule: %v", res.Findings)
	}
	rs = sessionRecords()
	place(rs, rs[0].Sched+offs[1]+2_000_000)
	c = &finding.Collector{Check: CheckTolerances}
	rowcheck.Sessions(c, row, wc, 9, rs)
	if res := c.Result(); len(res.Findings) != 1 || !errors.Is(res.Findings[0], ErrLoadNotReached) {
		t.Fatalf("2 ms late: %v", res.Findings)
	}
}

// TestCheckSessionsFollowsTheWorkload: the workload case, not the records, decides whether a row
// is a session row. Session blocks added to the records of a plain case (a re-signed edit that
// would otherwise skip the row's schedule, corpus-order and stage checks) are a finding and the
// row stays a plain one; a session case whose records carry no session block is a finding too.
func TestCheckSessionsFollowsTheWorkload(t *testing.T) {
	row := contract.Row{Loop: contract.RowLoopOpen, Concurrency: 2, Requests: 6, Records: contract.FileRef{Path: "rows/c0002-r000.jsonl"}}
	plain := &contract.Case{ID: "chat", Corpus: &contract.Corpus{Source: contract.CorpusSourceInline}}
	c := &finding.Collector{Check: CheckTolerances}
	if rowcheck.Sessions(c, row, plain, 1, sessionRecords()) {
		t.Error("a plain case's row with session blocks was taken as a session row")
	}
	if res := c.Result(); len(res.Findings) != 1 || !errors.Is(res.Findings[0], ErrRowMismatch) || !strings.Contains(res.Findings[0].Error(), "declares no conversation corpus") {
		t.Errorf("plain case: %v", res.Findings)
	}
	sessions := &contract.Case{ID: "chat-sessions", Corpus: &contract.Corpus{Source: contract.CorpusSourceConversations}}
	c = &finding.Collector{Check: CheckTolerances}
	if !rowcheck.Sessions(c, row, sessions, 1, []*record.Record{{Index: 0}}) {
		t.Error("a session case's row was not taken as a session row")
	}
	if res := c.Result(); len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Error(), "no measured record carries a session block") {
		t.Errorf("session case without session blocks: %v", res.Findings)
	}
	c = &finding.Collector{Check: CheckTolerances}
	if !rowcheck.Sessions(c, row, sessions, 1, sessionRecords()) {
		t.Error("a session case's session row was not taken as one")
	}
	if res := c.Result(); len(res.Findings) != 0 {
		t.Errorf("session case: %v", res.Findings)
	}
}
