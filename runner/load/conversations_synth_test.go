package load

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/synth"
)

// TestSyntheticConversationsAsSynth: the runner's qualkit.synthetic-conversations.v1 and its
// bounds are synth's, which the verifier regenerates session corpora with (rowcheck
// SessionCorpus): the same sessions, turns, texts and think times for each seed and range.
func TestSyntheticConversationsAsSynth(t *testing.T) {
	if MaxSessions != synth.MaxSessions || MaxSessionTurns != synth.MaxSessionTurns || MaxSessionThinkMs != synth.MaxSessionThinkMs {
		t.Fatalf("session bounds %d %d %d, synth's %d %d %d", MaxSessions, MaxSessionTurns, MaxSessionThinkMs, synth.MaxSessions, synth.MaxSessionTurns, synth.MaxSessionThinkMs)
	}
	for _, a := range []synth.ConversationArgs{
		{Seed: 11, Count: 4, Turns: [2]int{2, 2}, Words: [2]int{2, 5}, Think: [2]int{0, 0}},
		{Seed: 0, Count: 9, Turns: [2]int{1, 5}, Words: [2]int{1, 40}, Think: [2]int{0, 250}},
		{Seed: 1 << 52, Count: 3, Turns: [2]int{3, 7}, Words: [2]int{10, 10}, Think: [2]int{5, 9}},
	} {
		got := SyntheticConversations(a.Seed, a.Count, a.Turns, a.Words, a.Think)
		n := 0
		for i, s := range a.Sessions() {
			n++
			p := got[i]
			if p.ID != s.ID || p.System != s.System || len(p.Turns) != len(s.Turns) {
				t.Fatalf("%+v session %d: runner %s (%d turns), synth %s (%d turns)", a, i, p.ID, len(p.Turns), s.ID, len(s.Turns))
			}
			for j, tu := range s.Turns {
				if p.Turns[j].Text != tu.Text || p.Turns[j].ThinkMs != tu.ThinkMs {
					t.Fatalf("%+v session %d turn %d: runner %q %g ms, synth %q %g ms", a, i, j, p.Turns[j].Text, p.Turns[j].ThinkMs, tu.Text, tu.ThinkMs)
				}
			}
		}
		if n != len(got) {
			t.Fatalf("%+v: runner %d sessions, synth %d", a, len(got), n)
		}
	}
}
