package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// evidenceTrace writes a Mooncake-like trace small enough to replay in a test (inputs capped at
// 3,000 tokens, 3 s ticks scaled to 1.5 ms) and returns its corpus.
func evidenceTrace(t testing.TB, dir string, n int) contract.Corpus {
	t.Helper()
	es := mooncakeLike(5, n)
	for i := range es {
		es[i].InputLength = min(es[i].InputLength, 3000)
		es[i].OutputLength = min(es[i].OutputLength, 8)
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, es); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	scale, wpt, block := 0.0005, 0.75, int64(512)
	return contract.Corpus{Source: contract.CorpusSourceTrace, Path: "trace.jsonl", Digest: evidence.DigestOf(buf.Bytes()), TimeScale: &scale,
		LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt, BlockTokens: &block}
}

// evidenceCases are the trace cases whose recorded evidence the lazy plan must reproduce: the
// natural regime with warmups and a sampling seed, the cold regime (a nonce per request)
// replaying the first requests entries only, and the warm regime (a priming pass first).
func evidenceCases(corpus *contract.Corpus) []contract.Case {
	natural := servingCase([]int64{16}, 1, 3, 8)
	natural.OutputAssertions = nil
	natural.Corpus = corpus
	cold := natural
	cold.CacheRegime = contract.CacheRegimeCold
	cold.WarmupRequests = 0
	requests := int64(150)
	cold.Requests = &requests
	warm := natural
	warm.CacheRegime = contract.CacheRegimeWarm
	warm.WarmupRequests = 1
	warm.Requests = &requests
	return []contract.Case{natural, cold, warm}
}

// evidenceOf is what a run records that does not depend on timing: per record its index,
// warmup and priming, prompt id, seed, body digest, corpus index and cycle; per row its request
// count and prompt set.
func evidenceOf(res *Result) []string {
	var out []string
	for _, row := range res.Rows {
		out = append(out, fmt.Sprintf("row c%d r%d: %d requests, prompt set %s", row.Row.Concurrency, row.Row.Repetition, row.Row.Requests, row.Row.PromptSetSHA256))
		for _, r := range row.Records {
			s := fmt.Sprintf("%d %v %v %s %s", r.Index, r.Warmup, r.Priming, r.PromptID, r.BodyDigest)
			if r.Seed != nil {
				s += fmt.Sprintf(" seed %d", *r.Seed)
			}
			if r.CorpusIndex != nil {
				s += fmt.Sprintf(" corpus %d cycle %d", *r.CorpusIndex, *r.Cycle)
			}
			out = append(out, s)
		}
	}
	return out
}

// digestLines digests evidence lines.
func digestLines(lines []string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return evidence.DigestOf(b.Bytes())
}

// runEager replays cs with the prompts Resolve builds whole (the path before the lazy plan).
func runEager(t *testing.T, url, dir string, cs contract.Case) *Result {
	t.Helper()
	prompts, err := Resolve(*cs.Corpus, dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Plan{CaseID: "trace", Case: cs, BaseURL: url, ModelID: "qualsim-tiny", Prompts: prompts, Seed: 9, Epoch: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// eagerGolden are the digests of evidenceOf for evidenceCases replayed with runEager, taken at
// 2f22c48 (before the lazy plan): natural, cold, warm.
var eagerGolden = [3]string{
	"sha256:89d666549adc92ffeec86ebdc33f5bae8ae4047914a24720fe88d7940d2f53ac",
	"sha256:95e621bc8b038378212dab8a969ff3bcf1c0b34c365701160cdfcc5e8096517f",
	"sha256:3af5547c0a105f62422b799f0a18f6f816a07a0e040f4f70ca4dbb34b59d30b9",
}

// TestTraceEagerEvidenceGolden: the whole-prompt path still records what it recorded at 2f22c48.
func TestTraceEagerEvidenceGolden(t *testing.T) {
	dir := t.TempDir()
	corpus := evidenceTrace(t, dir, 400)
	url := startSim(t, fastSim())
	for k, cs := range evidenceCases(&corpus) {
		ev := evidenceOf(runEager(t, url, dir, cs))
		if got := digestLines(ev); got != eagerGolden[k] {
			t.Errorf("case %d (%s regime): evidence digest %s, at 2f22c48 %s (%d lines)", k, cs.CacheRegime, got, eagerGolden[k], len(ev))
		}
	}
}

// TestTracePlanEvidenceUnchanged: a replay whose prompts and bodies are built just before each
// send (Plan.Trace, ResolveTrace) records exactly what the whole-prompt path records (same run)
// and what it recorded at 2f22c48 (eagerGolden): every request's index, prompt id, seed, body
// digest, corpus index and cycle, and every row's prompt set.
func TestTracePlanEvidenceUnchanged(t *testing.T) {
	dir := t.TempDir()
	corpus := evidenceTrace(t, dir, 400)
	url := startSim(t, fastSim())
	tp, err := ResolveTrace(context.Background(), corpus, dir)
	if err != nil {
		t.Fatal(err)
	}
	for k, cs := range evidenceCases(&corpus) {
		eager := evidenceOf(runEager(t, url, dir, cs))
		res, err := Run(context.Background(), Plan{CaseID: "trace", Case: cs, BaseURL: url, ModelID: "qualsim-tiny", Trace: tp, Seed: 9, Epoch: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		lazy := evidenceOf(res)
		if len(lazy) != len(eager) {
			t.Fatalf("case %d: %d evidence lines lazily, %d eagerly", k, len(lazy), len(eager))
		}
		for i := range lazy {
			if lazy[i] != eager[i] {
				t.Fatalf("case %d line %d:\nlazy  %s\neager %s", k, i, lazy[i], eager[i])
			}
		}
		if got := digestLines(lazy); got != eagerGolden[k] {
			t.Errorf("case %d: lazy evidence digest %s, at 2f22c48 %s", k, got, eagerGolden[k])
		}
	}
}

// TestLookaheadBounded: the builder delivers requests in order, never more than its window (plus
// the one it is building) ahead of the consumer, nor more body bytes than its budget past the
// first; a slow consumer holds it back, a build error ends it, and close stops a builder that is
// waiting.
func TestLookaheadBounded(t *testing.T) {
	for _, tc := range []struct {
		window, maxBytes, bodyBytes int
		wantAhead                   int64
	}{
		// Ahead counts one more than the builder holds: the request the consumer has taken
		// but not yet counted.
		{window: 4, maxBytes: 1 << 20, bodyBytes: 10, wantAhead: 6}, // the window binds: 4 queued, 1 building
		{window: 64, maxBytes: 100, bodyBytes: 40, wantAhead: 4},    // the bytes bind: 2 queued bodies, 1 building
		{window: 1, maxBytes: 1, bodyBytes: 40, wantAhead: 3},       // one body over budget still goes
	} {
		var built, taken, most atomic.Int64
		build := func(k int) (request, error) {
			if d := built.Add(1) - taken.Load(); d > most.Load() {
				most.Store(d)
			}
			return request{index: int64(k), body: make([]byte, tc.bodyBytes)}, nil
		}
		la := startLookaheadSized(context.Background(), 200, build, tc.window, tc.maxBytes)
		la.wait()
		for k := range 200 {
			time.Sleep(50 * time.Microsecond) // a consumer slower than the builder
			q, err := la.next(k)
			if err != nil || q == nil || q.index != int64(k) {
				t.Fatalf("window %d: request %d: %+v, %v", tc.window, k, q, err)
			}
			taken.Add(1)
		}
		la.close()
		if most.Load() > tc.wantAhead {
			t.Errorf("window %d, budget %d B, bodies %d B: built %d ahead of the consumer, want at most %d", tc.window, tc.maxBytes, tc.bodyBytes, most.Load(), tc.wantAhead)
		}
	}
	boom := errors.New("boom")
	la := startLookaheadSized(context.Background(), 10, func(k int) (request, error) {
		if k == 3 {
			return request{}, boom
		}
		return request{index: int64(k)}, nil
	}, 4, 1<<20)
	for k := range 3 {
		if q, err := la.next(k); err != nil || q.index != int64(k) {
			t.Fatalf("request %d: %+v, %v", k, q, err)
		}
	}
	if _, err := la.next(3); !errors.Is(err, boom) {
		t.Fatalf("request 3: %v, want the build error", err)
	}
	la.close()
	stuck := startLookaheadSized(context.Background(), 1000, func(k int) (request, error) { return request{index: int64(k)}, nil }, 2, 1<<20)
	stuck.wait()
	done := make(chan struct{})
	go func() { stuck.close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("close did not stop a builder waiting on a full window")
	}
	if q, _ := stuck.next(0); q != nil {
		t.Fatalf("next after close: %+v, want nil", q)
	}
}

// BenchmarkTracePlan plans Mooncake-like traces of 1k, 10k, 100k and 1M entries (PlanTrace, the
// plan a replay keeps) and reports its memory per request: plan-B/req, what the plan holds
// (entries and hash id runs, deterministic), and heap-B/req, the live heap it added (measured
// after a GC). Both stay flat as the trace grows when memory is O(entries) with a constant per
// entry (no prompt text). The trace's own entries (input) are not counted: hash-ids-B/req is
// what their hash ids take as parsed, for comparison. The 1M case takes a few seconds and about
// 1 GB for its input: run it with -benchtime=1x.
func BenchmarkTracePlan(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			es := mooncakeLike(1, n)
			ids := 0
			for _, e := range es {
				ids += len(e.HashIDs)
			}
			var tp *TracePlan
			var heap int64
			for b.Loop() {
				var before, after runtime.MemStats
				tp = nil
				runtime.GC()
				runtime.ReadMemStats(&before)
				var err error
				if tp, err = PlanTrace(es, 0.75, 512, 0.005); err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = int64(after.HeapAlloc) - int64(before.HeapAlloc)
			}
			b.ReportMetric(float64(tp.PlanBytes())/float64(n), "plan-B/req")
			b.ReportMetric(float64(heap)/float64(n), "heap-B/req")
			b.ReportMetric(float64(ids*8)/float64(n), "hash-ids-B/req")
			runtime.KeepAlive(tp)
		})
	}
}

// BenchmarkTraceTokenSynthesisTotal synthesises Mooncake-like traces of 25, 50, 100 and 200
// entries token-exact (words4, a tokenizer local at word boundaries and linear per count; a
// worker per core) and reports ns/token over the total tokens: flat as the total grows when
// synthesis time is linear in total tokens. Compare the ratios within one run.
func BenchmarkTraceTokenSynthesisTotal(b *testing.B) {
	for _, n := range []int{25, 50, 100, 200} {
		es := mooncakeLike(2, n)
		tokens := int64(0)
		for _, e := range es {
			tokens += e.InputLength
		}
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := TraceTokenPrompts(context.Background(), es, 512, 1, words4{}, contract.TokenizerTemplateLines, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tokens), "ns/token")
			b.ReportMetric(float64(tokens), "tokens")
		})
	}
}

// TestTracePlanRowHoldsNoBodies: what a lazily built row keeps once it ended is its records, not
// its requests' bodies (a record pointing into its request kept the request, and its body, alive
// for the whole row: 1.4 GB for a 12,031-request replay): after Run the live heap has grown by
// far less per request than one body.
func TestTracePlanRowHoldsNoBodies(t *testing.T) {
	dir := t.TempDir()
	const n = 1000
	es := make([]TraceEntry, n)
	for i := range es {
		es[i] = TraceEntry{TimestampMs: int64(i / 8), InputLength: 4000, OutputLength: 4}
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, es); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	scale, wpt := 1.0, 0.75
	corpus := contract.Corpus{Source: contract.CorpusSourceTrace, Path: "trace.jsonl", Digest: evidence.DigestOf(buf.Bytes()), TimeScale: &scale,
		LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt}
	tp, err := ResolveTrace(context.Background(), corpus, dir)
	if err != nil {
		t.Fatal(err)
	}
	body := len(tp.Prompt(0).Text)
	url := startSim(t, fastSim())
	cs := servingCase([]int64{16}, 1, 0, 4)
	cs.OutputAssertions = nil
	cs.Corpus = &corpus
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res, err := Run(context.Background(), Plan{CaseID: "trace", Case: cs, BaseURL: url, ModelID: "qualsim-tiny", Trace: tp, Seed: 9, Epoch: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	if len(res.Rows[0].Records) != n || per > int64(body)/3 {
		t.Fatalf("%d records; the live heap grew by %d bytes per request, bodies are %d bytes", len(res.Rows[0].Records), per, body)
	}
	t.Logf("the live heap grew by %d bytes per request, bodies are %d bytes", per, body)
}

// TestTracePlanPrompts: a plan's prompts are TracePrompts' (ids, texts, max_tokens, offsets),
// with hash ids shared along conversations, cut blocks and entries without hash ids, and its
// prompt set hash, streamed, is PromptSetSHA256 of them whole.
func TestTracePlanPrompts(t *testing.T) {
	es := mooncakeLike(3, 300)
	for i := range es {
		es[i].InputLength = min(es[i].InputLength, 5000)
	}
	es[7].HashIDs = nil
	for _, wpt := range []float64{0.75, 1.3} {
		want, err := TracePrompts(es, wpt, 512, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		tp, err := PlanTrace(es, wpt, 512, 0.25)
		if err != nil {
			t.Fatal(err)
		}
		sp := make([]contract.Prompt, len(want))
		for i, w := range want {
			if got := tp.Prompt(i); got.ID != w.ID || got.Text != w.Text || got.MaxTokens != w.MaxTokens || got.AtNs != w.AtNs {
				t.Fatalf("wpt %g entry %d: plan's prompt differs from TracePrompts'", wpt, i)
			}
			sp[i] = contract.Prompt{ID: w.ID, Text: w.Text}
		}
		wantSet, err := PromptSetSHA256(sp)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tp.PromptSetSHA256(); err != nil || got != wantSet {
			t.Fatalf("wpt %g: prompt set %s, %v; whole %s", wpt, got, err, wantSet)
		}
	}
	if _, err := PlanTrace(es, 0.75, 0, 1); !errors.Is(err, ErrTrace) {
		t.Fatalf("block_tokens 0: %v, want ErrTrace", err)
	}
}

// TestLookaheadWaits: a dispatcher paced slower than the builder never waits for it once the
// window is full; one faster than a slow builder waits, and the lookahead counts it (the late
// send is then recorded as schedule lag, never hidden).
func TestLookaheadWaits(t *testing.T) {
	fast := startLookaheadSized(context.Background(), 100, func(k int) (request, error) { return request{index: int64(k)}, nil }, 16, 1<<20)
	fast.wait()
	for k := range 100 {
		time.Sleep(200 * time.Microsecond)
		if _, err := fast.next(k); err != nil {
			t.Fatal(err)
		}
	}
	fast.close()
	slow := startLookaheadSized(context.Background(), 20, func(k int) (request, error) {
		time.Sleep(2 * time.Millisecond)
		return request{index: int64(k)}, nil
	}, 16, 1<<20)
	for k := range 20 {
		if _, err := slow.next(k); err != nil {
			t.Fatal(err)
		}
	}
	slow.close()
	if w := fast.waits.Load(); w > 5 {
		t.Errorf("a builder ahead of its dispatcher made it wait %d times of 100", w)
	}
	if w := slow.waits.Load(); w < 15 {
		t.Errorf("a builder 2 ms a request behind a dispatcher that never sleeps: %d waits counted of 20", w)
	}
}
