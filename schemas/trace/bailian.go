package trace

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// BailianBlockTokens is the token count of one hash block in Alibaba's Bailian traces
// (alibaba-edu/qwen-bailian-usagetraces-anon: "16 tokens per block"); a workload replaying one
// declares it as its corpus's block_tokens.
const BailianBlockTokens = 16

// BailianImport says what ImportBailian made of a trace beside its entries.
type BailianImport struct {
	// Roots counts the entries that wait for nothing (parent_chat_id -1).
	Roots int
	// Orphans counts the entries whose parent_chat_id names no entry of the file (a file cut
	// from a longer trace: `head -n 50` keeps a turn and drops its parent): they are imported as
	// independent entries, and the count says so.
	Orphans int
	// MaxTurn is the largest turn.
	MaxTurn int64
}

// bailianLine is one line of a Bailian trace: {"chat_id", "parent_chat_id", "timestamp" (s),
// "input_length", "output_length", "type", "turn", "hash_ids"}.
type bailianLine struct {
	ChatID       *int64   `json:"chat_id"`
	ParentChatID *int64   `json:"parent_chat_id"`
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
	Type         *string  `json:"type"`
	Turn         *int64   `json:"turn"`
	HashIDs      []int64  `json:"hash_ids"`
}

// ImportBailian reads an Alibaba Bailian trace (JSONL; timestamps in seconds from the trace's
// start; a chat's later turns name the turn before them by parent_chat_id, -1 for a first turn;
// hash_ids of 16-token blocks) into qualkit trace entries: sorted by timestamp (stable, in line
// order for equal times), timestamps in whole ms (rounded) from the first, each turn's parent the
// index of the entry its parent_chat_id names (equal times: lower turn first). Every entry is a whole request as the service
// received it (its input_length counts the history and its hash_ids cover it), so a replay sends
// each as its own prompt and only waits for its parent's answer (docs/metrics.md "Trace
// replay"). Lines are strict JSON with only those keys (type and turn optional, hash_ids
// optional), within the bounds of Read; errors wrap ErrTrace and name the line.
func ImportBailian(r io.Reader) ([]Entry, BailianImport, error) {
	var info BailianImport
	data, err := readAtMost(r)
	if err != nil {
		return nil, info, err
	}
	type row struct {
		e              Entry
		ms             int64
		chat, parent   int64
		turn           int64
		line, position int
	}
	var rows []row
	byChat := map[int64]int{} // chat_id -> position in rows
	for i, ln := range bytes.Split(data, []byte{'\n'}) {
		ln = bytes.TrimRight(ln, "\r")
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		n := i + 1
		if len(ln) > MaxLineBytes {
			return nil, info, fmt.Errorf("%w: bailian line %d: longer than %d bytes", ErrTrace, n, MaxLineBytes)
		}
		if len(rows) >= MaxEntries {
			return nil, info, fmt.Errorf("%w: more than %d entries", ErrTrace, MaxEntries)
		}
		var l bailianLine
		if err := jsonstrict.DecodeInto(ln, &l); err != nil {
			return nil, info, fmt.Errorf("%w: bailian line %d: %v", ErrTrace, n, err)
		}
		if l.ChatID == nil || l.Timestamp == nil || l.InputLength == nil || l.OutputLength == nil {
			return nil, info, fmt.Errorf(`%w: bailian line %d: want {"chat_id", "parent_chat_id"?, "timestamp": s, "input_length", "output_length", "type"?, "turn"?, "hash_ids"?}`, ErrTrace, n)
		}
		ts := *l.Timestamp
		if math.IsNaN(ts) || ts < 0 || ts*1e3 > MaxTimestampMs {
			return nil, info, fmt.Errorf("%w: bailian line %d: timestamp %g: want seconds from 0 to %d", ErrTrace, n, ts, int64(MaxTimestampMs)/1000)
		}
		parent := int64(-1)
		if l.ParentChatID != nil {
			parent = *l.ParentChatID
		}
		turn := int64(1)
		if l.Turn != nil {
			turn = *l.Turn
		}
		if turn < 1 || turn > MaxEntries {
			return nil, info, fmt.Errorf("%w: bailian line %d: turn %d: want 1 to %d", ErrTrace, n, turn, MaxEntries)
		}
		if parent < -1 || parent == *l.ChatID {
			return nil, info, fmt.Errorf("%w: bailian line %d: parent_chat_id %d: want -1 or the chat_id of another request", ErrTrace, n, parent)
		}
		if _, dup := byChat[*l.ChatID]; dup {
			return nil, info, fmt.Errorf("%w: bailian line %d: chat_id %d appears twice", ErrTrace, n, *l.ChatID)
		}
		e := Entry{InputLength: *l.InputLength, OutputLength: *l.OutputLength, HashIDs: l.HashIDs}
		if err := Check(e); err != nil {
			return nil, info, fmt.Errorf("%w: bailian line %d: %v", ErrTrace, n, err)
		}
		byChat[*l.ChatID] = len(rows)
		rows = append(rows, row{e: e, ms: int64(math.Round(ts * 1e3)), chat: *l.ChatID, parent: parent, turn: turn, line: n, position: len(rows)})
	}
	if len(rows) == 0 {
		return nil, info, fmt.Errorf("%w: no entries", ErrTrace)
	}
	// Equal times keep a chat's turns in turn order, then the file's order.
	slices.SortStableFunc(rows, func(a, b row) int { return cmp.Or(cmp.Compare(a.ms, b.ms), cmp.Compare(a.turn, b.turn)) })
	at := make([]int, len(rows)) // position in the file -> index in the trace
	for k, r := range rows {
		at[r.position] = k
	}
	out := make([]Entry, len(rows))
	t0 := rows[0].ms
	for k, r := range rows {
		e := r.e
		e.TimestampMs = r.ms - t0
		switch pos, ok := byChat[r.parent]; {
		case r.parent == -1:
			info.Roots++
		case !ok:
			info.Orphans++
		default:
			p := at[pos]
			if p >= k {
				return nil, info, fmt.Errorf("%w: bailian line %d: chat %d at %.3f s waits for chat %d (line %d), which arrives at %.3f s, no earlier: a turn follows the turn it names", ErrTrace, r.line, r.chat, float64(r.ms)/1e3, r.parent, rows[p].line, float64(rows[p].ms)/1e3)
			}
			e.After = int64(p) + 1
		}
		info.MaxTurn = max(info.MaxTurn, r.turn)
		out[k] = e
	}
	return out, info, nil
}

// readAtMost reads an import's input, at most MaxBytes (errors wrap ErrTrace).
func readAtMost(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrace, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTrace, MaxBytes)
	}
	return data, nil
}
