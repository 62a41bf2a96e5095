package load

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"iter"
	"math"
	"sync"
	"unsafe"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/schemas/trace"
)

// A trace replay at production scale (issue 28 item 4): a trace's prompts are not built when the
// campaign is planned but when their request is about to be sent. TracePlan keeps per entry only
// what builds its prompt later (its offset, its length in words, its max_tokens and a reference
// to its hash ids); the prompts TracePrompts would build are synthesised from it one at a time,
// the same bytes.

// TracePlan is a trace corpus of length_unit words_per_token planned entry by entry
// (ResolveTrace, PlanTrace). Its memory is a few dozen bytes per entry plus its hash id table,
// stored as runs of consecutive ids (a conversation's blocks are numbered in order, so a
// Mooncake entry is a few runs whatever its length). Safe for concurrent use.
type TracePlan struct {
	entries    []planEntry
	runs       []idRun
	blockWords int
	// tok, for a trace of length_unit tokens (PlanTokenTrace), is how each prompt was built;
	// nil for words_per_token.
	tok *tokenTable
	// deps are the entries' parents and turns (tracedeps.go); nil when no entry waits for one.
	deps *entryDeps

	promptSetOnce sync.Once
	promptSet     string
	promptSetErr  error
}

// planEntry is one entry of a TracePlan: 24 bytes. words is its prompt's length in words
// (space-separated fields, for a trace of tokens).
type planEntry struct {
	atNs             int64
	words, maxTokens int32
	runLo, runN      uint32
}

// idRun is the hash ids first, first+1, ..., first+n-1.
type idRun struct {
	first int64
	n     int64
}

// maxWordBytes is the longest word of the synthetic vocabulary.
var maxWordBytes = synth.MaxWordBytes

// PlanTrace plans entries as TracePrompts synthesises them (the same checks and errors): the
// prompts are built later, one at a time, by Prompt.
func PlanTrace(entries []TraceEntry, wordsPerToken float64, blockTokens int64, timeScale float64) (*TracePlan, error) {
	if !(wordsPerToken > 0) || blockTokens < 1 || !(timeScale > 0) || math.IsInf(timeScale, 0) || math.IsInf(wordsPerToken, 0) {
		return nil, fmt.Errorf("%w: words_per_token %g, block_tokens %d, time_scale %g", ErrTrace, wordsPerToken, blockTokens, timeScale)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrTrace)
	}
	offs, err := trace.Offsets(entries, timeScale)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	tp := &TracePlan{entries: make([]planEntry, len(entries)), blockWords: synth.TraceBlockWords(blockTokens, wordsPerToken)}
	for i, e := range entries {
		total := synth.TraceWords(e.InputLength, wordsPerToken)
		if total*8 > MaxPromptBytes {
			return nil, fmt.Errorf("%w: entry %d: %d words exceed the prompt bound of %d bytes", ErrTrace, i, total, MaxPromptBytes)
		}
		tp.entries[i] = planEntry{atNs: offs[i], words: int32(total), maxTokens: int32(e.OutputLength)}
		// Only the hash ids the prompt draws from are kept: ceil(total / blockWords) of them.
		if err := tp.addRuns(i, e.HashIDs[:min(len(e.HashIDs), (total+tp.blockWords-1)/tp.blockWords)]); err != nil {
			return nil, err
		}
		if (maxWordBytes+1)*total-1 > MaxPromptBytes {
			// Only these words' draw can tell whether the text exceeds the bound (Resolve's
			// check of a whole prompt): draw it now, once.
			if p := tp.Prompt(i); len(p.Text) > MaxPromptBytes {
				return nil, fmt.Errorf("%w: entry %d: %d bytes exceed the prompt bound of %d bytes", ErrTrace, i, len(p.Text), MaxPromptBytes)
			}
		}
	}
	tp.runs = tp.runs[:len(tp.runs):len(tp.runs)]
	tp.deps = traceDeps(entries)
	return tp, nil
}

// addRuns stores entry i's hash ids ids as runs of consecutive ids.
func (tp *TracePlan) addRuns(i int, ids []int64) error {
	pe := &tp.entries[i]
	pe.runLo = uint32(len(tp.runs))
	for _, h := range ids {
		if k := len(tp.runs) - 1; k >= int(pe.runLo) && tp.runs[k].first+tp.runs[k].n == h {
			tp.runs[k].n++
			continue
		}
		tp.runs = append(tp.runs, idRun{first: h, n: 1})
	}
	if len(tp.runs) > math.MaxUint32 {
		return fmt.Errorf("%w: entry %d: more than %d runs of hash ids", ErrTrace, i, uint32(math.MaxUint32))
	}
	pe.runN = uint32(len(tp.runs)) - pe.runLo
	return nil
}

// Len is the number of entries.
func (tp *TracePlan) Len() int { return len(tp.entries) }

// Prompt is entry i's prompt, TracePrompts' i-th (TraceTokenPrompts' for a trace of tokens):
// its text written now.
func (tp *TracePlan) Prompt(i int) Prompt {
	e := tp.entries[i]
	return Prompt{ID: traceID(i), Text: ownedString(tp.appendText(make([]byte, 0, int(e.words)*7+64), i)), MaxTokens: int64(e.maxTokens), AtNs: e.atNs}
}

// appendText appends entry i's prompt text to b.
func (tp *TracePlan) appendText(b []byte, i int) []byte {
	if tp.tok != nil {
		return tp.appendTokenPrompt(b, i)
	}
	e := tp.entries[i]
	return appendTraceWords(b, i, tp.hashIDs(e), int(e.words), tp.blockWords)
}

// atNs is entry i's scheduled offset; maxTokens its output_length; words its prompt's words.
func (tp *TracePlan) atNs(i int) int64      { return tp.entries[i].atNs }
func (tp *TracePlan) maxTokens(i int) int64 { return int64(tp.entries[i].maxTokens) }
func (tp *TracePlan) words(i int) int       { return int(tp.entries[i].words) }

// hashIDs yields e's hash ids in order.
func (tp *TracePlan) hashIDs(e planEntry) iter.Seq[int64] {
	return func(yield func(int64) bool) {
		for _, r := range tp.runs[e.runLo : e.runLo+e.runN] {
			for h := r.first; h < r.first+r.n; h++ {
				if !yield(h) {
					return
				}
			}
		}
	}
}

// PromptSetSHA256 is the prompt set hash of the plan's prompts in order (metrics.PromptSetSHA256
// of every prompt, what a row records), computed on the first call by synthesising each prompt in
// turn: the canonical JSON array is hashed element by element, never held whole.
func (tp *TracePlan) PromptSetSHA256() (string, error) {
	tp.promptSetOnce.Do(func() { tp.promptSet, tp.promptSetErr = tp.hashPromptSet(context.Background()) })
	return tp.promptSet, tp.promptSetErr
}

// hashPromptSet computes PromptSetSHA256, checking ctx before each prompt. A goroutine writes
// the prompts' texts (into a few reused buffers) while this one hashes them, so that on two cores
// the time is the larger of the two, not their sum.
func (tp *TracePlan) hashPromptSet(ctx context.Context) (string, error) {
	const buffers = 4
	texts := make(chan []byte, buffers)
	free := make(chan []byte, buffers)
	for range buffers {
		free <- nil
	}
	stop, done := make(chan struct{}), make(chan struct{})
	defer func() { close(stop); <-done }()
	go func() {
		defer close(done)
		defer close(texts)
		for i := range tp.entries {
			var b []byte
			select {
			case b = <-free:
			case <-stop:
				return
			}
			select {
			case texts <- tp.appendText(b[:0], i):
			case <-stop:
				return
			}
		}
	}()
	h := sha256.New()
	h.Write([]byte{'['})
	i := 0
	for text := range texts {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		id := traceID(i)
		if i > 0 {
			h.Write([]byte{','})
		}
		if plainJSON(id) && plainJSON(text) {
			// RFC 8785 writes such strings as they are, and "id" sorts before "text".
			io.WriteString(h, `{"id":"`+id+`","text":"`)
			h.Write(text)
			io.WriteString(h, `"}`)
		} else {
			b, err := jsonstrict.Canonical(contract.Prompt{ID: id, Text: string(text)})
			if err != nil {
				return "", fmt.Errorf("prompt %d: %w", i, err)
			}
			h.Write(b)
		}
		free <- text
		i++
	}
	h.Write([]byte{']'})
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// plainJSON reports whether s is printable ASCII without '"' or '\\', which a canonical JSON
// string holds unescaped.
func plainJSON[S string | []byte](s S) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// PlanBytes is the memory the plan holds (its entries and hash id runs; for a trace of tokens
// also each entry's and each block's recipe, its tail's bytes included, and the block map's
// keys), for the benchmark.
func (tp *TracePlan) PlanBytes() int {
	n := cap(tp.entries)*24 + cap(tp.runs)*16
	if tp.tok != nil {
		n += cap(tp.tok.entries) * int(unsafe.Sizeof(tokenEntry{}))
		for _, te := range tp.tok.entries {
			n += len(te.rest.tail)
		}
		for _, r := range tp.tok.blocks {
			n += 8 + int(unsafe.Sizeof(r)) + len(r.tail)
		}
	}
	return n
}

// LazyTrace reports whether a corpus is a trace whose prompts are planned entry by entry and
// built when their request is: length_unit words_per_token (ResolveTrace) or tokens
// (ResolveTokenTrace, once the case's tokenizer is loaded).
func LazyTrace(corpus contract.Corpus) bool {
	return corpus.Source == contract.CorpusSourceTrace && (corpus.LengthUnit == contract.TraceCorpusLengthUnitWordsPerToken || corpus.LengthUnit == contract.TraceCorpusLengthUnitTokens)
}

// ResolveTrace resolves a trace corpus of length_unit words_per_token as Resolve does (bound by
// digest, the same checks and errors) into a TracePlan, and computes its prompt set hash, so that
// the whole corpus is synthesised once here, one prompt at a time, and not held. Cancelling ctx
// stops the hash within one prompt, with ctx's error.
func ResolveTrace(ctx context.Context, corpus contract.Corpus, repoRoot string) (*TracePlan, error) {
	if corpus.Source != contract.CorpusSourceTrace || corpus.LengthUnit != contract.TraceCorpusLengthUnitWordsPerToken {
		return nil, fmt.Errorf("%w: trace %s: length_unit %q: want %s", ErrCorpus, corpus.Path, corpus.LengthUnit, contract.TraceCorpusLengthUnitWordsPerToken)
	}
	if corpus.WordsPerToken == nil {
		return nil, fmt.Errorf("%w: trace %s: length_unit %s wants words_per_token", ErrCorpus, corpus.Path, corpus.LengthUnit)
	}
	entries, scale, block, err := readTraceBlocks(corpus, repoRoot)
	if err != nil {
		return nil, err
	}
	tp, err := PlanTrace(entries, *corpus.WordsPerToken, block, scale)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorpus, corpus.Path, err)
	}
	return tp.withPromptSet(ctx, corpus.Path)
}

// withPromptSet hashes the plan's prompt set once, now (a resolved plan's set is part of its
// identity), honouring ctx; path names the trace in errors.
func (tp *TracePlan) withPromptSet(ctx context.Context, path string) (*TracePlan, error) {
	set, err := tp.hashPromptSet(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%w: %s: prompt set: %w", ErrCorpus, path, err)
	}
	tp.promptSetOnce.Do(func() { tp.promptSet = set })
	return tp, nil
}
