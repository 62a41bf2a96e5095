package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"strconv"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// Limits on a trace (untrusted input).
const (
	// MaxBytes bounds a trace file (JSONL, Mooncake JSONL or Azure CSV).
	MaxBytes = 256 << 20
	// MaxEntries bounds the requests of one trace.
	MaxEntries = 1_000_000
	// MaxLineBytes bounds one line of a trace.
	MaxLineBytes = 1 << 20
	// MaxHashIDs bounds the prefix blocks of one request.
	MaxHashIDs = 16384
	// MaxLength bounds one request's input or output length (tokens).
	MaxLength = 1 << 20
	// MaxTimestampMs bounds a timestamp (about 35 years in ms: far beyond any trace, far from
	// overflow once scaled to nanoseconds).
	MaxTimestampMs = 1 << 40
	// MaxParents bounds the entries one entry waits for (a join's parents: the sub-agents of one
	// WEKA group). The request record's trace_entry.parents carries the same bound
	// (cue/request/v1/request.cue; TestMaxParentsIsTheContracts holds them equal).
	MaxParents = 64
)

// ErrTrace marks a trace that cannot be read or imported.
var ErrTrace = errors.New("invalid trace")

// Entry is one request of a trace.
type Entry struct {
	TimestampMs  int64   `json:"timestamp"`
	InputLength  int64   `json:"input_length"`
	OutputLength int64   `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids,omitempty"`
	// After is 1 + the index of the one earlier entry whose answer this one waits for (its
	// parent: the previous turn of its conversation or agent; "parent" in the file, an index from
	// 0), and 0 for an entry that waits for nothing or for several (Join). The zero value is an
	// independent entry.
	After int64 `json:"-"`
	// Join, for an entry that waits for several earlier entries (a join: a conversation's next
	// turn after a group of sub-agents waits for each one's last request), are their indices:
	// 2 to MaxParents of them, ascending ("parents" in the file); nil otherwise. An entry has
	// After or Join, never both.
	Join []int64 `json:"-"`
}

// Waits reports whether e waits for any earlier entry.
func (e Entry) Waits() bool { return e.After > 0 || len(e.Join) > 0 }

// Parents yields the indices of the entries e waits for, ascending: none, its one parent
// (After), or the entries of its join (Join).
func (e Entry) Parents() iter.Seq[int] {
	return func(yield func(int) bool) {
		if e.After > 0 {
			yield(int(e.After - 1))
			return
		}
		for _, p := range e.Join {
			if !yield(int(p)) {
				return
			}
		}
	}
}

// Turns returns each entry's turn, the depth of its parent chain: 1 for an entry that waits for
// none, else 1 + the largest turn of the entries it waits for (Read keeps each parent before its
// child). nil when no entry names a parent. The runner records it (trace_entry.turn) and the
// verifier recomputes it.
func Turns(entries []Entry) []int32 {
	var turns []int32
	for i, e := range entries {
		if !e.Waits() {
			continue
		}
		if turns == nil {
			turns = make([]int32, len(entries))
			for k := range turns {
				turns[k] = 1
			}
		}
		var deepest int32
		for p := range e.Parents() {
			deepest = max(deepest, turns[p])
		}
		turns[i] = deepest + 1
	}
	return turns
}

type line struct {
	Timestamp    *int64  `json:"timestamp"`
	InputLength  *int64  `json:"input_length"`
	OutputLength *int64  `json:"output_length"`
	HashIDs      []int64 `json:"hash_ids"`
	Parent       *int64  `json:"parent"`
	Parents      []int64 `json:"parents"`
}

// DecodeLine decodes one strict JSON trace line (no unknown or duplicate keys) and checks it.
func DecodeLine(b []byte) (Entry, error) {
	if len(b) > MaxLineBytes {
		return Entry{}, fmt.Errorf("longer than %d bytes", MaxLineBytes)
	}
	var l line
	if err := jsonstrict.DecodeInto(b, &l); err != nil {
		return Entry{}, err
	}
	if l.Timestamp == nil || l.InputLength == nil || l.OutputLength == nil {
		return Entry{}, fmt.Errorf(`want {"timestamp": ms, "input_length": n, "output_length": n}`)
	}
	e := Entry{TimestampMs: *l.Timestamp, InputLength: *l.InputLength, OutputLength: *l.OutputLength, HashIDs: l.HashIDs}
	if l.Parent != nil {
		if l.Parents != nil {
			return Entry{}, fmt.Errorf(`both "parent" and "parents": name one parent as "parent", several as "parents"`)
		}
		if *l.Parent < 0 || *l.Parent >= MaxEntries {
			return Entry{}, fmt.Errorf("parent %d: want the index (from 0) of an earlier entry", *l.Parent)
		}
		e.After = *l.Parent + 1
	}
	if l.Parents != nil {
		if len(l.Parents) < 1 || len(l.Parents) > MaxParents {
			return Entry{}, fmt.Errorf("%d parents: want 1 to %d", len(l.Parents), MaxParents)
		}
		for k, p := range l.Parents {
			if p < 0 || p >= MaxEntries {
				return Entry{}, fmt.Errorf("parents[%d] %d: want the index (from 0) of an earlier entry", k, p)
			}
			if k > 0 && p <= l.Parents[k-1] {
				return Entry{}, fmt.Errorf("parents[%d] %d after %d: want the indices in increasing order, each once", k, p, l.Parents[k-1])
			}
		}
		if len(l.Parents) == 1 {
			e.After = l.Parents[0] + 1
		} else {
			e.Join = l.Parents
		}
	}
	return e, Check(e)
}

// Check checks one entry's bounds.
func Check(e Entry) error {
	switch {
	case e.TimestampMs < 0 || e.TimestampMs > MaxTimestampMs:
		return fmt.Errorf("timestamp %d: want 0 to %d ms", e.TimestampMs, int64(MaxTimestampMs))
	case e.InputLength < 1 || e.InputLength > MaxLength:
		return fmt.Errorf("input_length %d: want 1 to %d", e.InputLength, MaxLength)
	case e.OutputLength < 1 || e.OutputLength > MaxLength:
		return fmt.Errorf("output_length %d: want 1 to %d", e.OutputLength, MaxLength)
	case len(e.HashIDs) > MaxHashIDs:
		return fmt.Errorf("%d hash_ids, more than %d", len(e.HashIDs), MaxHashIDs)
	}
	for _, h := range e.HashIDs {
		if h < 0 {
			return fmt.Errorf("hash id %d is negative", h)
		}
	}
	return nil
}

// Read reads a qualkit trace: strict JSON per line, no blank line except after the last,
// timestamps non-decreasing, 1 to MaxEntries lines within MaxBytes, each line within Check's
// bounds. Errors wrap ErrTrace and name the line.
func Read(data []byte) ([]Entry, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTrace, len(data), MaxBytes)
	}
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrTrace)
	}
	if len(lines) > MaxEntries {
		return nil, fmt.Errorf("%w: more than %d entries", ErrTrace, MaxEntries)
	}
	out := make([]Entry, 0, len(lines))
	for i, l := range lines {
		e, err := DecodeLine(l)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrTrace, i+1, err)
		}
		if i > 0 && e.TimestampMs < out[i-1].TimestampMs {
			return nil, fmt.Errorf("%w: line %d: timestamp %d before the previous line's %d: a trace is in timestamp order", ErrTrace, i+1, e.TimestampMs, out[i-1].TimestampMs)
		}
		for p := range e.Parents() {
			if p >= i {
				return nil, fmt.Errorf("%w: line %d: parent %d is not an earlier entry (this one is %d, from 0): an entry waits only for entries before it", ErrTrace, i+1, p, i)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Write writes entries as a qualkit trace (one compact JSON object per line).
func Write(w io.Writer, entries []Entry) error {
	bw := bufio.NewWriter(w)
	for _, e := range entries {
		fmt.Fprintf(bw, `{"timestamp":%d,"input_length":%d,"output_length":%d`, e.TimestampMs, e.InputLength, e.OutputLength)
		if len(e.HashIDs) > 0 {
			bw.WriteString(`,"hash_ids":[`)
			for i, h := range e.HashIDs {
				if i > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString(strconv.FormatInt(h, 10))
			}
			bw.WriteByte(']')
		}
		if e.After > 0 {
			bw.WriteString(`,"parent":`)
			bw.WriteString(strconv.FormatInt(e.After-1, 10))
		} else if len(e.Join) > 0 {
			bw.WriteString(`,"parents":[`)
			for i, p := range e.Join {
				if i > 0 {
					bw.WriteByte(',')
				}
				bw.WriteString(strconv.FormatInt(p, 10))
			}
			bw.WriteByte(']')
		}
		bw.WriteString("}\n")
	}
	return bw.Flush()
}

// MaxOffsetNs bounds a scheduled offset: 2^62 ns (about 146 years), so that an offset, and a
// row's start plus it, stay far inside int64 nanoseconds.
const MaxOffsetNs = 1 << 62

// ErrSchedule marks a trace whose scaled schedule cannot be replayed: a time scale that is not
// a finite number above 0, or an entry whose scaled offset passes MaxOffsetNs.
var ErrSchedule = errors.New("trace schedule out of range")

// OffsetNs is an entry's scheduled offset in ns from a first entry at t0Ms: (timestamp − t0) ×
// timeScale ms, the float product times 10⁶ truncated to whole ns. The float is range-checked
// before it is converted: ok is false (and the offset 0) where it is not a number from 0 to
// MaxOffsetNs, never a wrapped or saturated integer.
func OffsetNs(timestampMs, t0Ms int64, timeScale float64) (ns int64, ok bool) {
	f := float64(timestampMs-t0Ms) * timeScale * 1e6
	if !(f >= 0 && f <= MaxOffsetNs) { // NaN fails both
		return 0, false
	}
	return int64(f), true
}

// Offsets are the entries' scheduled offsets from the replay's start in ns (OffsetNs from the
// first entry). An out-of-range schedule is an error wrapping ErrSchedule that names the first
// entry past it (index from 0, its line, timestamp and scaled offset in seconds).
func Offsets(entries []Entry, timeScale float64) ([]int64, error) {
	if !(timeScale > 0) || math.IsInf(timeScale, 0) {
		return nil, fmt.Errorf("%w: time_scale %g: want a finite number above 0", ErrSchedule, timeScale)
	}
	out := make([]int64, len(entries))
	for k, e := range entries {
		ns, ok := OffsetNs(e.TimestampMs, entries[0].TimestampMs, timeScale)
		if !ok {
			return nil, fmt.Errorf("%w: %v", ErrSchedule, SpanError(entries, k, timeScale, "more than int64 nanoseconds can hold (2^62 ns)"))
		}
		out[k] = ns
	}
	return out, nil
}

// SpanError describes entry k's scaled offset as past a limit: "entry k (line k+1, timestamp T
// ms) is scheduled S s after the first at time_scale X, LIMIT".
func SpanError(entries []Entry, k int, timeScale float64, limit string) error {
	s := float64(entries[k].TimestampMs-entries[0].TimestampMs) * timeScale / 1e3
	return fmt.Errorf("entry %d (line %d, timestamp %d ms) is scheduled %g s after the first at time_scale %g: %s", k, k+1, entries[k].TimestampMs, s, timeScale, limit)
}

// FirstPast returns the first entry whose scaled offset from the first entry is more than
// limitSeconds (or out of OffsetNs's range), or -1 when none is. Timestamps are in order, so it
// looks at the last entry first and scans only when that one is past.
func FirstPast(entries []Entry, timeScale, limitSeconds float64) int {
	past := func(e Entry) bool {
		s := float64(e.TimestampMs-entries[0].TimestampMs) * timeScale / 1e3
		_, ok := OffsetNs(e.TimestampMs, entries[0].TimestampMs, timeScale)
		return !ok || !(s <= limitSeconds)
	}
	if len(entries) == 0 || !past(entries[len(entries)-1]) {
		return -1
	}
	for k, e := range entries {
		if past(e) {
			return k
		}
	}
	return -1
}
