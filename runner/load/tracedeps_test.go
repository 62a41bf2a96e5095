package load

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
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
	dir := t.TempDir()
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
	if row.Row.Requests != 6 || row.Row.Failures != 0 {
		t.Fatalf("%d requests, %d failed", row.Row.Requests, row.Row.Failures)
	}
	recs := map[int64]*contract.RequestRecordDoc{}
	for i := range row.Records {
		recs[row.Records[i].Index] = &row.Records[i]
	}
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
		want := metric.AfterParent(at(x.k), ended(x.parent))
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
