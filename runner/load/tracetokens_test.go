package load

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestTextRecipeWrites: the recipe exactRecipe returns writes its text again from the stream's
// seed, for counts of whole prompts and of bare text (thirds, words4), targets from 1 to 3,000
// tokens, and a count whose estimates are so far off that every estimated word is dropped and
// the text starts with a word drawn after them (no space before it).
func TestTextRecipeWrites(t *testing.T) {
	heavy := map[string]bool{}
	for _, w := range syntheticWords[:128] {
		heavy[w] = true
	}
	// offCount: a word of the first half of the vocabulary counts 100, any other field its
	// bytes, and "the"+w (an estimate) 1 more than "the".
	offCount := func(s string) (int64, error) {
		if strings.HasPrefix(s, "the") && !strings.Contains(s, " ") {
			return int64(min(len(s)-3, 1)), nil
		}
		n := int64(0)
		for f := range strings.FieldsSeq(s) {
			if heavy[f] {
				n += 100
			} else {
				n += int64(len(f))
			}
		}
		return n, nil
	}
	counts := map[string]func(string) (int64, error){
		"thirds prompt": wholeCounts(thirds{}),
		"words4 prompt": wholeCounts(words4{}),
		"words4 text":   words4{}.TextTokens,
		"estimates off": offCount,
	}
	rng := metric.SplitMix64{State: 28}
	allDropped := 0
	for name, count := range counts {
		for k := range 300 {
			target := int64(1 + rng.Next()%40)
			if k%3 == 0 {
				target = int64(1 + rng.Next()%3000)
			}
			seed := rng.Next()
			stream := metric.SplitMix64{State: seed}
			text, r, err := exactRecipe(&stream, target, count, nil)
			if err != nil {
				continue // a target this count cannot reach exactly
			}
			if got := string(r.appendTo([]byte("x"), metric.SplitMix64{State: seed})); got != "x"+text {
				t.Fatalf("%s, target %d, seed %d: recipe %+v writes\n%q\nexactRecipe wrote\n%q", name, target, seed, r, got[1:], text)
			}
			if r.drawn > 0 && r.kept == 0 && r.more > 0 {
				allDropped++
			}
		}
	}
	if allDropped == 0 {
		t.Fatal("no text started with a word drawn after dropping every estimated one")
	}
}

// TestPlanTokenTrace: a token plan's prompts are TraceTokenPrompts' whole synthesis (ids, texts,
// max_tokens, offsets; each exactly its input_length), its words per prompt are the texts'
// fields (what warmups are shaped by), its prompt set hash is PromptSetSHA256 of them,
// and it holds (and keeps alive) far less than the prompts: with a local tokenizer (words4, hash
// blocks shared along conversations, an entry without hash ids) and one that is not (thirds).
func TestPlanTokenTrace(t *testing.T) {
	es := mooncakeLike(5, 60)
	for i := range es {
		es[i].InputLength = min(es[i].InputLength, 12_000)
		es[i].HashIDs = es[i].HashIDs[:min(len(es[i].HashIDs), int((es[i].InputLength+511)/512))]
	}
	es[4].HashIDs = nil
	// Blocks of 16 tokens have no tail to count after (shorter than tailBytes): counted from
	// suffixes instead.
	short := mooncakeLike(6, 30)
	for i := range short {
		short[i].InputLength = min(short[i].InputLength, 1_500)
		short[i].HashIDs = short[i].HashIDs[:min(len(short[i].HashIDs), int((short[i].InputLength+15)/16))]
	}
	for _, c := range []struct {
		tc    TokenCounter
		es    []TraceEntry
		block int64
	}{{words4{}, es, 512}, {thirds{}, es, 512}, {words4{}, short, 16}} {
		tc, es := c.tc, c.es
		ctx := context.Background()
		// The whole synthesis: every count of a whole prompt (no block table, no suffixes).
		want, err := traceTokenPrompts(ctx, es, c.block, 0.5, tc, wholeCounts(tc), false, nil)
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		tp, err := PlanTokenTrace(ctx, es, c.block, 0.5, tc, contract.TokenizerTemplateLines, nil)
		if err != nil {
			t.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		sp := make([]contract.Prompt, len(want))
		text := 0
		for i, w := range want {
			got := tp.Prompt(i)
			if got.ID != w.ID || got.Text != w.Text || got.MaxTokens != w.MaxTokens || got.AtNs != w.AtNs {
				t.Fatalf("%T entry %d: the plan's prompt differs from the whole synthesis'", tc, i)
			}
			if n, _ := wholeCounts(tc)(got.Text); n != es[i].InputLength {
				t.Fatalf("%T entry %d: %d tokens, want %d", tc, i, n, es[i].InputLength)
			}
			if tp.words(i) != len(strings.Fields(got.Text)) || tp.maxTokens(i) != es[i].OutputLength {
				t.Fatalf("%T entry %d: %d words, max_tokens %d", tc, i, tp.words(i), tp.maxTokens(i))
			}
			sp[i] = contract.Prompt{ID: w.ID, Text: w.Text}
			text += len(w.Text)
		}
		wantSet, err := PromptSetSHA256(sp)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := tp.PromptSetSHA256(); err != nil || got != wantSet {
			t.Fatalf("%T: prompt set %s, %v; whole %s", tc, got, err, wantSet)
		}
		// What the plan keeps alive (a recipe's few characters cut from its text kept the whole
		// text alive: 123 MB for the real Mooncake trace's 12,031 entries); a recipe per 16-token
		// block is not small beside its text.
		if c.block == 512 && (tp.PlanBytes()*20 > text || held*20 > int64(text)) {
			t.Fatalf("%T: the plan holds %d bytes (the live heap grew by %d) for %d bytes of prompts", tc, tp.PlanBytes(), held, text)
		}
		t.Logf("%T: the plan holds %d bytes (the live heap grew by %d) for %d bytes of prompts", tc, tp.PlanBytes(), held, text)
		runtime.KeepAlive(tp)
	}
}

// tokenTraceCorpus writes a Mooncake-like trace of length_unit tokens small enough to replay in a
// test (inputs capped at 3,000 tokens, 3 s ticks scaled to 1.5 ms) and returns its corpus.
func tokenTraceCorpus(t testing.TB, dir string, n int) contract.Corpus {
	t.Helper()
	c := evidenceTrace(t, dir, n)
	c.LengthUnit, c.WordsPerToken = contract.TraceCorpusLengthUnitTokens, nil
	return c
}

// TestTokenTracePlanEvidenceUnchanged: a replay of length_unit tokens whose prompts and bodies are
// built just before each send (Plan.Trace, ResolveTokenTrace) records exactly what the replay of
// every prompt synthesised whole (TraceTokenCorpus, the path before) records: every request's
// index, prompt id, seed, body digest, corpus index, cycle, and the client's prompt count, and
// every row's prompt set; in the natural regime with warmups, the cold one with nonces and
// requests, and the warm one with its priming pass.
func TestTokenTracePlanEvidenceUnchanged(t *testing.T) {
	dir := t.TempDir()
	corpus := tokenTraceCorpus(t, dir, 300)
	ctx := context.Background()
	prompts, err := TraceTokenCorpus(ctx, corpus, dir, thirds{}, contract.TokenizerTemplateLines, nil)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := ResolveTokenTrace(ctx, corpus, dir, thirds{}, contract.TokenizerTemplateLines, nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := fastSim()
	cfg.Tokens = simThirds{}
	url := startSim(t, cfg)
	zero, frac := int64(0), 0.0
	tk := &contract.Tokenizer{Format: contract.TokenizerFormat, Path: "models/t.gguf", Digest: "sha256:" + strings.Repeat("ab", 32), Template: contract.TokenizerTemplateLines, MaxRequestDifference: &zero, MaxMismatchFraction: &frac}
	counted := func(res *Result) []string {
		lines := evidenceOf(res)
		for _, row := range res.Rows {
			for _, r := range row.Records {
				if r.ClientTokens == nil {
					t.Fatalf("record %d: no client count", r.Index)
				}
				lines = append(lines, fmt.Sprintf("%d client %d", r.Index, r.ClientTokens.PromptTokens))
			}
		}
		return lines
	}
	for k, cs := range evidenceCases(&corpus) {
		cs.Tokenizer = tk
		plan := Plan{CaseID: "trace", Case: cs, BaseURL: url, ModelID: "qualsim-tiny", Seed: 9, Epoch: time.Now(), Tokens: thirds{}}
		plan.Prompts = prompts
		eagerRes, err := Run(ctx, plan)
		if err != nil {
			t.Fatal(err)
		}
		plan.Prompts, plan.Trace = nil, tp
		lazyRes, err := Run(ctx, plan)
		if err != nil {
			t.Fatal(err)
		}
		eager, lazy := counted(eagerRes), counted(lazyRes)
		if len(lazy) != len(eager) {
			t.Fatalf("case %d: %d evidence lines lazily, %d eagerly", k, len(lazy), len(eager))
		}
		for i := range lazy {
			if lazy[i] != eager[i] {
				t.Fatalf("case %d line %d:\nlazy  %s\neager %s", k, i, lazy[i], eager[i])
			}
		}
		for _, r := range lazyRes.Rows[0].Records {
			if r.Error != nil {
				t.Fatalf("case %d request %d: %+v", k, r.Index, r.Error)
			}
		}
	}
	// A plan of tokens goes with a corpus of tokens only.
	words := evidenceCases(&corpus)[0]
	wc := corpus
	wpt := 0.75
	wc.LengthUnit, wc.WordsPerToken = contract.TraceCorpusLengthUnitWordsPerToken, &wpt
	words.Corpus = &wc
	if _, err := Run(ctx, Plan{CaseID: "trace", Case: words, BaseURL: url, ModelID: "qualsim-tiny", Trace: tp, Seed: 9, Epoch: time.Now()}); err == nil {
		t.Fatal("a plan of tokens replayed a corpus of words_per_token")
	}
}

// TestCheckTrace: a trace of tokens is checked without a tokenizer (preflight, before the
// tokenizer is loaded): its digest, entries and prompt bound.
func TestCheckTrace(t *testing.T) {
	dir := t.TempDir()
	corpus := tokenTraceCorpus(t, dir, 20)
	if err := CheckTrace(corpus, dir); err != nil {
		t.Fatal(err)
	}
	bad := corpus
	bad.Digest = "sha256:" + strings.Repeat("0", 64)
	if err := CheckTrace(bad, dir); err == nil || !strings.Contains(err.Error(), "digest") {
		t.Fatalf("wrong digest: %v", err)
	}
	huge := []byte(fmt.Sprintf(`{"timestamp":0,"input_length":%d,"output_length":1}`+"\n", MaxPromptBytes/8+1))
	if err := os.WriteFile(filepath.Join(dir, "huge.jsonl"), huge, 0o644); err != nil {
		t.Fatal(err)
	}
	over := contract.Corpus{Source: contract.CorpusSourceTrace, Path: "huge.jsonl", Digest: evidence.DigestOf(huge), LengthUnit: contract.TraceCorpusLengthUnitTokens}
	if err := CheckTrace(over, dir); err == nil || !strings.Contains(err.Error(), "prompt bound") {
		t.Fatalf("entry over the prompt bound: %v", err)
	}
	if !LazyTrace(corpus) {
		t.Fatal("a trace of tokens is not planned lazily")
	}
	if _, err := ResolveTrace(context.Background(), corpus, dir); err == nil {
		t.Fatal("ResolveTrace planned a trace of tokens without its tokenizer")
	}
}

// TestResolveTokenTraceCancel: a cancelled resolution stops with ctx's error, during the
// synthesis or the prompt set hash after it; so does a trace of words_per_token's (ResolveTrace,
// whose prompt set hash took 13 s for the real Mooncake trace on a loaded host, past the second a
// signal in preflight is given).
func TestResolveTokenTraceCancel(t *testing.T) {
	dir := t.TempDir()
	words := evidenceTrace(t, dir, 50)
	done, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ResolveTrace(done, words, dir); !errors.Is(err, context.Canceled) {
		t.Fatalf("words_per_token, cancelled: %v, want context.Canceled", err)
	}
	corpus := tokenTraceCorpus(t, dir, 200)
	for _, at := range []int{3, 200} { // mid-synthesis; after the last entry, before the hash
		ctx, cancel := context.WithCancel(context.Background())
		_, err := ResolveTokenTrace(ctx, corpus, dir, words4{}, contract.TokenizerTemplateLines, func(done, total int) {
			if done == at {
				cancel()
			}
		})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled after %d entries: %v, want context.Canceled", at, err)
		}
	}
}

// BenchmarkTokenTraceSynthesisLinear synthesises Mooncake-like traces token-exact (PlanTokenTrace
// with words4, a tokenizer local at word boundaries and linear per count) at two sizes, 100 and
// 400 entries of the same length distribution, and reports ns/token over each trace's total
// input tokens and, in the larger case, ratio: its ns/token over the smaller's in the same run,
// about 1 when the synthesis time is linear in the total tokens (a quadratic one would give
// about 4). distinct-fraction is the share of the tokens in distinct hash blocks (each counted
// once) for reference, plan-B/req what the plan keeps per request (entries, recipes, blocks).
func BenchmarkTokenTraceSynthesisLinear(b *testing.B) {
	sizes := []int{100, 400}
	perToken := make([]float64, len(sizes))
	for k, n := range sizes {
		es := mooncakeLike(2, n)
		total, blocks := int64(0), map[int64]bool{}
		for _, e := range es {
			total += e.InputLength
			for _, h := range e.HashIDs {
				blocks[h] = true
			}
		}
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			var tp *TracePlan
			for b.Loop() {
				var err error
				if tp, err = PlanTokenTrace(context.Background(), es, 512, 1, words4{}, contract.TokenizerTemplateLines, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(tp.PlanBytes())/float64(n), "plan-B/req")
			perToken[k] = float64(b.Elapsed().Nanoseconds()) / float64(b.N) / float64(total)
			b.ReportMetric(perToken[k], "ns/token")
			b.ReportMetric(float64(total), "tokens")
			b.ReportMetric(float64(len(blocks)*512)/float64(total), "distinct-fraction")
			if k > 0 && perToken[0] > 0 {
				b.ReportMetric(perToken[k]/perToken[0], "ratio")
			}
		})
	}
}

// TestShortBlocksCountedFromSuffixes: a trace whose hash blocks are too short to have a tail
// (16 tokens) is synthesised from counts derived from suffixes, not by counting whole prompts
// (quadratic in the number of blocks), and writes the same prompts.
func TestShortBlocksCountedFromSuffixes(t *testing.T) {
	es := mooncakeLike(6, 20)
	for i := range es {
		es[i].InputLength = min(es[i].InputLength, 3_000)
		es[i].HashIDs = es[i].HashIDs[:min(len(es[i].HashIDs), int((es[i].InputLength+15)/16))]
	}
	counted := func(n *atomic.Int64) func(string) (int64, error) { // the workers count at once
		return func(s string) (int64, error) { n.Add(int64(len(s))); return wholeCounts(words4{})(s) }
	}
	var derivedN, wholeN atomic.Int64
	ctx := context.Background()
	fast, err := traceTokenPrompts(ctx, es, 16, 1, words4{}, counted(&derivedN), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow, err := traceTokenPrompts(ctx, es, 16, 1, words4{}, counted(&wholeN), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	derived, whole := int(derivedN.Load()), int(wholeN.Load())
	text := 0
	for i := range fast {
		if fast[i].Text != slow[i].Text {
			t.Fatalf("entry %d: derived counts wrote other bytes than whole counts", i)
		}
		text += len(fast[i].Text)
	}
	// Counting after a tail re-counts up to reanchorBytes per step: about 15 times the text here,
	// against 50 counting whole prompts (which grows with the prompts' length).
	if derived > 20*text || 2*derived > whole {
		t.Fatalf("counted %d bytes from suffixes (%d counting whole prompts) for %d bytes of prompts", derived, whole, text)
	}
	t.Logf("counted %d bytes from suffixes, %d counting whole prompts, for %d bytes of prompts", derived, whole, text)
}
