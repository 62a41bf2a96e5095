package load

import (
	"context"
	"fmt"
	"iter"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/schemas/trace"
)

// Token-exact trace replay at production scale (issue 28 item 4). A trace of length_unit tokens
// is synthesised once, in preflight, as TraceTokenPrompts defines it, but what is kept is how each
// prompt was built, not its text: per entry the number of hash blocks it starts with and the
// recipe of the rest (textRecipe: word counts and a few characters), and per hash block its
// recipe. A prompt is written again from those and the seeds when its request is built (the
// lookahead), with no counting: memory is the plan (a few dozen bytes per entry and per block),
// not the prompts.
//
// Counting each hash block once. A trace's hash blocks are shared along conversations (the real
// Mooncake conversation trace: 144.8M tokens over 12,031 requests, 182,790 distinct blocks). With
// a tokenizer local at word boundaries (probeLocal; tailcount.go's premise), the count of a
// prompt of blocks b1 … bj (joined by spaces) is additive over the blocks' tails:
//
//	count(b1 … bj) = count(b1) + Σ_{k=2..j} inc(b(k−1), bk),  inc(a, b) = count(T_a + " " + b) − count(T_a)
//
// T_a being block a's tail (tailCut): so the count of each block as a prompt's start, of each
// pair of consecutive blocks and of a space after each block is taken once per trace, and a
// prompt's choice of how many blocks it takes costs nothing more per entry. The rest is counted
// after the last block's tail only. Each prompt is then counted whole once (as the suffix
// counting does), and one whose count is not its input_length (the premise failed) is
// synthesised again counting whole prompts: the bytes are those of counting whole prompts.

// tokenTable is what a TracePlan of length_unit tokens keeps besides its entries.
type tokenTable struct {
	entries []tokenEntry
	blocks  map[int64]textRecipe // by hash id
}

// tokenEntry is how entry i's prompt was built: its first taken hash blocks, a space, then rest
// drawn from the next hash id's stream (when the entry's hash ids go on) or the entry's own.
type tokenEntry struct {
	taken int32
	rest  textRecipe
}

// blockStream is hash id h's word stream, restStream entry i's own (TraceTokenPrompts).
func blockStream(h int64) metric.SplitMix64 { return metric.SplitMix64{State: uint64(h) ^ traceSalt} }
func restStream(i int) metric.SplitMix64 {
	return metric.SplitMix64{State: uint64(i) ^ traceSalt ^ 1<<62}
}

// appendTokenPrompt appends entry i's prompt of a plan of tokens to b.
func (tp *TracePlan) appendTokenPrompt(b []byte, i int) []byte {
	te := tp.tok.entries[i]
	return appendTokenText(b, i, tp.hashIDs(tp.entries[i]), te, func(h int64) textRecipe { return tp.tok.blocks[h] })
}

// appendTokenText appends to b the prompt te describes for entry i with hash ids ids: its first
// te.taken blocks (each block's recipe from recipe) joined by spaces, a space, then te.rest from
// the next hash id's stream (when the ids go on) or the entry's own. The plan and the synthesis
// both write prompts with it.
func appendTokenText(b []byte, i int, ids iter.Seq[int64], te tokenEntry, recipe func(h int64) textRecipe) []byte {
	from := len(b)
	rest := restStream(i)
	k := int32(0)
	for h := range ids {
		if k == te.taken {
			rest = blockStream(h)
			break
		}
		if len(b) > from {
			b = append(b, ' ')
		}
		b = recipe(h).appendTo(b, blockStream(h))
		k++
	}
	if len(b) > from {
		b = append(b, ' ')
	}
	return te.rest.appendTo(b, rest)
}

// ResolveTokenTrace resolves a trace corpus of length_unit tokens with the case's bound
// tokenizer (tc, template) into a TracePlan whose prompts are TraceTokenPrompts' (bound by digest,
// the checks and errors of TraceTokenCorpus), and computes its prompt set hash, so that preflight
// synthesises every prompt once and holds none. ctx and progress are TraceTokenPrompts'; the
// prompt set hash honours ctx between prompts.
func ResolveTokenTrace(ctx context.Context, corpus contract.Corpus, repoRoot string, tc TokenCounter, template contract.TokenizerTemplate, progress func(done, total int)) (*TracePlan, error) {
	if corpus.Source != contract.CorpusSourceTrace || corpus.LengthUnit != contract.TraceCorpusLengthUnitTokens {
		return nil, fmt.Errorf("%w: trace %s: want length_unit %s", ErrCorpus, corpus.Path, contract.TraceCorpusLengthUnitTokens)
	}
	entries, scale, block, err := readTraceBlocks(corpus, repoRoot)
	if err != nil {
		return nil, err
	}
	tp, err := PlanTokenTrace(ctx, entries, block, scale, tc, template, progress)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorpus, corpus.Path, err)
	}
	return tp.withPromptSet(ctx, corpus.Path)
}

// PlanTokenTrace synthesises entries as TraceTokenPrompts does (the same prompts, checks and
// errors) into a TracePlan that writes each prompt again when asked (Prompt), holding only how
// each was built.
func PlanTokenTrace(ctx context.Context, entries []TraceEntry, blockTokens int64, timeScale float64, tc TokenCounter, template contract.TokenizerTemplate, progress func(done, total int)) (*TracePlan, error) {
	if tc == nil {
		return nil, fmt.Errorf("%w: want a tokenizer", ErrTrace)
	}
	full := func(text string) (int64, error) {
		return tc.PromptTokens(template, []string{"user"}, []string{text})
	}
	return planTokenTrace(ctx, entries, blockTokens, timeScale, tc, full, probeLocal(full), progress)
}

// planTokenTrace is PlanTokenTrace with full (a whole prompt's count) and whether counts may be
// derived from suffixes and blocks (local).
func planTokenTrace(ctx context.Context, entries []TraceEntry, blockTokens int64, timeScale float64, tc TokenCounter, full func(string) (int64, error), local bool, progress func(done, total int)) (*TracePlan, error) {
	if blockTokens < 1 || !(timeScale > 0) || math.IsInf(timeScale, 0) || tc == nil {
		return nil, fmt.Errorf("%w: block_tokens %d, time_scale %g: want a tokenizer, block_tokens >= 1 and a finite time_scale > 0", ErrTrace, blockTokens, timeScale)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrTrace)
	}
	offs, err := trace.Offsets(entries, timeScale)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	for i, e := range entries {
		if e.InputLength*8 > MaxPromptBytes {
			return nil, fmt.Errorf("%w: entry %d: %d tokens exceed the prompt bound of %d bytes", ErrTrace, i, e.InputLength, MaxPromptBytes)
		}
	}
	s := &tokenSynth{ctx: ctx, tc: tc, full: full, local: local, localText: local && probeLocal(tc.TextTokens), blockTokens: blockTokens,
		blocks: map[int64]*synthBlock{}, incs: map[[2]int64]int64{}, blockEstimates: newWordEstimates()}
	tok := &tokenTable{entries: make([]tokenEntry, len(entries))}
	words := make([]int32, len(entries))
	errs := make([]error, len(entries))
	// Entries are synthesised by a worker per core (each prompt's bytes depend only on its entry
	// and the blocks' seeds); the first error in entry order is returned.
	var next atomic.Int64
	var mu sync.Mutex // guards done and progress
	done := 0
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(entries)) {
		wg.Go(func() {
			var buf []byte
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(entries) {
					return
				}
				te, text, err := s.entry(&buf, i, entries[i])
				switch {
				case err != nil:
					errs[i] = fmt.Errorf("%w: entry %d (%d tokens): %w", ErrTrace, i, entries[i].InputLength, err)
				case len(text) > MaxPromptBytes:
					errs[i] = fmt.Errorf("%w: entry %d: %d bytes exceed the prompt bound of %d bytes", ErrTrace, i, len(text), MaxPromptBytes)
				default:
					tok.entries[i], words[i] = te, int32(synth.TextFields(text))
				}
				if progress != nil {
					mu.Lock()
					done++
					progress(done, len(entries))
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	// The plan keeps of each entry's hash ids those its prompt draws from: the blocks it took
	// and the next one (its rest's stream).
	tp := &TracePlan{entries: make([]planEntry, len(entries)), tok: tok}
	tok.blocks = make(map[int64]textRecipe, len(s.blocks))
	for i, e := range entries {
		ids := e.HashIDs[:min(len(e.HashIDs), int(tok.entries[i].taken)+1)]
		tp.entries[i] = planEntry{atNs: offs[i], words: words[i], maxTokens: int32(e.OutputLength)}
		if err := tp.addRuns(i, ids); err != nil {
			return nil, err
		}
		for _, h := range ids[:tok.entries[i].taken] {
			tok.blocks[h] = s.blocks[h].recipe
		}
	}
	tp.runs = tp.runs[:len(tp.runs):len(tp.runs)]
	tp.deps = traceDeps(entries)
	return tp, nil
}

// tokenSynth synthesises a trace's prompts (planTokenTrace): its block table, shared by the
// workers.
type tokenSynth struct {
	ctx              context.Context
	tc               TokenCounter
	full             func(string) (int64, error)
	local, localText bool
	blockTokens      int64

	// blockEstimates are the word estimates of every block's synthesis (each counts bare text).
	blockEstimates *wordEstimates

	mu     sync.Mutex
	blocks map[int64]*synthBlock
	incs   map[[2]int64]int64 // inc(a, b) by the hash ids a, b
}

// synthBlock is a hash block as synthesis knows it: its recipe, and (local) its tail, the tail's
// count and what a space after the block adds. Its text is written again when needed, not held.
type synthBlock struct {
	once   sync.Once
	err    error
	recipe textRecipe
	tail   string // "" when the block has none (tailCut)
	tailN  int64
	spaceN int64

	firstOnce sync.Once
	first     int64 // the block counted as a prompt of its own
	firstErr  error
}

// count counts a whole prompt, checking ctx first.
func (s *tokenSynth) count(text string) (int64, error) {
	if err := s.ctx.Err(); err != nil {
		return 0, err
	}
	return s.full(text)
}

// block is hash id h's block, synthesised on first use: exactly blockTokens tokens of bare text
// (TextTokens) from h's stream.
func (s *tokenSynth) block(h int64) (*synthBlock, error) {
	s.mu.Lock()
	b, ok := s.blocks[h]
	if !ok {
		b = &synthBlock{}
		s.blocks[h] = b
	}
	s.mu.Unlock()
	b.once.Do(func() {
		rng := blockStream(h)
		var text string
		text, b.recipe, b.err = exactRecipe(&rng, s.blockTokens, newTailCounter(s.ctx, s.tc.TextTokens, s.localText).count, s.blockEstimates)
		if b.err != nil || !s.local {
			return
		}
		if cut := tailCut(text); cut > 0 {
			b.tail = strings.Clone(text[cut:]) // the block's text is not kept
			if b.tailN, b.err = s.count(b.tail); b.err != nil {
				return
			}
			var n int64
			n, b.err = s.count(b.tail + " ")
			b.spaceN = n - b.tailN
		}
	})
	if b.err != nil {
		return nil, fmt.Errorf("hash id %d: %w", h, b.err)
	}
	return b, nil
}

// text is hash id h's block text (b its block).
func (b *synthBlock) text(h int64) string {
	return string(b.recipe.appendTo(nil, blockStream(h)))
}

// firstCount is block h counted as a prompt of its own.
func (s *tokenSynth) firstCount(h int64, b *synthBlock) (int64, error) {
	b.firstOnce.Do(func() { b.first, b.firstErr = s.count(b.text(h)) })
	return b.first, b.firstErr
}

// inc is what block h adds to a prompt whose last block is a (ids ha, h): counted after a's tail.
func (s *tokenSynth) inc(ha int64, a *synthBlock, h int64, b *synthBlock) (int64, error) {
	key := [2]int64{ha, h}
	s.mu.Lock()
	n, ok := s.incs[key]
	s.mu.Unlock()
	if ok {
		return n, nil
	}
	n, err := s.count(a.tail + " " + b.text(h))
	if err != nil {
		return 0, err
	}
	n -= a.tailN
	s.mu.Lock()
	s.incs[key] = n
	s.mu.Unlock()
	return n, nil
}

// entry synthesises entry i's prompt: when the tokenizer is local, from the block table (or, where
// a block it looks at has no tail, from the suffixes each step adds), confirmed by one whole
// count; else (or when that count is not input_length) as counting whole prompts does. It returns how the prompt was built and its text
// (written with buf's storage).
func (s *tokenSynth) entry(buf *[]byte, i int, e TraceEntry) (tokenEntry, string, error) {
	if s.local {
		te, text, ok, err := s.entryFromBlocks(buf, i, e)
		if err == nil && !ok {
			// A block too short for a tail: counts derived from the suffixes each step adds.
			te, text, err = s.entryCounting(buf, i, e, newTailCounter(s.ctx, s.full, true))
		}
		if err != nil {
			return te, "", err
		}
		n, err := s.count(text)
		if err != nil || n == e.InputLength {
			return te, text, err
		}
	}
	return s.entryCounting(buf, i, e, newTailCounter(s.ctx, s.full, false))
}

// entryFromBlocks is entry with counts from the block table (see the top of this file); ok is
// false when a block has no tail to count after.
func (s *tokenSynth) entryFromBlocks(buf *[]byte, i int, e TraceEntry) (te tokenEntry, text string, ok bool, err error) {
	var c int64 // the count of the blocks taken
	var last *synthBlock
	var lastID int64
	rest := restStream(i)
	for j, h := range e.HashIDs {
		b, err := s.block(h)
		if err != nil {
			return te, "", false, err
		}
		if b.tail == "" {
			return te, "", false, nil
		}
		var cj int64
		if j == 0 {
			cj, err = s.firstCount(h, b)
		} else {
			var k int64
			k, err = s.inc(lastID, last, h, b)
			cj = c + k
		}
		if err != nil {
			return te, "", false, err
		}
		if cj+b.spaceN >= e.InputLength { // the prompt so far and a space reach the length
			rest = blockStream(h)
			break
		}
		c, last, lastID, te.taken = cj, b, h, te.taken+1
	}
	count := newTailCounter(s.ctx, s.full, true).count
	if last != nil {
		// The rest after the blocks and a space, counted after the last block's tail.
		base, tc := last.tail+" ", count
		count = func(x string) (int64, error) {
			n, err := tc(base + x)
			return c - last.tailN + n, err
		}
	}
	restRng := rest
	restText, recipe, err := exactRecipe(&restRng, e.InputLength, count, nil)
	if err != nil {
		return te, "", false, err
	}
	te.rest = recipe
	text = s.write(buf, e, te, i)
	if !strings.HasSuffix(text, restText) {
		return te, "", false, fmt.Errorf("internal error: the rest's recipe does not write the rest")
	}
	return te, text, true, nil
}

// write writes the prompt te describes (appendTokenText, with the synthesis' blocks), reusing
// buf's storage.
func (s *tokenSynth) write(buf *[]byte, e TraceEntry, te tokenEntry, i int) string {
	*buf = appendTokenText((*buf)[:0], i, slices.Values(e.HashIDs), te, func(h int64) textRecipe {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.blocks[h].recipe
	})
	return string(*buf)
}

// entryCounting is entry counting with c (whole prompts, or derived from suffixes when local):
// block j of the hash ids is taken while the prompt so far, the block and a space count fewer
// than input_length tokens; the rest continues from the next hash id's stream, or the entry's.
func (s *tokenSynth) entryCounting(buf *[]byte, i int, e TraceEntry, c *tailCounter) (tokenEntry, string, error) {
	var te tokenEntry
	prefix := ""
	rest := restStream(i)
	for _, h := range e.HashIDs {
		b, err := s.block(h)
		if err != nil {
			return te, "", err
		}
		cand := b.text(h)
		if prefix != "" {
			cand = prefix + " " + cand
		}
		n, err := c.count(cand + " ")
		if err != nil {
			return te, "", err
		}
		if n >= e.InputLength {
			rest = blockStream(h)
			break
		}
		prefix, te.taken = cand, te.taken+1
	}
	sep := ""
	if prefix != "" {
		sep = " "
	}
	restText, recipe, err := exactRecipe(&rest, e.InputLength, func(x string) (int64, error) { return c.count(prefix + sep + x) }, nil)
	if err != nil {
		return te, "", err
	}
	te.rest = recipe
	text := s.write(buf, e, te, i)
	if text != prefix+sep+restText {
		return te, "", fmt.Errorf("internal error: the recipes do not write the prompt")
	}
	return te, text, nil
}
