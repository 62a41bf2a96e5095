package load

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestSyntheticConversations: the generator is a function of its seed, and every draw lies in
// its declared range.
func TestSyntheticConversations(t *testing.T) {
	a := SyntheticConversations(11, 20, [2]int{2, 5}, [2]int{3, 9}, [2]int{0, 40})
	b := SyntheticConversations(11, 20, [2]int{2, 5}, [2]int{3, 9}, [2]int{0, 40})
	c := SyntheticConversations(12, 20, [2]int{2, 5}, [2]int{3, 9}, [2]int{0, 40})
	same := true
	turnCounts := map[int]bool{}
	for i := range a {
		if a[i].ID != b[i].ID || !slices.Equal(a[i].Turns, b[i].Turns) {
			t.Fatalf("session %d differs between two runs of one seed", i)
		}
		if !slices.Equal(a[i].Turns, c[i].Turns) {
			same = false
		}
		if n := len(a[i].Turns); n < 2 || n > 5 || a[i].Text != a[i].Turns[0].Text {
			t.Fatalf("session %d: %d turns, text %q", i, n, a[i].Text)
		}
		turnCounts[len(a[i].Turns)] = true
		for _, tu := range a[i].Turns {
			if n := len(strings.Fields(tu.Text)); n < 3 || n > 9 || tu.ThinkMs < 0 || tu.ThinkMs > 40 {
				t.Fatalf("session %d: turn of %d words, think %g", i, n, tu.ThinkMs)
			}
		}
	}
	if same || len(turnCounts) < 2 {
		t.Fatalf("another seed gave the same sessions (%v), or every session has one length (%v)", same, turnCounts)
	}
}

// TestParseConversations: the contract decides what a line may be.
func TestParseConversations(t *testing.T) {
	good := `{"schema":"qualkit.conversation-session.v1","id":"chat-one","system":"Be brief.","turns":[{"text":"Hello there.","think_ms":0},{"text":"And then?","think_ms":25}]}` + "\n"
	ps, err := ParseConversations([]byte(good), "c.jsonl")
	if err != nil || len(ps) != 1 || len(ps[0].Turns) != 2 || ps[0].Turns[1].ThinkMs != 25 || ps[0].System != "Be brief." {
		t.Fatalf("%v %+v", err, ps)
	}
	for _, bad := range []string{
		good + "\n",
		strings.Replace(good, `"think_ms":25`, `"think_ms":-1`, 1),
		strings.Replace(good, `"id":"chat-one",`, `"id":"chat-one","id":"again",`, 1),
		strings.Replace(good, `"schema":"qualkit.conversation-session.v1"`, `"schema":"qualkit.workload.v1"`, 1),
		`{"schema":"qualkit.conversation-session.v1","id":"chat-one","turns":[]}`,
	} {
		if _, err := ParseConversations([]byte(bad), "c.jsonl"); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func sessionCase(conc int64, rate *contract.Rate) contract.Case {
	c := servingCase([]int64{conc}, 1, 0, 6)
	c.OutputAssertions = nil
	c.Rate = rate
	c.Corpus = &contract.Corpus{Source: contract.CorpusSourceSyntheticConversations}
	return c
}

// sessionsOf groups a row's measured records by session id, in turn order.
func sessionsOf(t *testing.T, recs []contract.RequestRecordDoc) map[string][]contract.RequestRecordDoc {
	t.Helper()
	out := map[string][]contract.RequestRecordDoc{}
	for _, r := range recs {
		if r.Warmup {
			continue
		}
		if r.Session == nil {
			t.Fatalf("measured record %d has no session", r.Index)
		}
		out[r.Session.ID] = append(out[r.Session.ID], r)
	}
	for id, rs := range out {
		slices.SortFunc(rs, func(a, b contract.RequestRecordDoc) int { return int(a.Session.Turn - b.Session.Turn) })
		out[id] = rs
	}
	return out
}

// TestSessionsAgainstQualsim runs three 3-turn sessions at session concurrency 2 against the real
// qualsim with its prefix cache (4-token blocks), and checks what only the actual replies can
// explain: turn k re-sends the digests of turns 0..k-1's outputs; its prompt grows by exactly
// the previous reply's tokens and this turn's words (each message adds role, start and end
// markers); its cached prompt tokens are qualsim's cache model of the previous turn's prompt
// (the whole earlier prompt, in full blocks, is a prefix of this one); each turn waits for the
// previous reply and its think time. The row carries the per-turn and per-session metrics.
func TestSessionsAgainstQualsim(t *testing.T) {
	p := startQualsim(t, false, "--prefix-cache", "--prefix-cache-block", "4")
	sessions := []Prompt{
		{ID: "session-apple", System: "You answer briefly.", Turns: []Turn{{"apple one two", 0}, {"banana three", 20}, {"cherry four five six", 5}}},
		{ID: "session-birch", Turns: []Turn{{"birch seven", 0}, {"cedar eight nine", 10}, {"dune ten", 0}}},
		{ID: "session-coral", Turns: []Turn{{"coral reef sea", 0}, {"delta river", 30}, {"ember fire hot", 15}}},
	}
	for i := range sessions {
		sessions[i].Text = sessions[i].Turns[0].Text
	}
	plan := Plan{CaseID: "chat-sessions", Case: sessionCase(2, nil), BaseURL: p.url, ModelID: "qualsim-tiny", Prompts: sessions, Seed: 5, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	if row.Row.Requests != 9 || row.Row.Failures != 0 {
		t.Fatalf("row: %d requests, %d failures", row.Row.Requests, row.Row.Failures)
	}
	by := sessionsOf(t, row.Records)
	indexes := map[int64]bool{}
	for si, s := range sessions {
		rs := by[s.ID]
		if len(rs) != 3 {
			t.Fatalf("%s: %d records", s.ID, len(rs))
		}
		sys := int64(0)
		if s.System != "" {
			sys = 1
		}
		for k, r := range rs {
			checkRecordDoc(t, r)
			indexes[r.Index] = true
			ss := r.Session
			if want := int64(si*3 + k); r.Index != want {
				t.Errorf("%s turn %d: index %d, want %d", s.ID, k, r.Index, want)
			}
			if ss.HistoryMessages != sys+2*int64(k)+1 || len(ss.ReplyDigests) != k || ss.ThinkMs != s.Turns[k].ThinkMs {
				t.Errorf("%s turn %d: session %+v", s.ID, k, ss)
			}
			if k == 0 {
				continue
			}
			prev := rs[k-1]
			for j := range k {
				if ss.ReplyDigests[j] != *rs[j].OutputDigest {
					t.Errorf("%s turn %d: reply digest %d is %s, turn %d's output is %s", s.ID, k, j, ss.ReplyDigests[j], j, *rs[j].OutputDigest)
				}
			}
			if ss.HistoryChars <= prev.Session.HistoryChars {
				t.Errorf("%s turn %d: history chars %d do not grow from %d", s.ID, k, ss.HistoryChars, prev.Session.HistoryChars)
			}
			words := int64(len(strings.Fields(s.Turns[k].Text)))
			if want := prev.Usage.PromptTokens + (prev.Usage.CompletionTokens + 3) + (words + 3); r.Usage.PromptTokens != want {
				t.Errorf("%s turn %d: %d prompt tokens, want %d (previous prompt %d + reply %d + 3 + turn %d + 3)", s.ID, k, r.Usage.PromptTokens, want, prev.Usage.PromptTokens, prev.Usage.CompletionTokens, words)
			}
			if want := 4 * (prev.Usage.PromptTokens / 4); r.CachedPromptTokens == nil || *r.CachedPromptTokens != want {
				t.Errorf("%s turn %d: cached %v, want %d (the previous prompt's full 4-token blocks)", s.ID, k, r.CachedPromptTokens, want)
			}
			if gap := time.Duration(r.TSchedNs - *prev.TEndNs); gap < time.Duration(ss.ThinkMs*float64(time.Millisecond)) {
				t.Errorf("%s turn %d: scheduled %v after the previous reply ended, before its think time %g ms", s.ID, k, gap, ss.ThinkMs)
			}
		}
	}
	if len(indexes) != 9 {
		t.Errorf("indexes %v", indexes)
	}
	names := map[string]bool{}
	for _, m := range row.Row.Metrics {
		names[m.Name] = true
	}
	for _, n := range []string{"ttft_p50_ms.turn0", "ttft_p50_ms.turn1", "ttft_p50_ms.turn2", "session_duration_ms.p50", "session_tokens.mean"} {
		if !names[n] {
			t.Errorf("row has no %s", n)
		}
	}
	if f := metric.SessionsOf(nil); f.Sessions != 0 {
		t.Fatal(f)
	}
	plan.Case.Concurrency = []int64{4}
	if _, err := Run(context.Background(), plan); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "3 sessions cannot reach session concurrency 4") {
		t.Fatalf("3 sessions at concurrency 4: %v", err)
	}
}

// TestSessionsOpenLoop: sessions start on the arrival schedule of metric.Arrivals, turn 0's
// t_sched being its scheduled arrival.
func TestSessionsOpenLoop(t *testing.T) {
	p := startQualsim(t, false)
	sessions := SyntheticConversations(3, 4, [2]int{2, 2}, [2]int{2, 4}, [2]int{0, 0})
	rate := &contract.Rate{Mode: contract.RateModeConstant, RequestsPerSecond: 20}
	plan := Plan{CaseID: "chat-sessions", Case: sessionCase(4, rate), BaseURL: p.url, ModelID: "qualsim-tiny", Prompts: sessions, Seed: 5, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	by := sessionsOf(t, res.Rows[0].Records)
	var t0 int64
	for i, s := range sessions {
		rs := by[s.ID]
		if len(rs) != 2 {
			t.Fatalf("%s: %d records", s.ID, len(rs))
		}
		if i == 0 {
			t0 = rs[0].TSchedNs
		}
		if got, want := time.Duration(rs[0].TSchedNs-t0), time.Duration(i)*50*time.Millisecond; got != want {
			t.Errorf("session %d starts at %v, want %v", i, got, want)
		}
	}
}

// TestSharedPrefixAgainstQualsim: the generator's groups share their prefix and nothing else,
// and qualsim's prefix cache serves every request after a group's first exactly the full blocks
// of the longest token prefix it shares with an earlier prompt (computed here from qualsim's
// documented token model: BOS, role, start, the words, end).
func TestSharedPrefixAgainstQualsim(t *testing.T) {
	ps := SharedPrefix(9, 3, 10, 4, [2]int{3, 6})
	if again := SharedPrefix(9, 3, 10, 4, [2]int{3, 6}); !slices.EqualFunc(ps, again, func(a, b Prompt) bool { return a.ID == b.ID && a.Text == b.Text }) {
		t.Fatal("not a function of the seed")
	}
	if len(ps) != 12 || ps[5].ID != "prefix-g0001-s0001" {
		t.Fatalf("%d prompts, prompt 5 is %s", len(ps), ps[5].ID)
	}
	for i, pr := range ps {
		w := strings.Fields(pr.Text)
		first := strings.Fields(ps[i/4*4].Text)
		if len(w) < 13 || len(w) > 16 || !slices.Equal(w[:10], first[:10]) {
			t.Fatalf("prompt %d: %d words, prefix %v vs %v", i, len(w), w[:10], first[:10])
		}
		if i >= 4 && slices.Equal(w[:10], strings.Fields(ps[i-4].Text)[:10]) {
			t.Fatalf("prompt %d shares its prefix with another group", i)
		}
	}
	p := startQualsim(t, false, "--prefix-cache", "--prefix-cache-block", "4")
	c := servingCase([]int64{1}, 1, 0, 4)
	c.OutputAssertions = nil
	plan := Plan{CaseID: "shared-prefix", Case: c, BaseURL: p.url, ModelID: "qualsim-tiny", Prompts: ps, Seed: 5, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	tokens := func(text string) []string {
		return append([]string{"bos", "role:user", "start"}, append(strings.Fields(text), "end")...)
	}
	hits := int64(0)
	for _, r := range res.Rows[0].Records {
		k := *r.CorpusIndex
		mine := tokens(ps[k].Text)
		shared := 0
		for j := range k {
			other := tokens(ps[j].Text)
			n := 0
			for n < len(mine) && n < len(other) && mine[n] == other[n] {
				n++
			}
			shared = max(shared, n/4*4) // an earlier prompt cached its full blocks only
		}
		want := int64(min(shared, (len(mine)-1)/4*4))
		if r.CachedPromptTokens == nil || *r.CachedPromptTokens != want || r.Usage.PromptTokens != int64(len(mine)) {
			t.Errorf("prompt %d: cached %v of %d prompt tokens, the model says %d of %d", k, r.CachedPromptTokens, r.Usage.PromptTokens, want, len(mine))
		}
		hits += want
	}
	if hits < 8*12 { // 8 non-first prompts × at least the 12 tokens of (3 + 10) in full blocks
		t.Errorf("only %d cached tokens", hits)
	}
}

// FuzzParseConversations: any bytes either parse into sessions the contract allows (ids unique
// is the caller's business; at least one turn, texts non-empty, think times in range) or fail
// with ErrCorpus; nothing panics.
func FuzzParseConversations(f *testing.F) {
	f.Add([]byte(`{"schema":"qualkit.conversation-session.v1","id":"chat-one","system":"Be brief.","turns":[{"text":"Hello there.","think_ms":0},{"text":"And then?","think_ms":25}]}` + "\n"))
	f.Add([]byte(`{"schema":"qualkit.conversation-session.v1","id":"chat-two","turns":[{"text":"x","think_ms":3600000}]}`))
	f.Add([]byte(`{"schema":"qualkit.conversation-session.v1","id":"chat-one","turns":[]}`))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"schema":"qualkit.conversation-session.v1","id":"chat-one","turns":[{"text":"a","think_ms":1e400}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		ps, err := ParseConversations(data, "fuzz.jsonl")
		if err != nil {
			if !errors.Is(err, ErrCorpus) {
				t.Fatalf("error %v does not wrap ErrCorpus", err)
			}
			return
		}
		for _, p := range ps {
			if len(p.Turns) == 0 || len(p.Turns) > MaxSessionTurns || p.Text != p.Turns[0].Text {
				t.Fatalf("session %q: %d turns", p.ID, len(p.Turns))
			}
			for _, tu := range p.Turns {
				if tu.Text == "" || !(tu.ThinkMs >= 0 && tu.ThinkMs <= MaxSessionThinkMs) {
					t.Fatalf("session %q: turn %+v", p.ID, tu)
				}
			}
		}
	})
}

// TestSessionToolRounds runs two 2-turn sessions against qualsim's tool-calling model of 2
// rounds (it calls get_time, then again after the first tool result, then answers in text) in a
// case whose tools declare a result for each function: each turn is 3 requests (rounds 0, 1, 2)
// at indexes first + 5 × turn + round (the case's bound is 4); a round re-sends the reply with
// its call and one tool message carrying the mock result; the next turn carries every earlier
// reply and tool message. With a bound of 1, a turn stops after round 1 though its reply called
// a tool.
func TestSessionToolRounds(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sim.json")
	if err := os.WriteFile(cfg, []byte(`{"tool_calls": {"enabled": true, "accuracy": 1, "rounds": 2}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startQualsim(t, false, "--config", cfg)
	sessions := []Prompt{
		{ID: "session-apple", System: "You answer briefly.", Turns: []Turn{{"what time is it", 0}, {"and now", 5}}},
		{ID: "session-birch", Turns: []Turn{{"time please", 0}, {"again", 0}}},
	}
	for i := range sessions {
		sessions[i].Text = sessions[i].Turns[0].Text
	}
	c := sessionCase(2, nil)
	c.Tools = &contract.Tools{Path: "tools.json", Digest: digestOf(weatherTools), Choice: contract.ToolsChoiceAuto, Results: map[string]string{"get_time": "12:00 UTC", "get_weather": "sunny"}}
	plan := Plan{CaseID: "chat-sessions", Case: c, BaseURL: p.url, ModelID: "qualsim-tiny", Prompts: sessions, Seed: 5, Epoch: time.Now(),
		Tools: mustTools(t, weatherTools, *c.Tools)}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	if row.Row.Requests != 12 || row.Row.Failures != 0 {
		t.Fatalf("row: %d requests, %d failures", row.Row.Requests, row.Row.Failures)
	}
	by := sessionsOf(t, row.Records)
	for si, s := range sessions {
		rs := by[s.ID]
		slices.SortStableFunc(rs, func(a, b contract.RequestRecordDoc) int { return int(a.Index - b.Index) })
		if len(rs) != 6 {
			t.Fatalf("%s: %d records", s.ID, len(rs))
		}
		sys := int64(0)
		if s.System != "" {
			sys = 1
		}
		for n, r := range rs {
			checkRecordDoc(t, r)
			k, round := int64(n/3), int64(n%3)
			ss := r.Session
			if want := int64(si*10) + 5*k + round; r.Index != want || ss.Turn != k || ss.Round != round {
				t.Errorf("%s request %d: index %d turn %d round %d, want %d, %d, %d", s.ID, n, r.Index, ss.Turn, ss.Round, want, k, round)
			}
			calls := len(r.ToolCalls)
			if (round < 2) != (calls == 1) || calls == 1 && (r.ToolCalls[0].Name != "get_time" || !r.ToolCalls[0].Valid) {
				t.Errorf("%s turn %d round %d: calls %+v", s.ID, k, round, r.ToolCalls)
			}
			// The history: the system message, k + 1 user messages, n replies, 2k + round tool
			// messages (one per answered call).
			if tools := 2*k + round; ss.HistoryMessages != sys+k+1+int64(n)+tools || ss.ToolMessages != tools || len(ss.ReplyDigests) != n {
				t.Errorf("%s turn %d round %d: session %+v", s.ID, k, round, ss)
			}
			for j := range n {
				if ss.ReplyDigests[j] != *rs[j].OutputDigest {
					t.Errorf("%s request %d: reply digest %d is %s, request %d's output is %s", s.ID, n, j, ss.ReplyDigests[j], j, *rs[j].OutputDigest)
				}
			}
			if n > 0 && round > 0 && r.TSchedNs < *rs[n-1].TCloseNs {
				t.Errorf("%s turn %d round %d: scheduled at %d, before the request it answers closed at %d", s.ID, k, round, r.TSchedNs, *rs[n-1].TCloseNs)
			}
		}
	}
	// Bound 1: round 1's reply still calls, and the turn ends there.
	one := plan
	one.Case.Tools = &contract.Tools{Path: "tools.json", Digest: digestOf(weatherTools), Choice: contract.ToolsChoiceAuto, Results: c.Tools.Results, Rounds: 1}
	if res, err = Run(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Rows[0].Records {
		if r.Session.Round > 1 || len(r.ToolCalls) != 1 {
			t.Fatalf("bound 1: turn %d round %d, calls %+v", r.Session.Turn, r.Session.Round, r.ToolCalls)
		}
	}
	if n := res.Rows[0].Row.Requests; n != 8 {
		t.Fatalf("bound 1: %d requests, want 8", n)
	}
}
