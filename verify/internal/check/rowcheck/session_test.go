package rowcheck

import (
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestSessionToolRounds: a session whose turns answer tool calls with the case's mock results
// (docs/caching.md "Tool rounds") tells one consistent story; each edit that breaks it (a round
// not justified by the request before it, over the bound, scheduled before that request closed,
// a round owed and not sent, a history that does not count the reply and the tool messages) is
// found.
func TestSessionToolRounds(t *testing.T) {
	calls := func(names ...string) []contract.ToolCall {
		var out []contract.ToolCall
		for i, n := range names {
			out = append(out, contract.ToolCall{Index: int64(i), Name: n, Valid: true})
		}
		return out
	}
	// Turn 0 calls get_weather twice in a row (rounds 1 and 2, the bound), turn 1 answers in text.
	session := func() []*record.Record {
		mk := func(line int, turn, round, msgs, tools, chars int64, replies []string, c []contract.ToolCall, out string, sched, end int64) *record.Record {
			return &record.Record{Line: line, Index: int64(line), PromptID: "s", Sched: sched, End: end, Close: end + 5, HasEnd: true, HasClose: true, Output: out, Calls: c,
				Session: &contract.SessionTurn{ID: "s", Turn: turn, Round: round, HistoryMessages: msgs, ToolMessages: tools, HistoryChars: chars, ReplyDigests: replies}}
		}
		return []*record.Record{
			mk(0, 0, 0, 1, 0, 10, []string{}, calls("get_weather"), "d0", 0, 100),
			mk(1, 0, 1, 3, 1, 15, []string{"d0"}, calls("get_weather"), "d1", 110, 200),
			mk(2, 0, 2, 5, 2, 20, []string{"d0", "d1"}, calls("get_weather"), "d2", 210, 300),
			mk(3, 1, 0, 7, 2, 30, []string{"d0", "d1", "d2"}, nil, "d3", 400, 500),
		}
	}
	wc := func() *contract.Case {
		return &contract.Case{ID: "chat", Corpus: &contract.Corpus{Source: contract.CorpusSourceConversations},
			Tools: &contract.Tools{Choice: contract.ToolsChoiceAuto, Results: map[string]string{"get_weather": "sunny"}, Rounds: 2}}
	}
	for _, tc := range []struct {
		name string
		edit func(rs []*record.Record, c *contract.Case) []*record.Record
		want string // "" no finding
	}{
		{"valid", func(rs []*record.Record, _ *contract.Case) []*record.Record { return rs }, ""},
		{"valid, unordered", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			return []*record.Record{rs[2], rs[0], rs[3], rs[1]}
		}, ""},
		{"round after a reply without calls", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[0].Calls = nil
			return rs
		}, "tool round 1 follows a reply that called 0 tools"},
		{"round after a call without a result", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[0].Calls = calls("get_weather", "get_time")
			return rs
		}, "tool round 1 follows a reply that called 2 tools"},
		{"round after a failure", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[0].Failed = true
			return rs
		}, "a failed turn ends its session, a failed round too"},
		{"over the bound", func(rs []*record.Record, c *contract.Case) []*record.Record {
			c.Tools.Rounds = 1
			return rs
		}, "tool round 2, the case bounds a turn's tool rounds at 1"},
		{"no results declared", func(rs []*record.Record, c *contract.Case) []*record.Record {
			c.Tools.Results, c.Tools.Rounds = nil, 0
			return rs
		}, "the case bounds a turn's tool rounds at 0"},
		{"sent before the answered request closed", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[0].Close = 5000
			return rs
		}, "round 1 is scheduled at 110 ns, before the request it answers closed (5000 ns)"},
		{"round gap", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[2].Session.Round = 3
			return rs
		}, "turn 0 round 3 follows turn 0 round 1"},
		{"round owed, next turn sent", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[3].Session.HistoryMessages, rs[3].Session.ToolMessages, rs[3].Session.ReplyDigests = 3, 0, []string{"d0"}
			return []*record.Record{rs[0], rs[3]}
		}, "turn 1 follows turn 0 round 0, whose reply called only functions of the case's tools.results below the bound of 2 rounds: a tool round was owed"},
		{"round owed, session ended", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			return rs[:2]
		}, "ends with turn 0 round 1"},
		{"tool messages", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[2].Session.ToolMessages = 1
			return rs
		}, "carried 1 tool messages: want 2"},
		{"round history", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[1].Session.HistoryMessages = 2
			return rs
		}, "round 1 sent 2 messages: want 3"},
		{"turn history", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[3].Session.HistoryMessages = 9
			return rs
		}, "turn 1 sent 9 messages: want 7"},
		{"reply digest", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[3].Session.ReplyDigests[1] = "dx"
			return rs
		}, "re-sent reply dx as the reply of turn 0 round 1, whose output digest is d1"},
		{"reply count", func(rs []*record.Record, _ *contract.Case) []*record.Record {
			rs[3].Session.ReplyDigests = rs[3].Session.ReplyDigests[:2]
			return rs
		}, "re-sent 2 replies, and 3 requests of the session came before it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: "tolerances"}
			w := wc()
			rs := tc.edit(session(), w)
			row := contract.Row{Concurrency: 1, Loop: contract.RowLoopClosed, Requests: int64(len(rs)), Records: contract.FileRef{Path: "rows.jsonl"}}
			if !Sessions(c, row, w, 7, slices.Clone(rs)) {
				t.Fatal("not judged a session row")
			}
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("findings %v, want one mentioning %q", res.Findings, tc.want)
		})
	}
}
