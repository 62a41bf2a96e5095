package synth

import (
	"fmt"
	"iter"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// Bounds of a session corpus (docs/caching.md "Conversations"; the conversation-session and
// workload contracts hold the same numbers).
const (
	// MaxSessions bounds the sessions of one corpus.
	MaxSessions = 100_000
	// MaxSessionTurns bounds the turns of one session.
	MaxSessionTurns = 256
	// MaxSessionThinkMs bounds one think time.
	MaxSessionThinkMs = 3_600_000
)

// ConversationTurn is one user turn of a session: its text and the think time before it.
type ConversationTurn struct {
	Text    string
	ThinkMs float64
}

// Conversation is one session of a corpus: its id, its system message ("" when none) and its
// user turns in order.
type Conversation struct {
	ID, System string
	Turns      []ConversationTurn
}

// SessionID is synthetic session i's id under qualkit.synthetic-conversations.v1: "session-" and
// i as six or more zero-padded digits.
func SessionID(i int) string { return fmt.Sprintf("session-%06d", i) }

// ConversationArgs are SyntheticConversations' arguments: the seed, the session count and the
// [min, max] ranges of turns, words per turn and think time in ms.
type ConversationArgs struct {
	Seed                uint64
	Count               int
	Turns, Words, Think [2]int
}

// Sessions are the sessions SyntheticConversations yields.
func (a ConversationArgs) Sessions() iter.Seq2[int, Conversation] {
	return SyntheticConversations(a.Seed, a.Count, a.Turns, a.Words, a.Think)
}

// SyntheticConversations is the generator qualkit.synthetic-conversations.v1, yielding session i
// for i = 0, 1, ..., count-1 in turn. One SplitMix64 stream is seeded with seed; for each session
// it draws the number of turns T = turns[0] + (next mod (turns[1] - turns[0] + 1)), then for each
// turn j < T the word count n = words[0] + (next mod (words[1] - words[0] + 1)), n words as
// qualkit.synthetic-words.v1 draws them (WordText) and then the think time think[0] + (next mod
// (think[1] - think[0] + 1)) ms (drawn for turn 0 too). Session i's id is SessionID(i); it has no
// system message. Each session is written when it is yielded.
func SyntheticConversations(seed uint64, count int, turns, words, think [2]int) iter.Seq2[int, Conversation] {
	return func(yield func(int, Conversation) bool) {
		rng := metric.SplitMix64{State: seed}
		draw := func(r [2]int) int { return r[0] + int(rng.Next()%uint64(r[1]-r[0]+1)) }
		var sb strings.Builder
		for i := range count {
			ts := make([]ConversationTurn, draw(turns))
			for j := range ts {
				ts[j].Text = WordText(&rng, &sb, draw(words))
				ts[j].ThinkMs = float64(draw(think))
			}
			if !yield(i, Conversation{ID: SessionID(i), Turns: ts}) {
				return
			}
		}
	}
}

// CheckSyntheticConversations checks a synthetic_conversations corpus's declaration of
// qualkit.synthetic-conversations.v1 (its generator, a non-negative seed, 1 to MaxSessions
// sessions, 1 <= turns min <= max <= MaxSessionTurns, 1 <= prompt_words min <= max <= MaxWords,
// 0 <= think_ms min <= max <= MaxSessionThinkMs) and returns SyntheticConversations' arguments.
func CheckSyntheticConversations(corpus contract.Corpus) (ConversationArgs, error) {
	t, w, th := corpus.Turns, corpus.PromptWords, corpus.ThinkMs
	switch {
	case corpus.Generator != contract.SyntheticConversationCorpusGenerator:
		return ConversationArgs{}, fmt.Errorf("generator %q: want %s", corpus.Generator, contract.SyntheticConversationCorpusGenerator)
	case corpus.Seed == nil || *corpus.Seed < 0:
		return ConversationArgs{}, fmt.Errorf("synthetic conversations need a non-negative seed")
	case corpus.Count < 1 || corpus.Count > MaxSessions:
		return ConversationArgs{}, fmt.Errorf("synthetic conversations count %d: want 1 to %d", corpus.Count, MaxSessions)
	case t == nil || t.Min < 1 || t.Max < t.Min || t.Max > MaxSessionTurns:
		return ConversationArgs{}, fmt.Errorf("synthetic conversations turns: want 1 <= min <= max <= %d", MaxSessionTurns)
	case w == nil || w.Min < 1 || w.Max < w.Min || w.Max > MaxWords:
		return ConversationArgs{}, fmt.Errorf("synthetic conversations prompt_words: want 1 <= min <= max <= %d", MaxWords)
	case th == nil || th.Min < 0 || th.Max < th.Min || th.Max > MaxSessionThinkMs:
		return ConversationArgs{}, fmt.Errorf("synthetic conversations think_ms: want 0 <= min <= max <= %d", MaxSessionThinkMs)
	}
	return ConversationArgs{Seed: uint64(*corpus.Seed), Count: int(corpus.Count), Turns: [2]int{int(t.Min), int(t.Max)}, Words: [2]int{int(w.Min), int(w.Max)}, Think: [2]int{int(th.Min), int(th.Max)}}, nil
}
