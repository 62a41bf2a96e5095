package load

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// The real Mooncake conversation trace is not in the repository. mooncakeLike generates a trace
// with its statistics, deterministically from a seed:
//   - arrivals on 3 s ticks, bursts of 1 to 28 requests per tick (most ticks a few);
//   - input lengths log-normal around 8k tokens, from 64 up to 126,000 tokens; outputs 1 to 2,000;
//   - 512-token hash blocks: a conversation's turns share its earlier turns' blocks as a prefix
//     (about 60% of requests continue an earlier conversation), each new block a fresh id.
//
// For command-line measurements (docs/performance.md "Trace replay at scale"):
//
//	go test ./runner/load/ -run TestWriteMooncakeLike -mooncake-out FILE -mooncake-n 12031
var (
	mooncakeOut = flag.String("mooncake-out", "", "write a Mooncake-like trace to this file")
	mooncakeN   = flag.Int("mooncake-n", 12031, "entries of the -mooncake-out trace")
)

const (
	mooncakeTickMs   = 3000
	mooncakeBurstMax = 28
	mooncakeInputMax = 126_000
	mooncakeBlock    = 512
)

func mooncakeLike(seed uint64, n int) []TraceEntry {
	rng := metric.SplitMix64{State: seed ^ 0x4D4F4F4E43414B45}
	unit := func() float64 { return float64(rng.Next()>>11) / (1 << 53) }
	normal := func() float64 { // Box-Muller
		return math.Sqrt(-2*math.Log(1-unit())) * math.Cos(2*math.Pi*unit())
	}
	type conv struct{ ids []int64 }
	var convs []conv
	nextID := int64(0)
	out := make([]TraceEntry, 0, n)
	for tick := int64(0); len(out) < n; tick++ {
		burst := 1 + int(math.Min(mooncakeBurstMax-1, math.Floor(-3*math.Log(1-unit())))) // 1..28, mean about 4
		for range burst {
			if len(out) == n {
				break
			}
			in := int64(math.Exp(math.Log(8000) + 1.1*normal()))
			in = min(max(in, 64), mooncakeInputMax)
			blocks := int((in + mooncakeBlock - 1) / mooncakeBlock)
			var ids []int64
			if len(convs) > 0 && unit() < 0.6 {
				c := &convs[int(rng.Next()%uint64(len(convs)))]
				ids = append(ids, c.ids[:min(len(c.ids), blocks)]...)
			}
			for len(ids) < blocks {
				ids = append(ids, nextID)
				nextID++
			}
			convs = append(convs, conv{ids: ids})
			if len(convs) > 4096 {
				convs = convs[1:]
			}
			outLen := min(max(int64(math.Exp(math.Log(300)+0.8*normal())), 1), 2000)
			out = append(out, TraceEntry{TimestampMs: tick * mooncakeTickMs, InputLength: in, OutputLength: outLen, HashIDs: ids})
		}
	}
	return out
}

// mooncakeStats are a Mooncake-shaped trace's statistics: its largest burst (entries sharing a
// timestamp), largest input, and how many entries share their first hash block with an earlier
// one; an entry whose hash ids are not one per 512-token block fails t.
func mooncakeStats(t *testing.T, es []TraceEntry) (maxBurst int, maxIn int64, shared int) {
	t.Helper()
	burst := 0
	seen := map[int64]bool{}
	for i, e := range es {
		if i > 0 && e.TimestampMs == es[i-1].TimestampMs {
			burst++
		} else {
			burst = 1
		}
		maxBurst, maxIn = max(maxBurst, burst), max(maxIn, e.InputLength)
		if want := (e.InputLength + mooncakeBlock - 1) / mooncakeBlock; int64(len(e.HashIDs)) != want {
			t.Fatalf("entry %d: %d hash ids for %d tokens", i, len(e.HashIDs), e.InputLength)
		}
		if len(e.HashIDs) > 0 && seen[e.HashIDs[0]] {
			shared++
		}
		for _, h := range e.HashIDs {
			seen[h] = true
		}
	}
	return maxBurst, maxIn, shared
}

// TestMooncakeLikeStatistics: the generated trace has the statistics it claims.
func TestMooncakeLikeStatistics(t *testing.T) {
	es := mooncakeLike(1, 12031)
	for i, e := range es {
		if e.TimestampMs%mooncakeTickMs != 0 {
			t.Fatalf("entry %d at %d ms, off the 3 s ticks", i, e.TimestampMs)
		}
	}
	maxBurst, maxIn, shared := mooncakeStats(t, es)
	if maxBurst < 10 || maxBurst > mooncakeBurstMax || maxIn > mooncakeInputMax || maxIn < 60_000 || shared < len(es)/3 {
		t.Fatalf("bursts up to %d, inputs up to %d, %d of %d share a prefix", maxBurst, maxIn, shared, len(es))
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, es); err != nil {
		t.Fatal(err)
	}
	if back, err := ReadTrace(buf.Bytes()); err != nil || len(back) != len(es) {
		t.Fatalf("read back: %v", err)
	}
}

// TestWriteMooncakeLike writes a Mooncake-like trace for command-line measurements (skipped
// unless -mooncake-out FILE is given).
func TestWriteMooncakeLike(t *testing.T) {
	if *mooncakeOut == "" {
		t.Skip("give -mooncake-out FILE")
	}
	var buf bytes.Buffer
	if err := WriteTrace(&buf, mooncakeLike(1, *mooncakeN)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(*mooncakeOut, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// words4 is a test tokenizer that is local at word boundaries, like a real BPE one: a text is
// one token per started 4 bytes of each space-separated word (spaces count nothing), a prompt
// renders as the lines template does and gains one BOS token. Counting is linear in the text.
type words4 struct{}

func (words4) TextTokens(s string) (int64, error) {
	n := int64(0)
	for w := range strings.FieldsSeq(s) {
		n += int64((len(w) + 3) / 4)
	}
	return n, nil
}

func (words4) PromptTokens(template contract.TokenizerTemplate, roles, contents []string) (int64, error) {
	var b strings.Builder
	for i := range contents {
		if i > 0 {
			b.WriteByte('\n')
		}
		if roles[i] != "user" {
			b.WriteString(roles[i] + ": ")
		}
		b.WriteString(contents[i])
	}
	n, _ := words4{}.TextTokens(b.String())
	return n + 1, nil
}

// wholeCounts counts whole prompts with tc (the synthesis before counts were derived).
func wholeCounts(tc TokenCounter) func(string) (int64, error) {
	return func(s string) (int64, error) {
		return tc.PromptTokens(contract.TokenizerTemplateLines, []string{"user"}, []string{s})
	}
}

// TestTraceTokenPromptsDerivedCountsAreWhole: with a tokenizer local at word boundaries
// (words4) the synthesis derives its counts from suffixes and writes the very bytes counting
// whole prompts writes, every prompt exactly its input_length; a tokenizer that is not local
// (thirds) is found by the probe and counted whole.
func TestTraceTokenPromptsDerivedCountsAreWhole(t *testing.T) {
	if !probeLocal(wholeCounts(words4{})) {
		t.Fatal("words4 is local, the probe says not")
	}
	if probeLocal(wholeCounts(thirds{})) {
		t.Fatal("thirds is not local, the probe says it is")
	}
	es := mooncakeLike(7, 40)
	for i := range es {
		es[i].InputLength = min(es[i].InputLength, 20_000) // the whole-prompt reference is quadratic
		es[i].HashIDs = es[i].HashIDs[:min(len(es[i].HashIDs), int((es[i].InputLength+511)/512))]
	}
	es[3].HashIDs = nil // a request without hash ids: all of it is the rest
	ctx := context.Background()
	counted := func(bytes *atomic.Int64) func(string) (int64, error) { // the workers count at once
		return func(s string) (int64, error) { bytes.Add(int64(len(s))); return wholeCounts(words4{})(s) }
	}
	var fastN, wholeN atomic.Int64
	fast, err := traceTokenPrompts(ctx, es, 512, 1, words4{}, counted(&fastN), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := traceTokenPrompts(ctx, es, 512, 1, words4{}, counted(&wholeN), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	fastBytes, wholeBytes := int(fastN.Load()), int(wholeN.Load())
	total := 0
	for _, p := range whole {
		total += len(p.Text)
	}
	// Derived: each prompt's blocks and words once, plus the whole count confirming it.
	if fastBytes > 4*total || wholeBytes < 20*total {
		t.Fatalf("counted %d bytes derived, %d whole, for %d bytes of prompts", fastBytes, wholeBytes, total)
	}
	t.Logf("counted %d bytes derived, %d whole, for %d bytes of prompts", fastBytes, wholeBytes, total)
	for i := range es {
		if fast[i].Text != whole[i].Text {
			t.Fatalf("entry %d: derived counts wrote other bytes than whole counts", i)
		}
		if n, _ := wholeCounts(words4{})(fast[i].Text); n != es[i].InputLength {
			t.Fatalf("entry %d: %d tokens, want %d", i, n, es[i].InputLength)
		}
	}
}

// TestTraceTokenPromptsCancel: a cancelled synthesis stops within one count with ctx's error,
// and progress is told the entries done after each one, one at a time.
func TestTraceTokenPromptsCancel(t *testing.T) {
	es := mooncakeLike(3, 50)
	ctx, cancel := context.WithCancel(context.Background())
	done := 0
	_, err := TraceTokenPrompts(ctx, es, 512, 1, words4{}, contract.TokenizerTemplateLines, func(d, total int) {
		if d != done+1 || total != len(es) {
			t.Errorf("progress %d/%d after %d", d, total, done)
		}
		done = d
		if d == 2 {
			cancel()
		}
	})
	if err != context.Canceled || done < 2 || done == len(es) {
		t.Fatalf("%v after %d entries, want context.Canceled after 2 or a few more (one per worker)", err, done)
	}
}

// TestTraceBlockTokensOptional: a trace without hash blocks (Azure's) needs no block_tokens; one
// with hash_ids without it is refused naming the first entry that has them.
func TestTraceBlockTokensOptional(t *testing.T) {
	dir := t.TempDir()
	wpt := 0.75
	for _, tc := range []struct {
		name, trace, want string
	}{
		{"azure", `{"timestamp":0,"input_length":8,"output_length":2}` + "\n" + `{"timestamp":5,"input_length":9,"output_length":2}` + "\n", ""},
		{"mooncake", `{"timestamp":0,"input_length":8,"output_length":2}` + "\n" + `{"timestamp":5,"input_length":9,"output_length":2,"hash_ids":[4]}` + "\n", "entry 1 (line 2) has hash_ids: declare block_tokens"},
	} {
		if err := os.WriteFile(dir+"/"+tc.name+".jsonl", []byte(tc.trace), 0o644); err != nil {
			t.Fatal(err)
		}
		corpus := contract.Corpus{Source: contract.CorpusSourceTrace, Path: tc.name + ".jsonl", Digest: evidence.DigestOf([]byte(tc.trace)),
			LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt}
		ps, err := Resolve(corpus, dir)
		switch {
		case tc.want == "" && (err != nil || len(ps) != 2):
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// BenchmarkTraceTokenSynthesis synthesises one prompt without hash blocks and one of 512-token
// blocks at 2k, 8k, 32k and 128k tokens with a tokenizer that is local at word boundaries (words4,
// linear per count), deriving counts from suffixes (derived) and counting whole prompts (whole,
// the synthesis before). It reports ns/token: flat as the prompt grows when synthesis is linear
// in its length (derived), growing with it when quadratic (whole). Compare the ratios within one
// run; absolute times depend on the host.
func BenchmarkTraceTokenSynthesis(b *testing.B) {
	full := wholeCounts(words4{})
	for _, local := range []bool{true, false} {
		name := map[bool]string{true: "derived", false: "whole"}[local]
		for _, tokens := range []int64{2000, 8000, 32000, 128000} {
			for _, blocks := range []bool{false, true} {
				e := TraceEntry{InputLength: tokens, OutputLength: 1}
				if blocks {
					for h := range (tokens + 511) / 512 {
						e.HashIDs = append(e.HashIDs, h)
					}
				}
				b.Run(fmt.Sprintf("%s/tokens=%d/blocks=%v", name, tokens, blocks), func(b *testing.B) {
					counted := 0
					count := func(s string) (int64, error) { counted += len(s); return full(s) }
					for b.Loop() {
						if _, err := traceTokenPrompts(context.Background(), []TraceEntry{e}, 512, 1, words4{}, count, local, nil); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(tokens), "ns/token")
					// Deterministic: the prompt bytes the synthesis had counted, per token.
					b.ReportMetric(float64(counted)/float64(b.N)/float64(tokens), "counted-B/token")
				})
			}
		}
	}
}
