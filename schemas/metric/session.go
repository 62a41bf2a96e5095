package metric

import (
	"slices"
	"strconv"
)

// The per-turn and per-session formulas of a multi-turn session row (docs/metrics.md
// "Sessions", docs/caching.md "Conversations"). They read a measured request's Session and Turn;
// a row without session requests emits none of them.

// SessionTurn is the name class of turn k in ttft_by_turn.v1's metric names: "turn" and k
// (0-based, the request record's session.turn).
func SessionTurn(k int64) string { return "turn" + strconv.FormatInt(k, 10) }

// TurnTTFT is one turn position's TTFT sample: the TTFT of the successful requests of that turn
// (with a content event), in the order of the measured requests; a turn's tool rounds (round >
// 0, the client answering its calls) are not in it, so each sample is the first answer to a user
// turn.
type TurnTTFT struct {
	Turn   int64
	TTFTMs []float64
}

// TurnTTFTs groups the successes' TTFT (c_f - t_send) by turn position, in turn order.
func TurnTTFTs(measured []Request) []TurnTTFT {
	by := map[int64][]float64{}
	for i := range measured {
		r := &measured[i]
		if r.Session == "" || r.Round > 0 || !r.OK() || len(r.Content) == 0 {
			continue
		}
		by[r.Turn] = append(by[r.Turn], r.ttftMs())
	}
	turns := make([]int64, 0, len(by))
	for k := range by {
		turns = append(turns, k)
	}
	slices.Sort(turns)
	out := make([]TurnTTFT, len(turns))
	for i, k := range turns {
		out[i] = TurnTTFT{Turn: k, TTFTMs: by[k]}
	}
	return out
}

// SessionFacts are a row's complete sessions: those whose every measured turn succeeded.
type SessionFacts struct {
	// Sessions counts the sessions with a measured request, Complete those of them whose every
	// request succeeded.
	Sessions, Complete int
	// DurationMs is, per complete session in order of first appearance, max t_end - min t_sched
	// over its requests (think times and tool rounds included); Tokens is the sum of its requests'
	// prompt and completion tokens.
	DurationMs []float64
	Tokens     []float64
}

// SessionsOf reduces a row's measured requests to their sessions.
func SessionsOf(measured []Request) SessionFacts {
	type acc struct {
		failed      bool
		lo, hi, tok int64
		has         bool
	}
	var order []string
	by := map[string]*acc{}
	for i := range measured {
		r := &measured[i]
		if r.Session == "" {
			continue
		}
		a := by[r.Session]
		if a == nil {
			a = &acc{}
			by[r.Session] = a
			order = append(order, r.Session)
		}
		if !r.OK() {
			a.failed = true
			continue
		}
		if !a.has || r.Sched < a.lo {
			a.lo = r.Sched
		}
		if !a.has || r.End > a.hi {
			a.hi = r.End
		}
		a.has = true
		a.tok += r.Prompt + r.Completion
	}
	f := SessionFacts{Sessions: len(order)}
	for _, id := range order {
		a := by[id]
		if a.failed || !a.has {
			continue
		}
		f.Complete++
		f.DurationMs = append(f.DurationMs, ms(a.hi-a.lo))
		f.Tokens = append(f.Tokens, float64(a.tok))
	}
	return f
}

// sessions emits the session formulas of a row's measured requests.
func (b *builder) sessions(measured []Request) {
	for _, t := range TurnTTFTs(measured) {
		b.add(TTFTByTurn, SessionTurn(t.Turn), Summarize(t.TTFTMs).P50, len(t.TTFTMs))
	}
	f := SessionsOf(measured)
	b.dist(SessionDuration, f.DurationMs)
	b.dist(SessionTokens, f.Tokens)
}
