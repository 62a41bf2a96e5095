package load

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
)

// TestRunTraceParents: a trace whose later turns wait for their parents (trace.Entry.After).
// A turn whose parent is still answering is sent when the parent's request ended (its t_sched is
// metric.Ended of the parent's record), a turn whose parent ended before its offset is sent at
// its offset, and an independent entry is never held up by a waiting one.
func TestRunTraceParents(t *testing.T) {
	// A (0 ms, 40 tokens at 2 ms: about 85 ms) <- B (10 ms) <- E (30 ms); C (20 ms, 1 token)
	// <- D (400 ms); F (40 ms) on its own.
	es := []trace.Entry{
		{TimestampMs: 0, InputLength: 20, OutputLength: 40},
		{TimestampMs: 10, InputLength: 30, OutputLength: 4, After: 1},
		{TimestampMs: 20, InputLength: 10, OutputLength: 1},
		{TimestampMs: 30, InputLength: 40, OutputLength: 4, After: 2},
		{TimestampMs: 40, InputLength: 10, OutputLength: 2},
		{TimestampMs: 400, InputLength: 12, OutputLength: 2, After: 3},
	}
	const a, b, c, e, f, d = 0, 1, 2, 3, 4, 5
	recs := replayTrace(t, es)
	// Each record says which entry it replayed, its parent and its turn.
	for k, w := range []struct {
		parent int64
		turn   int64
	}{a: {-1, 1}, b: {a, 2}, c: {-1, 1}, e: {b, 3}, f: {-1, 1}, d: {c, 2}} {
		te := recs[int64(k)].TraceEntry
		parent := int64(-1)
		if te != nil && te.Parent != nil {
			parent = *te.Parent
		}
		if te == nil || te.Entry != int64(k) || parent != w.parent || te.Turn != w.turn {
			t.Errorf("entry %d: trace_entry %+v, want parent %d turn %d", k, te, w.parent, w.turn)
		}
	}
	ended := func(k int64) int64 {
		r := metric.RequestOf(recs[k])
		return metric.Ended(&r)
	}
	origin := recs[a].TSchedNs
	at := func(k int64) int64 { return origin + es[k].TimestampMs*1e6 }
	for _, x := range []struct {
		name      string
		k, parent int64
	}{{"B waits for A", b, a}, {"E waits for B", e, b}} {
		want := metric.AfterParents(at(x.k), ended(x.parent))
		if want == at(x.k) {
			t.Fatalf("%s: the parent ended at %d, before the offset %d: the trace does not test waiting", x.name, ended(x.parent), at(x.k))
		}
		if got := recs[x.k].TSchedNs; got != want {
			t.Errorf("%s: scheduled at %d, want the parent's end %d", x.name, got, want)
		}
		if *recs[x.k].TSendNs < *recs[x.parent].TCloseNs {
			t.Errorf("%s: sent at %d, before the parent's stream closed at %d", x.name, *recs[x.k].TSendNs, *recs[x.parent].TCloseNs)
		}
	}
	for _, k := range []int64{c, f, d} {
		if got := recs[k].TSchedNs; got != at(k) {
			t.Errorf("entry %d: scheduled at %d, want its offset %d (independent, or its parent ended before)", k, got, at(k))
		}
	}
	if ended(c) >= at(d) {
		t.Fatalf("C ended at %d, after D's offset %d", ended(c), at(d))
	}
	if *recs[c].TSendNs > at(c)+50e6 {
		t.Errorf("C, independent, was sent %.1f ms after its offset: held up by the waiting turns", float64(*recs[c].TSendNs-at(c))/1e6)
	}
}

// replayTrace replays entries against qualsim (3 ms to the first token, 2 ms a token) at time
// scale 1 and returns the records by index, after checking that none failed.
func replayTrace(t *testing.T, es []trace.Entry) map[int64]*contract.RequestRecordDoc {
	t.Helper()
	dir := t.TempDir()
	var buf bytes.Buffer
	if err := WriteTrace(&buf, es); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	scale, wpt, block := 1.0, 0.75, int64(16)
	corpus := contract.Corpus{Source: contract.CorpusSourceTrace, Path: "trace.jsonl", Digest: evidence.DigestOf(buf.Bytes()), TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt, BlockTokens: &block}
	tp, err := ResolveTrace(context.Background(), corpus, dir)
	if err != nil {
		t.Fatal(err)
	}
	q := startQualsim(t, false, "--ttft", "3ms", "--token-interval", "2ms", "--slots", "16")
	cs := servingCase([]int64{8}, 1, 0, 64)
	cs.Corpus = &corpus
	plan := Plan{CaseID: "parents", Case: cs, BaseURL: q.url, ModelID: "qualsim-tiny", Trace: tp, Seed: 1, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	if row.Row.Requests != int64(len(es)) || row.Row.Failures != 0 {
		t.Fatalf("%d requests, %d failed", row.Row.Requests, row.Row.Failures)
	}
	recs := map[int64]*contract.RequestRecordDoc{}
	for i := range row.Records {
		recs[row.Records[i].Index] = &row.Records[i]
	}
	return recs
}

// TestRunTraceJoin: an entry that waits for several (a join, trace.Entry.Join) is sent when the
// last of its parents ended (metric.AfterParents of its offset and their ends), after every
// parent's stream closed, and its record names the parents and its turn (1 + the deepest).
func TestRunTraceJoin(t *testing.T) {
	// S (0 ms) spawns A (1 ms, 40 tokens: about 85 ms) and B (1 ms, 1 token); J (5 ms) joins A
	// and B; K (6 ms) follows J. B's chain is one deeper: S <- B0 (B) <- B1.
	es := []trace.Entry{
		{TimestampMs: 0, InputLength: 10, OutputLength: 1},
		{TimestampMs: 1, InputLength: 20, OutputLength: 40, After: 1},
		{TimestampMs: 1, InputLength: 10, OutputLength: 1, After: 1},
		{TimestampMs: 2, InputLength: 10, OutputLength: 1, After: 3},
		{TimestampMs: 5, InputLength: 30, OutputLength: 2, Join: []int64{1, 3}},
		{TimestampMs: 6, InputLength: 30, OutputLength: 2, After: 5},
	}
	const s, a, b0, b1, j, k = 0, 1, 2, 3, 4, 5
	recs := replayTrace(t, es)
	te := recs[j].TraceEntry
	if te == nil || te.Entry != j || te.Parent != nil || !slices.Equal(te.Parents, []int64{a, b1}) || te.Turn != 4 {
		t.Fatalf("the join's trace_entry %+v, want parents [%d %d] turn 4", te, a, b1)
	}
	if te := recs[b1].TraceEntry; te == nil || te.Parent == nil || *te.Parent != b0 || te.Parents != nil || te.Turn != 3 {
		t.Fatalf("b1's trace_entry %+v", te)
	}
	ended := func(k int64) int64 {
		r := metric.RequestOf(recs[k])
		return metric.Ended(&r)
	}
	origin := recs[s].TSchedNs
	at := origin + es[j].TimestampMs*1e6
	want := metric.AfterParents(at, ended(a), ended(b1))
	if ended(a) <= ended(b1) || want != ended(a) {
		t.Fatalf("A ended at %d, B1 at %d, J's offset at %d: the trace does not test waiting for the later parent", ended(a), ended(b1), at)
	}
	if got := recs[j].TSchedNs; got != want {
		t.Errorf("J scheduled at %d, want the later parent's end %d (B1 ended at %d)", got, want, ended(b1))
	}
	for _, p := range []int64{a, b1} {
		if *recs[j].TSendNs < *recs[p].TCloseNs {
			t.Errorf("J sent at %d, before parent %d's stream closed at %d", *recs[j].TSendNs, p, *recs[p].TCloseNs)
		}
	}
	if got := recs[k].TSchedNs; got != metric.AfterParents(origin+es[k].TimestampMs*1e6, ended(j)) {
		t.Errorf("K scheduled at %d, want J's end %d", got, ended(j))
	}
}

// TestDepGateJoin: a join waits until every parent has finished, is scheduled at the latest
// parent's end (metric.AfterParents), and is released unsent when one parent was never sent; a
// join whose parents the row does not ask before it waits only for those it does.
func TestDepGateJoin(t *testing.T) {
	es := []trace.Entry{{}, {After: 1}, {After: 1}, {Join: []int64{1, 2}}}
	tp := &TracePlan{deps: traceDeps(es)}
	epoch := time.Unix(100, 0)
	rec := func(closeNs int64) *contract.RequestRecordDoc {
		return &contract.RequestRecordDoc{TSchedNs: 1, TCloseNs: &closeNs}
	}
	g := newDepGate(tp, []int64{0, 1, 2, 3}, epoch)
	pks := g.parentsOf(3)
	if !slices.Equal(pks, []int32{1, 2}) || !slices.Equal(g.parentsOf(1), []int32{0}) || g.parentsOf(0) != nil {
		t.Fatalf("parents %v %v %v", pks, g.parentsOf(1), g.parentsOf(0))
	}
	g.finish(0, rec(5))
	g.finish(1, rec(40))
	if g.allDone(pks) {
		t.Fatal("the join is ready with one parent unfinished")
	}
	g.finish(2, rec(70))
	if !g.allDone(pks) || !g.wait(nil, pks) {
		t.Fatal("the join is not ready with both parents finished")
	}
	if at, ok := g.after(epoch.Add(10), pks); !ok || at != epoch.Add(70) {
		t.Fatalf("the join at %v %v, want the later parent's end", at.Sub(epoch), ok)
	}
	if at, ok := g.after(epoch.Add(90), pks); !ok || at != epoch.Add(90) {
		t.Fatalf("the join at %v %v, want its offset", at.Sub(epoch), ok)
	}
	// Parent 2 never sent: the join is released unsent.
	g = newDepGate(tp, []int64{0, 1, 2, 3}, epoch)
	g.finish(0, rec(5))
	g.finish(1, rec(40))
	g.finish(2, nil)
	if _, ok := g.after(epoch.Add(10), g.parentsOf(3)); ok {
		t.Fatal("a join whose parent was never sent is sent")
	}
	// A row that asks entry 2 after the join: the join waits for entry 1 only.
	g = newDepGate(tp, []int64{0, 1, 3, 2}, epoch)
	if got := g.parentsOf(2); !slices.Equal(got, []int32{1}) {
		t.Fatalf("parents of the join asked before one of them: %v", got)
	}
	stop := make(chan struct{})
	close(stop)
	if g.wait(stop, g.parentsOf(2)) {
		t.Fatal("wait returned true when stopped before the parent finished")
	}
}
