package load

import (
	"slices"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
)

// Trace entries that wait for a parent (a Bailian conversation's later turns, trace.Entry.After)
// or for several (a join: a WEKA conversation's turn after a group of sub-agents,
// trace.Entry.Join): the open-loop dispatcher sends an entry at its trace offset as always,
// unless one of its parents' requests has not ended by then; such an entry waits, in a goroutine
// of its own, for its parents' records, and is sent at metric.AfterParents of its offset and
// their ends (metric.Ended), its t_sched. The dispatcher goes on to the next entries meanwhile,
// so a waiting turn never holds up the arrivals after it. A parent that was never sent (the row
// was cut) releases its children unsent.

// joined marks, in a parents slice, an entry (or request) that waits for several: its parents
// are in the joins map.
const joined = -2

// entryDeps are a trace's parents (-1: none, joined: several, in joins) and turns (1 + the
// deepest parent's turn), by entry.
type entryDeps struct {
	parents, turns []int32
	joins          map[int32][]int32
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
		switch {
		case e.After > 0:
			d.parents[i] = int32(e.After - 1)
		case len(e.Join) > 0:
			if d.joins == nil {
				d.joins = map[int32][]int32{}
			}
			ps := make([]int32, len(e.Join))
			for k, p := range e.Join {
				ps[k] = int32(p)
			}
			d.parents[i], d.joins[int32(i)] = joined, ps
		}
	}
	return d
}

// of returns the entries entry i waits for, ascending (nil: none).
func (d *entryDeps) of(i int) []int32 {
	switch p := d.parents[i]; {
	case p >= 0:
		return d.parents[i : i+1]
	case p == joined:
		return d.joins[int32(i)]
	}
	return nil
}

// traceEntry is the record's trace_entry of a measured request of entry (nil when the trace
// names no parents): its one parent as parent, a join's parents as parents.
func (tp *TracePlan) traceEntry(entry int64) *contract.TraceEntry {
	if tp == nil || tp.deps == nil || entry < 0 || entry >= int64(len(tp.deps.parents)) {
		return nil
	}
	te := &contract.TraceEntry{Entry: entry, Turn: int64(tp.deps.turns[entry])}
	switch ps := tp.deps.of(int(entry)); {
	case len(ps) == 1:
		p := int64(ps[0])
		te.Parent = &p
	case len(ps) > 1:
		te.Parents = make([]int64, len(ps))
		for k, p := range ps {
			te.Parents[k] = int64(p)
		}
	}
	return te
}

// depGate tracks, for one open-loop row, which requests wait for parents and when each parent
// ended.
type depGate struct {
	epoch time.Time
	// parent, per request of the row's measured order: its parent's position, -1, or joined
	// (its parents' positions are in joins).
	parent []int32
	joins  map[int32][]int32
	done   map[int32]chan struct{} // per parent: closed once its record is built (or it is dropped); read-only once built
	// ended and drop, per request: metric.Ended of its record, and true when it was never sent;
	// each written once, by finish, before its done channel closes, and read only after.
	ended []int64
	drop  []bool
}

// newDepGate returns the gate of a trace row whose measured requests ask the entries order (the
// row's corpus order), or nil when none of them waits for another. A request waits for those of
// its entry's parents that the row asks before it.
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
	var pks []int32
	for k, ci := range order {
		g.parent[k] = -1
		if ci < 0 || ci >= int64(len(tp.deps.parents)) {
			continue
		}
		pks = pks[:0]
		for _, p := range tp.deps.of(int(ci)) {
			if pk, ok := position(int64(p)); ok && pk < int32(k) {
				pks = append(pks, pk)
				if g.done[pk] == nil {
					g.done[pk] = make(chan struct{})
				}
			}
		}
		switch len(pks) {
		case 0:
		case 1:
			g.parent[k] = pks[0]
		default:
			if g.joins == nil {
				g.joins = map[int32][]int32{}
			}
			g.parent[k], g.joins[int32(k)] = joined, slices.Clone(pks)
		}
	}
	return g
}

// parentsOf returns the positions of request k's parents (nil when k waits for none).
func (g *depGate) parentsOf(k int) []int32 {
	if g == nil {
		return nil
	}
	switch p := g.parent[k]; {
	case p >= 0:
		return g.parent[k : k+1]
	case p == joined:
		return g.joins[int32(k)]
	}
	return nil
}

// allDone reports whether all of parents have finished, without waiting.
func (g *depGate) allDone(parents []int32) bool {
	for _, pk := range parents {
		select {
		case <-g.done[pk]:
		default:
			return false
		}
	}
	return true
}

// wait waits until all of parents have finished (true) or stop is done (false).
func (g *depGate) wait(stop <-chan struct{}, parents []int32) bool {
	for _, pk := range parents {
		select {
		case <-g.done[pk]:
		case <-stop:
			return false
		}
	}
	return true
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

// after is the scheduled send of a request whose offset falls at at and whose parents have all
// finished: metric.AfterParents on the records' clock; ok is false when one of them was never
// sent.
func (g *depGate) after(at time.Time, parents []int32) (time.Time, bool) {
	ends := make([]int64, len(parents))
	for k, pk := range parents {
		if g.drop[pk] {
			return at, false
		}
		ends[k] = g.ended[pk]
	}
	return g.epoch.Add(time.Duration(metric.AfterParents(int64(at.Sub(g.epoch)), ends...))), true
}
