package metric

import "testing"

// TestTurnTTFTsSkipRounds: a turn's TTFT sample holds the first request of each user turn; its
// tool rounds (the client answering the turn's calls) are left out, while the session's duration
// and tokens count every request.
func TestTurnTTFTsSkipRounds(t *testing.T) {
	req := func(turn, round, send, first, end int64) Request {
		return Request{Session: "s", Turn: turn, Round: round, HasSend: true, HasEnd: true, HasUsage: true, Send: send, Sched: send, Content: []int64{first}, End: end, Prompt: 10, Completion: 1}
	}
	rs := []Request{req(0, 0, 0, 2e6, 3e6), req(0, 1, 3e6, 13e6, 14e6), req(1, 0, 14e6, 18e6, 20e6)}
	got := TurnTTFTs(rs)
	if len(got) != 2 || len(got[0].TTFTMs) != 1 || got[0].TTFTMs[0] != 2 || got[1].TTFTMs[0] != 4 {
		t.Fatalf("turn TTFTs %+v, want turn 0: [2], turn 1: [4]", got)
	}
	f := SessionsOf(rs)
	if f.Complete != 1 || f.DurationMs[0] != 20 || f.Tokens[0] != 33 {
		t.Fatalf("session facts %+v, want one session of 20 ms and 33 tokens", f)
	}
}
