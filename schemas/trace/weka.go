package trace

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// WEKABlockTokens is the recommended token count of one hash block in WEKA's agentic coding
// traces (callanjfox/agentic-coding-analysis docs/TRACE_FORMAT.md, "block_size": 64); a
// conversation states its own block_size, and ImportWEKA requires one size for the whole file.
const WEKABlockTokens = 64

// WEKAImport says what ImportWEKA made of a trace beside its entries.
type WEKAImport struct {
	// Conversations counts the conversations (lines, or the one object of a single file).
	Conversations int
	// BlockSize is the conversations' block_size (the corpus's block_tokens).
	BlockSize int64
	// Clamped counts the requests whose t came before their predecessor's: a conversation's
	// requests are serialised, so such a request is imported at its predecessor's time.
	Clamped int
}

// wekaConversation is one conversation of a WEKA trace: its documented top-level keys.
type wekaConversation struct {
	ID           *string           `json:"id"`
	Models       []string          `json:"models"`
	BlockSize    *int64            `json:"block_size"`
	ToolTokens   *int64            `json:"tool_tokens"`
	SystemTokens *int64            `json:"system_tokens"`
	Requests     []json.RawMessage `json:"requests"`
	Analysis     json.RawMessage   `json:"_analysis"`
	Totals       json.RawMessage   `json:"totals"`
}

// wekaRequest is one request of a conversation: its documented keys (a sub-agent's are refused).
type wekaRequest struct {
	T           *float64 `json:"t"`
	Type        *string  `json:"type"`
	Model       *string  `json:"model"`
	In          *int64   `json:"in"`
	Out         *int64   `json:"out"`
	HashIDs     []int64  `json:"hash_ids"`
	InputTypes  []string `json:"input_types"`
	OutputTypes []string `json:"output_types"`
	Stop        *string  `json:"stop"`
	APITime     *float64 `json:"api_time"`
	TTFT        *float64 `json:"ttft"`
	ThinkTime   *float64 `json:"think_time"`
}

// ImportWEKA reads a WEKA agentic coding trace: one conversation object per line (JSONL, the
// published datasets' shape) or a single conversation object, each {"id", "block_size",
// "requests": [{"t": s from the conversation's start, "in", "out", "hash_ids", ...}], ...}. A
// conversation's requests run one after another, so each waits for the one before it (its
// parent); conversation c starts staggerMs × c ms after the first (0: all at once). Hash ids are
// per conversation in the format, so each conversation's are moved past the previous ones' (no
// block is shared across conversations). Sub-agent requests ("type": "subagent": a parallel
// group the next turn joins) are refused: a qualkit entry waits for one parent. The entries come
// sorted by time (a conversation's requests in order at equal times), in whole ms (rounded),
// from the first. Bounded by MaxBytes, MaxEntries and Check; errors wrap ErrTrace and name the
// line, the request and the key.
func ImportWEKA(r io.Reader, staggerMs int64) ([]Entry, WEKAImport, error) {
	var info WEKAImport
	if staggerMs < 0 || staggerMs > MaxTimestampMs {
		return nil, info, fmt.Errorf("%w: stagger %d ms: want 0 to %d", ErrTrace, staggerMs, int64(MaxTimestampMs))
	}
	data, err := readAtMost(r)
	if err != nil {
		return nil, info, err
	}
	type row struct {
		e          Entry
		ms         int64
		conv, pos  int
		parentConv bool // waits for the conversation's previous request
	}
	var rows []row
	var idBase int64
	lines := [][]byte{data} // a single conversation object (pretty-printed or not) ...
	var whole wekaConversation
	if jsonstrict.DecodeInto(data, &whole) != nil {
		lines = bytes.Split(data, []byte{'\n'}) // ... or one a line
	}
	for i, ln := range lines {
		ln = bytes.TrimRight(ln, "\r")
		if len(bytes.TrimSpace(ln)) == 0 {
			continue
		}
		n := i + 1
		var cv wekaConversation
		if err := jsonstrict.DecodeInto(ln, &cv); err != nil {
			return nil, info, fmt.Errorf("%w: weka line %d: %v (one conversation object a line)", ErrTrace, n, err)
		}
		if cv.BlockSize == nil || *cv.BlockSize < 1 || *cv.BlockSize > MaxLength || len(cv.Requests) == 0 {
			return nil, info, fmt.Errorf(`%w: weka line %d: want {"id", "block_size": tokens, "requests": [...], ...}`, ErrTrace, n)
		}
		if info.BlockSize != 0 && *cv.BlockSize != info.BlockSize {
			return nil, info, fmt.Errorf("%w: weka line %d: block_size %d, the first conversation's is %d: one trace has one block size", ErrTrace, n, *cv.BlockSize, info.BlockSize)
		}
		info.BlockSize = *cv.BlockSize
		start := staggerMs * int64(info.Conversations)
		conv := info.Conversations
		info.Conversations++
		var maxID, prevMs int64
		for j, raw := range cv.Requests {
			if len(rows) >= MaxEntries {
				return nil, info, fmt.Errorf("%w: more than %d entries", ErrTrace, MaxEntries)
			}
			var kind struct {
				Type string `json:"type"`
			}
			if json.Unmarshal(raw, &kind) == nil && kind.Type == "subagent" {
				return nil, info, fmt.Errorf("%w: weka line %d request %d: a sub-agent group (its requests run beside the conversation's and the next turn waits for all of them) is not replayed: an entry waits for one parent; use a trace without sub-agents", ErrTrace, n, j)
			}
			var q wekaRequest
			if err := jsonstrict.DecodeInto(raw, &q); err != nil {
				return nil, info, fmt.Errorf("%w: weka line %d request %d: %v", ErrTrace, n, j, err)
			}
			if q.T == nil || q.In == nil || q.Out == nil {
				return nil, info, fmt.Errorf(`%w: weka line %d request %d: want {"t": s, "in", "out", "hash_ids"?, ...}`, ErrTrace, n, j)
			}
			t := *q.T
			if math.IsNaN(t) || t < 0 || t*1e3 > MaxTimestampMs-float64(start) {
				return nil, info, fmt.Errorf("%w: weka line %d request %d: t %g: want seconds from 0 with the conversation's start within %d ms", ErrTrace, n, j, t, int64(MaxTimestampMs))
			}
			ms := start + int64(math.Round(t*1e3))
			if j > 0 && ms < prevMs {
				ms = prevMs
				info.Clamped++
			}
			prevMs = ms
			e := Entry{InputLength: *q.In, OutputLength: *q.Out, HashIDs: q.HashIDs}
			if err := Check(e); err != nil {
				return nil, info, fmt.Errorf("%w: weka line %d request %d: %v", ErrTrace, n, j, err)
			}
			if len(e.HashIDs) > 0 {
				ids := make([]int64, len(e.HashIDs))
				for k, h := range e.HashIDs {
					if h > math.MaxInt64/2-idBase {
						return nil, info, fmt.Errorf("%w: weka line %d request %d: hash id %d too large", ErrTrace, n, j, h)
					}
					ids[k] = idBase + h
					maxID = max(maxID, h)
				}
				e.HashIDs = ids
			}
			rows = append(rows, row{e: e, ms: ms, conv: conv, pos: j, parentConv: j > 0})
		}
		idBase += maxID + 1
	}
	if len(rows) == 0 {
		return nil, info, fmt.Errorf("%w: no conversations", ErrTrace)
	}
	// A conversation's request j-1 is rows' entry just before j within that conversation; keep
	// its position across the sort.
	first := make([]int, 0, info.Conversations) // position in rows of each conversation's request 0
	for k, r := range rows {
		if r.pos == 0 {
			first = append(first, k)
		}
	}
	order := make([]int, len(rows))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ra, rb := &rows[a], &rows[b]
		return cmp.Or(cmp.Compare(ra.ms, rb.ms), cmp.Compare(ra.conv, rb.conv), cmp.Compare(ra.pos, rb.pos))
	})
	at := make([]int, len(rows)) // position in rows -> index in the trace
	for k, p := range order {
		at[p] = k
	}
	out := make([]Entry, len(rows))
	t0 := rows[order[0]].ms
	for k, p := range order {
		r := rows[p]
		e := r.e
		e.TimestampMs = r.ms - t0
		if r.parentConv {
			e.After = int64(at[first[r.conv]+r.pos-1]) + 1
		}
		out[k] = e
	}
	return out, info, nil
}
