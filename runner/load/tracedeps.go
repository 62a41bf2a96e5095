package load

import (
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
)

// Trace entries that wait for a parent (a Bailian conversation's later turns, trace.Entry.After):
// the open-loop dispatcher sends an entry at its trace offset as always, unless its parent's
// request has not ended by then; such an entry waits, in a goroutine of its own, for the
// parent's record, and is sent at metric.AfterParent of its offset and the parent's end
// (metric.Ended), its t_sched. The dispatcher goes on to the next entries meanwhile, so a
// waiting turn never holds up the arrivals after it. A parent that was never sent (the row was
// cut) releases its children unsent.

// entryDeps are a trace's parents (-1: none) and turns (1 + the parent's turn), by entry.
type entryDeps struct {
	parents, turns []int32
}

// traceDeps returns the entries' parents and turns (trace.Turns), or nil when no entry has a
// parent.
func traceDeps(entries []TraceEntry) *entryDeps {
	turns := trace.Turns(entries)
	if turns == nil {
		return nil
	}
	d := &entryDeps{parents: make([]int32, len(entries)), turns: turns}
	for i, e := range entries {
		d.parents[i] = -1
		if p, ok := e.Parent(); ok {
			d.parents[i] = int32(p)
		}
	}
	return d
}

// traceEntry is the record's trace_entry of a measured request of entry (nil when the trace
// names no parents).
func (tp *TracePlan) traceEntry(entry int64) *contract.TraceEntry {
	if tp == nil || tp.deps == nil || entry < 0 || entry >= int64(len(tp.deps.parents)) {
		return nil
	}
	te := &contract.TraceEntry{Entry: entry, Turn: int64(tp.deps.turns[entry])}
	if p := tp.deps.parents[entry]; p >= 0 {
		pp := int64(p)
		te.Parent = &pp
	}
	return te
}

// depGate tracks, for one open-loop row, which requests wait for a parent and when each parent
// ended.
type depGate struct {
	epoch  time.Time
	parent []int32                 // per request of the row's measured order: its parent's position, or -1
	done   map[int32]chan struct{} // per parent: closed once its record is built (or it is dropped); read-only once built
	// ended and drop, per request: metric.Ended of its record, and true when it was never sent;
	// each written once, by finish, before its done channel closes, and read only after.
	ended []int64
	drop  []bool
}

// newDepGate returns the gate of a trace row whose measured requests ask the entries order (the
// row's corpus order), or nil when none of them waits for another.
func newDepGate(tp *TracePlan, order []int64, epoch time.Time) *depGate {
	if tp == nil || tp.deps == nil {
		return nil
	}
	identity := true // a row replays the trace's first len(order) entries in order
	for k, ci := range order {
		identity = identity && ci == int64(k)
	}
	var at map[int64]int32 // entry -> position in order, where that is not the entry itself
	if !identity {
		at = make(map[int64]int32, len(order))
		for k, ci := range order {
			at[ci] = int32(k)
		}
	}
	position := func(ci int64) (int32, bool) {
		if identity {
			return int32(ci), ci < int64(len(order))
		}
		k, ok := at[ci]
		return k, ok
	}
	g := &depGate{epoch: epoch, parent: make([]int32, len(order)), done: map[int32]chan struct{}{}, ended: make([]int64, len(order)), drop: make([]bool, len(order))}
	for k, ci := range order {
		g.parent[k] = -1
		if ci < 0 || ci >= int64(len(tp.deps.parents)) || tp.deps.parents[ci] < 0 {
			continue
		}
		if pk, ok := position(int64(tp.deps.parents[ci])); ok && pk < int32(k) {
			g.parent[k] = pk
			if g.done[pk] == nil {
				g.done[pk] = make(chan struct{})
			}
		}
	}
	return g
}

// parentOf returns the position of request k's parent, and false when k waits for none.
func (g *depGate) parentOf(k int) (int32, bool) {
	if g == nil || g.parent[k] < 0 {
		return 0, false
	}
	return g.parent[k], true
}

// finish records request k's end (its record rec, nil when it was never sent) and releases the
// requests that wait for it.
func (g *depGate) finish(k int, rec *contract.RequestRecordDoc) {
	if g == nil {
		return
	}
	ch := g.done[int32(k)]
	if ch == nil {
		return
	}
	if rec == nil {
		g.drop[k] = true
	} else {
		q := metric.RequestOf(rec)
		g.ended[k] = metric.Ended(&q)
	}
	close(ch)
}

// after is the scheduled send of a request whose offset falls at at and whose parent pk has
// finished: metric.AfterParent on the records' clock; ok is false when the parent was never sent.
func (g *depGate) after(at time.Time, pk int32) (time.Time, bool) {
	if g.drop[pk] {
		return at, false
	}
	return g.epoch.Add(time.Duration(metric.AfterParent(int64(at.Sub(g.epoch)), g.ended[pk]))), true
}
