package rowcheck

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestSessionCorpusCheck: a session turn's think time is its corpus turn's, turn 0's history is
// exactly its system message and text, a later turn's at least the previous turn's history plus
// its text, the session at a corpus index is the corpus's, and the prompt set is the corpus's.
func TestSessionCorpusCheck(t *testing.T) {
	sc := &SessionCorpus{PromptSet: "sha256:" + strings.Repeat("a", 64), sessions: map[int64]*sessionShape{
		0: {id: "alpha", systemChars: 14, turnChars: []int64{14, 23}, thinkMs: []float64{0, 30}},
	}}
	turn := func(line int, id string, k, chars int64, think float64) *record.Record {
		return &record.Record{Line: line, SessionIndex: 0, Session: &contract.SessionTurn{ID: id, Turn: k, HistoryChars: chars, ThinkMs: think}}
	}
	row := contract.Row{PromptSetSHA256: sc.PromptSet, Records: contract.FileRef{Path: "rows.jsonl"}}
	for name, c := range map[string]struct {
		recs    []*record.Record
		prompts string
		want    error
	}{
		"ok":                {recs: []*record.Record{turn(0, "alpha", 0, 28, 0), turn(1, "alpha", 1, 28+40+23, 30)}},
		"reply of 0 chars":  {recs: []*record.Record{turn(0, "alpha", 0, 28, 0), turn(1, "alpha", 1, 28+23, 30)}},
		"think time":        {recs: []*record.Record{turn(0, "alpha", 0, 28, 0), turn(1, "alpha", 1, 91, 29)}, want: reason.ErrRowMismatch},
		"turn 0 history":    {recs: []*record.Record{turn(0, "alpha", 0, 29, 0)}, want: reason.ErrRowMismatch},
		"later history":     {recs: []*record.Record{turn(0, "alpha", 0, 28, 0), turn(1, "alpha", 1, 28+22, 30)}, want: reason.ErrRowMismatch},
		"below the texts":   {recs: []*record.Record{turn(1, "alpha", 1, 36, 30)}, want: reason.ErrRowMismatch},
		"another session":   {recs: []*record.Record{turn(0, "beta", 0, 28, 0)}, want: reason.ErrRowMismatch},
		"beyond its turns":  {recs: []*record.Record{turn(0, "alpha", 2, 99, 0)}, want: reason.ErrRowMismatch},
		"beyond the corpus": {recs: []*record.Record{{Line: 0, SessionIndex: 1, Session: &contract.SessionTurn{ID: "beta", HistoryChars: 5}}}, want: reason.ErrRowMismatch},
		"prompt set":        {recs: []*record.Record{turn(0, "alpha", 0, 28, 0)}, prompts: "sha256:" + strings.Repeat("b", 64), want: reason.ErrCorpusMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			r := row
			if c.prompts != "" {
				r.PromptSetSHA256 = c.prompts
			}
			col := &finding.Collector{Check: "tolerances"}
			sc.Check(col, "case-result.json", 0, r, c.recs)
			fs := col.Result().Findings
			if c.want == nil {
				if len(fs) != 0 {
					t.Fatalf("findings: %v", fs)
				}
				return
			}
			if len(fs) == 0 || !errors.Is(fs[0], c.want) {
				t.Fatalf("findings %v, want %v", fs, c.want)
			}
		})
	}
}

// FuzzParseConversations: any bytes either parse into sessions of 1 to 256 turns each, or are
// refused with an error; nothing panics.
func FuzzParseConversations(f *testing.F) {
	f.Add([]byte(`{"schema":"qualkit.conversation-session.v1","id":"chat-alpha","system":"You are terse.","turns":[{"text":"Say hello now.","think_ms":0},{"text":"Now say goodbye.","think_ms":30}]}` + "\n"))
	f.Add([]byte(`{"schema":"qualkit.conversation-session.v1","id":"b","turns":[{"text":"x","think_ms":1.5}]}` + "\n\n"))
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		seq, err := ParseConversations(data, "fuzz.jsonl")
		if err != nil {
			return
		}
		for _, s := range seq {
			if len(s.Turns) < 1 || len(s.Turns) > 256 || s.ID == "" {
				t.Fatalf("session %q of %d turns parsed", s.ID, len(s.Turns))
			}
		}
	})
}
