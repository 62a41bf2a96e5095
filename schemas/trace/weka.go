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
	// Subagents counts the sub-agents (their requests are entries too), and Joins the
	// conversation requests that wait for a group of several sub-agents.
	Subagents, Joins int
	// Clamped counts the requests whose t came before a request they wait for: such a request
	// is imported at the latest of those times (it cannot be sent before them).
	Clamped int
}

// wekaConversation is one conversation of a WEKA trace: its documented top-level keys.
type wekaConversation struct {
	ID           *string           `json:"id"`
	Models       []string          `json:"models"`
	BlockSize    *int64            `json:"block_size"`
	HashIDScope  *string           `json:"hash_id_scope"`
	ToolTokens   *int64            `json:"tool_tokens"`
	SystemTokens *int64            `json:"system_tokens"`
	Requests     []json.RawMessage `json:"requests"`
	Analysis     json.RawMessage   `json:"_analysis"`
	Totals       json.RawMessage   `json:"totals"`
}

// wekaRequest is one request of a conversation or a sub-agent: its documented keys.
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

// wekaSubagent is a sub-agent of a conversation ("type": "subagent"): its documented keys.
type wekaSubagent struct {
	T            *float64          `json:"t"`
	Type         *string           `json:"type"`
	AgentID      *string           `json:"agent_id"`
	SubagentType *string           `json:"subagent_type"`
	DurationMs   *float64          `json:"duration_ms"`
	TotalTokens  *int64            `json:"total_tokens"`
	ToolUseCount *int64            `json:"tool_use_count"`
	Status       *string           `json:"status"`
	Models       []string          `json:"models"`
	ToolTokens   *int64            `json:"tool_tokens"`
	SystemTokens *int64            `json:"system_tokens"`
	Requests     []json.RawMessage `json:"requests"`
}

// wekaType returns a request's "type" ("" when it has none or it is not a string).
func wekaType(raw json.RawMessage) string {
	var kind struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &kind) != nil {
		return ""
	}
	return kind.Type
}

// wekaWhere names request j of a conversation, or request m of the sub-agent that is its
// request j (m -1: the request itself), for an error.
func wekaWhere(j, m int) string {
	if m < 0 {
		return fmt.Sprintf("request %d", j)
	}
	return fmt.Sprintf("request %d (a sub-agent) request %d", j, m)
}

// ImportWEKA reads a WEKA agentic coding trace: one conversation object per line (JSONL, the
// published datasets' shape) or a single conversation object, each {"id", "block_size",
// "hash_id_scope"?, "requests": [{"t": s from the conversation's start, "in", "out", "hash_ids",
// ...} or a sub-agent, ...], ...}. A conversation's requests run one after another, so each
// waits for the one before it (its parent); conversation c starts staggerMs × c ms after the
// first (0: all at once).
//
// A sub-agent ({"type": "subagent", "t": s from the conversation's start, "requests": [{"t": s
// from the sub-agent's start, ...}], ...}) is a conversation of its own spawned by the request
// before it: its requests run one after another, the first waiting for that request. Sub-agents
// next to each other in "requests" are a group spawned together: they run beside each other,
// and the conversation's next request waits for the last request of each (a join, at most
// MaxParents of them); a group whose sub-agents made no request is skipped. A sub-agent inside
// a sub-agent is refused.
//
// Hash ids number blocks per conversation ("hash_id_scope" "local", the default: each
// conversation's are moved past the previous ones', so no block is shared across them) or across
// the file ("global": kept as they are); a sub-agent's share its conversation's numbering (an
// equal id is an equal block). A request stamped before one it waits for is imported at the
// latest of their times. The entries come sorted by time (in file order at equal times), in
// whole ms (rounded), from the first. Bounded by MaxBytes, MaxEntries and Check; errors wrap
// ErrTrace and name the line, the request and the key.
func ImportWEKA(r io.Reader, staggerMs int64) ([]Entry, WEKAImport, error) {
	var info WEKAImport
	if staggerMs < 0 || staggerMs > MaxTimestampMs {
		return nil, info, fmt.Errorf("%w: stagger %d ms: want 0 to %d", ErrTrace, staggerMs, int64(MaxTimestampMs))
	}
	data, err := readAtMost(r)
	if err != nil {
		return nil, info, err
	}
	// rows are the requests in file order; parents are positions in rows.
	type row struct {
		e       Entry
		ms      int64
		parents []int
	}
	var rows []row
	var idBase int64
	var scope string
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
		sc := "local"
		if cv.HashIDScope != nil {
			sc = *cv.HashIDScope
		}
		if sc != "local" && sc != "global" {
			return nil, info, fmt.Errorf(`%w: weka line %d: hash_id_scope %q: want "local" (ids per conversation) or "global" (ids across the file)`, ErrTrace, n, sc)
		}
		if scope != "" && sc != scope {
			return nil, info, fmt.Errorf("%w: weka line %d: hash_id_scope %q, the first conversation's is %q: one trace numbers its blocks one way", ErrTrace, n, sc, scope)
		}
		scope = sc
		start := staggerMs * int64(info.Conversations)
		info.Conversations++
		var maxID int64
		// add appends request q (request j of the conversation, or request m of the sub-agent
		// that is its request j; m -1 otherwise), at t s from the conversation's start, waiting for
		// the rows at parents.
		add := func(j, m int, q wekaRequest, t float64, parents []int) (int, error) {
			where := func() string { return wekaWhere(j, m) }
			if len(rows) >= MaxEntries {
				return 0, fmt.Errorf("%w: more than %d entries", ErrTrace, MaxEntries)
			}
			if q.T == nil || q.In == nil || q.Out == nil {
				return 0, fmt.Errorf(`%w: weka line %d %s: want {"t": s, "in", "out", "hash_ids"?, ...}`, ErrTrace, n, where())
			}
			if math.IsNaN(t) || *q.T < 0 || t < 0 || t*1e3 > MaxTimestampMs-float64(start) {
				return 0, fmt.Errorf("%w: weka line %d %s: t %g: want seconds from 0 with the conversation's start within %d ms", ErrTrace, n, where(), *q.T, int64(MaxTimestampMs))
			}
			ms := start + int64(math.Round(t*1e3))
			clamped := false
			for _, p := range parents {
				if rows[p].ms > ms {
					ms, clamped = rows[p].ms, true
				}
			}
			if clamped {
				info.Clamped++
			}
			e := Entry{InputLength: *q.In, OutputLength: *q.Out, HashIDs: q.HashIDs}
			if err := Check(e); err != nil {
				return 0, fmt.Errorf("%w: weka line %d %s: %v", ErrTrace, n, where(), err)
			}
			if len(e.HashIDs) > 0 {
				ids := make([]int64, len(e.HashIDs))
				for k, h := range e.HashIDs {
					if h > math.MaxInt64/2-idBase {
						return 0, fmt.Errorf("%w: weka line %d %s: hash id %d too large", ErrTrace, n, where(), h)
					}
					ids[k] = idBase + h
					maxID = max(maxID, h)
				}
				e.HashIDs = ids
			}
			rows = append(rows, row{e: e, ms: ms, parents: parents})
			return len(rows) - 1, nil
		}
		var prev []int   // what the conversation's next request waits for
		var spawn []int  // what the sub-agents of the current group wait for (nil: no group)
		var joined []int // the last request of each sub-agent of the current group
		inGroup := false
		for j, raw := range cv.Requests {
			where := func() string { return wekaWhere(j, -1) }
			if wekaType(raw) == "subagent" {
				var sa wekaSubagent
				if err := jsonstrict.DecodeInto(raw, &sa); err != nil {
					return nil, info, fmt.Errorf("%w: weka line %d %s (a sub-agent): %v", ErrTrace, n, where(), err)
				}
				if sa.T == nil || sa.Requests == nil {
					return nil, info, fmt.Errorf(`%w: weka line %d %s: want a sub-agent {"type": "subagent", "t": s, "requests": [...], ...}`, ErrTrace, n, where())
				}
				if !(*sa.T >= 0 && *sa.T*1e3 <= MaxTimestampMs-float64(start)) { // NaN fails too
					return nil, info, fmt.Errorf("%w: weka line %d %s (a sub-agent): t %g: want seconds from 0 with the conversation's start within %d ms", ErrTrace, n, where(), *sa.T, int64(MaxTimestampMs))
				}
				if !inGroup {
					inGroup, spawn, joined = true, prev, nil
				}
				info.Subagents++
				last := spawn
				for m, rq := range sa.Requests {
					if wekaType(rq) == "subagent" {
						return nil, info, fmt.Errorf("%w: weka line %d %s: a sub-agent inside a sub-agent is not replayed (the format nests one level)", ErrTrace, n, wekaWhere(j, m))
					}
					var q wekaRequest
					if err := jsonstrict.DecodeInto(rq, &q); err != nil {
						return nil, info, fmt.Errorf("%w: weka line %d %s: %v", ErrTrace, n, wekaWhere(j, m), err)
					}
					tSec := math.NaN()
					if q.T != nil {
						tSec = *sa.T + *q.T
					}
					k, err := add(j, m, q, tSec, last)
					if err != nil {
						return nil, info, err
					}
					last = []int{k}
				}
				if len(sa.Requests) > 0 {
					if len(joined) == MaxParents {
						return nil, info, fmt.Errorf("%w: weka line %d %s: a group of more than %d sub-agents (the next request would wait for more than %d)", ErrTrace, n, where(), MaxParents, MaxParents)
					}
					joined = append(joined, last[0])
				}
				continue
			}
			if inGroup {
				inGroup = false
				if len(joined) > 0 {
					prev = joined
					if len(joined) > 1 {
						info.Joins++
					}
				}
			}
			var q wekaRequest
			if err := jsonstrict.DecodeInto(raw, &q); err != nil {
				return nil, info, fmt.Errorf("%w: weka line %d %s: %v", ErrTrace, n, where(), err)
			}
			tSec := math.NaN()
			if q.T != nil {
				tSec = *q.T
			}
			k, err := add(j, -1, q, tSec, prev)
			if err != nil {
				return nil, info, err
			}
			prev = []int{k}
		}
		if scope == "local" {
			idBase += maxID + 1
		}
	}
	if len(rows) == 0 {
		return nil, info, fmt.Errorf("%w: no conversations", ErrTrace)
	}
	// Sort by time, in file order at equal times: a request comes after those it waits for (its
	// time is at least theirs, and it follows them in the file).
	order := make([]int, len(rows))
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rows[a].ms, rows[b].ms) })
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
		switch len(r.parents) {
		case 0:
		case 1:
			e.After = int64(at[r.parents[0]]) + 1
		default:
			e.Join = make([]int64, len(r.parents))
			for m, pp := range r.parents {
				e.Join[m] = int64(at[pp])
			}
			slices.Sort(e.Join)
		}
		out[k] = e
	}
	return out, info, nil
}
