package load

import (
	"bytes"
	"cmp"
	"context"
	"encoding/csv"
	"fmt"
	"io"
	"iter"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/schemas/trace"
)

// Timestamped trace replay (docs/metrics.md "Trace replay"). A trace is package schemas/trace's
// JSONL; ImportMooncake and ImportAzure turn the two public shapes into it, and TracePrompts
// synthesises its prompts.

// The trace format is package schemas/trace's, which the verifier reads too.
const (
	MaxTraceBytes   = trace.MaxBytes
	MaxTraceEntries = trace.MaxEntries
)

// ErrTrace marks a trace that cannot be read or imported.
var ErrTrace = trace.ErrTrace

// TraceEntry is one request of a trace.
type TraceEntry = trace.Entry

// ReadTrace reads a qualkit trace (trace.Read).
func ReadTrace(data []byte) ([]TraceEntry, error) { return trace.Read(data) }

// WriteTrace writes a qualkit trace (trace.Write).
func WriteTrace(w io.Writer, entries []TraceEntry) error { return trace.Write(w, entries) }

// readBounded reads at most MaxTraceBytes from r.
func readBounded(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxTraceBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTrace, err)
	}
	if len(data) > MaxTraceBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTrace, MaxTraceBytes)
	}
	return data, nil
}

// ImportMooncake reads a Mooncake trace (JSONL of timestamp, input_length, output_length,
// hash_ids; the bounds of ReadTrace) and returns its entries sorted by timestamp (stable), the
// timestamps rebased so that the first is 0.
func ImportMooncake(r io.Reader) ([]TraceEntry, error) {
	data, err := readBounded(r)
	if err != nil {
		return nil, err
	}
	lines := bytes.Split(data, []byte{'\n'})
	var out []TraceEntry
	for i, line := range lines {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(out) >= MaxTraceEntries {
			return nil, fmt.Errorf("%w: more than %d entries", ErrTrace, MaxTraceEntries)
		}
		e, err := trace.DecodeLine(line)
		if err != nil {
			return nil, fmt.Errorf("%w: mooncake line %d: %v", ErrTrace, i+1, err)
		}
		out = append(out, e)
	}
	return rebase(out)
}

// azureLayout is the Azure LLM inference trace's TIMESTAMP (UTC, up to 7 fractional digits).
const azureLayout = "2006-01-02 15:04:05.999999999"

// ImportAzure reads an Azure LLM inference trace (CSV with the header
// TIMESTAMP,ContextTokens,GeneratedTokens; TIMESTAMP like 2023-11-16 18:15:46.6805900) and
// returns its entries sorted by time (stable), timestamps in whole ms (rounded) from the first.
func ImportAzure(r io.Reader) ([]TraceEntry, error) {
	data, err := readBounded(r)
	if err != nil {
		return nil, err
	}
	cr := csv.NewReader(bytes.NewReader(data))
	cr.FieldsPerRecord = 3
	cr.ReuseRecord = true
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: azure header: %v", ErrTrace, err)
	}
	if strings.TrimPrefix(head[0], "\ufeff") != "TIMESTAMP" || head[1] != "ContextTokens" || head[2] != "GeneratedTokens" {
		return nil, fmt.Errorf("%w: azure header %q: want TIMESTAMP,ContextTokens,GeneratedTokens", ErrTrace, strings.Join(head, ","))
	}
	type row struct {
		t    time.Time
		e    TraceEntry
		line int
	}
	var rows []row
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: azure: %v", ErrTrace, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rows) >= MaxTraceEntries {
			return nil, fmt.Errorf("%w: more than %d entries", ErrTrace, MaxTraceEntries)
		}
		t, err := time.Parse(azureLayout, rec[0])
		if err != nil {
			return nil, fmt.Errorf("%w: azure line %d: TIMESTAMP %q: want like 2023-11-16 18:15:46.6805900", ErrTrace, line, clip(rec[0], 64))
		}
		in, err1 := strconv.ParseInt(rec[1], 10, 64)
		out, err2 := strconv.ParseInt(rec[2], 10, 64)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("%w: azure line %d: ContextTokens %q, GeneratedTokens %q: want integers", ErrTrace, line, clip(rec[1], 32), clip(rec[2], 32))
		}
		rows = append(rows, row{t: t, e: TraceEntry{InputLength: in, OutputLength: out}, line: line})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("%w: azure trace without rows", ErrTrace)
	}
	slices.SortStableFunc(rows, func(a, b row) int { return a.t.Compare(b.t) })
	out := make([]TraceEntry, len(rows))
	for i, r := range rows {
		d := r.t.Sub(rows[0].t)
		if d < 0 || d.Milliseconds() > trace.MaxTimestampMs {
			return nil, fmt.Errorf("%w: azure line %d: %v after the first row: want at most %d ms", ErrTrace, r.line, d, int64(trace.MaxTimestampMs))
		}
		r.e.TimestampMs = (d + time.Millisecond/2).Milliseconds()
		if err := trace.Check(r.e); err != nil {
			return nil, fmt.Errorf("%w: azure line %d: %v", ErrTrace, r.line, err)
		}
		out[i] = r.e
	}
	return out, nil
}

// rebase sorts entries by timestamp (stable) and shifts them so the first is at 0.
func rebase(es []TraceEntry) ([]TraceEntry, error) {
	if len(es) == 0 {
		return nil, fmt.Errorf("%w: no entries", ErrTrace)
	}
	slices.SortStableFunc(es, func(a, b TraceEntry) int { return cmp.Compare(a.TimestampMs, b.TimestampMs) })
	t0 := es[0].TimestampMs
	for i := range es {
		es[i].TimestampMs -= t0
	}
	return es, nil
}

// traceSalt separates the words of a trace's synthesised prompts from other streams
// (synth.TraceSalt).
const traceSalt = synth.TraceSalt

// TracePrompts synthesises one prompt per entry (ids "trace-" and six or more zero-padded
// digits): max(1, round(input_length × wordsPerToken)) words of the synthetic vocabulary. With
// hash_ids, block j of the prompt (round(blockTokens × wordsPerToken) words, the last block cut
// to the total) is drawn from SplitMix64 seeded with hash_ids[j] ⊕ 0x51574B5452414345, so
// requests sharing a hash id prefix share that prefix of words; the words past the last block
// (or of a request without hash_ids) are drawn from SplitMix64 seeded with the entry's index ⊕
// the salt ⊕ 1<<62. A prompt's MaxTokens is output_length; its AtNs is trace.Offsets'.
func TracePrompts(entries []TraceEntry, wordsPerToken float64, blockTokens int64, timeScale float64) ([]Prompt, error) {
	if !(wordsPerToken > 0) || blockTokens < 1 || !(timeScale > 0) || math.IsInf(timeScale, 0) || math.IsInf(wordsPerToken, 0) {
		return nil, fmt.Errorf("%w: words_per_token %g, block_tokens %d, time_scale %g", ErrTrace, wordsPerToken, blockTokens, timeScale)
	}
	blockWords := synth.TraceBlockWords(blockTokens, wordsPerToken)
	offs, err := trace.Offsets(entries, timeScale)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrace, err)
	}
	out := make([]Prompt, len(entries))
	for i, e := range entries {
		total := synth.TraceWords(e.InputLength, wordsPerToken)
		if total*8 > MaxPromptBytes {
			return nil, fmt.Errorf("%w: entry %d: %d words exceed the prompt bound of %d bytes", ErrTrace, i, total, MaxPromptBytes)
		}
		out[i] = Prompt{ID: traceID(i), Text: traceWordText(i, slices.Values(e.HashIDs), total, blockWords), MaxTokens: e.OutputLength, AtNs: offs[i]}
	}
	return out, nil
}

// traceID is entry i's prompt id (synth.TraceID).
func traceID(i int) string { return synth.TraceID(i) }

// traceWordText is entry i's prompt text (TracePrompts): appendTraceWords' words.
func traceWordText(i int, hashIDs iter.Seq[int64], total, blockWords int) string {
	return ownedString(appendTraceWords(make([]byte, 0, total*7), i, hashIDs, total, blockWords))
}

// ownedString is b as a string without a copy: b must be the only reference to its bytes and
// never written again (as strings.Builder does).
func ownedString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// spacedWords[k] is " " + syntheticWords[k], a word after another (synth.SpacedWords).
var spacedWords = synth.SpacedWords

// appendTraceWords appends entry i's prompt text (TracePrompts) to b (synth.AppendTraceWords).
func appendTraceWords(b []byte, i int, hashIDs iter.Seq[int64], total, blockWords int) []byte {
	return synth.AppendTraceWords(b, i, hashIDs, total, blockWords)
}

// readTraceCorpus resolves a trace corpus: repoRoot/path, bound by digest, read with ReadTrace
// and synthesised with TracePrompts.
func readTraceCorpus(corpus contract.Corpus, repoRoot string) ([]Prompt, error) {
	rel := corpus.Path
	if rel == "" || strings.Contains(rel, `\`) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("%w: path %q: want a repository-relative path that stays inside the repository", ErrCorpus, rel)
	}
	wpt := corpus.WordsPerToken
	switch {
	case corpus.LengthUnit == contract.TraceCorpusLengthUnitWordsPerToken && wpt == nil:
		return nil, fmt.Errorf("%w: trace %s: length_unit %s wants words_per_token", ErrCorpus, rel, corpus.LengthUnit)
	case corpus.LengthUnit == contract.TraceCorpusLengthUnitTokens && wpt == nil:
		// The prompts are synthesised to exact token counts once the case's tokenizer is
		// loaded (TraceTokenCorpus); these one-word-per-token stand-ins only size the plan.
		one := 1.0
		wpt = &one
	case corpus.LengthUnit != contract.TraceCorpusLengthUnitWordsPerToken:
		return nil, fmt.Errorf("%w: trace %s: length_unit %q with words_per_token: want words_per_token with it, or tokens without", ErrCorpus, rel, corpus.LengthUnit)
	}
	entries, scale, block, err := readTraceBlocks(corpus, repoRoot)
	if err != nil {
		return nil, err
	}
	ps, err := TracePrompts(entries, *wpt, block, scale)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorpus, rel, err)
	}
	return ps, nil
}

// readTraceBlocks reads a trace corpus's entries (bound by digest), its time scale and its
// block_tokens (traceBlockTokens).
func readTraceBlocks(corpus contract.Corpus, repoRoot string) ([]TraceEntry, float64, int64, error) {
	entries, scale, err := readTraceEntries(corpus, repoRoot)
	if err != nil {
		return nil, 0, 0, err
	}
	block, err := traceBlockTokens(corpus, entries)
	return entries, scale, block, err
}

// traceBlockTokens is a trace corpus's block_tokens; a trace none of whose entries has hash_ids
// (Azure's) may omit it (then 1: no block is ever drawn), and one with hash_ids without it is an
// error naming the first such entry.
func traceBlockTokens(corpus contract.Corpus, entries []TraceEntry) (int64, error) {
	if corpus.BlockTokens != nil {
		return *corpus.BlockTokens, nil
	}
	for i, e := range entries {
		if len(e.HashIDs) > 0 {
			return 0, fmt.Errorf("%w: trace %s: entry %d (line %d) has hash_ids: declare block_tokens, the token length of one hash block (Mooncake: 512)", ErrCorpus, corpus.Path, i, i+1)
		}
	}
	return 1, nil
}

// TraceEntries reads a trace corpus's entries from repoRoot, bound by digest (for the preflight's
// schedule rule, rules.CheckTraceSchedule).
func TraceEntries(corpus contract.Corpus, repoRoot string) ([]TraceEntry, error) {
	es, _, err := readTraceEntries(corpus, repoRoot)
	return es, err
}

// readTraceEntries reads a trace corpus's entries (bound by digest) and its time scale.
func readTraceEntries(corpus contract.Corpus, repoRoot string) ([]TraceEntry, float64, error) {
	rel := corpus.Path
	if rel == "" || strings.Contains(rel, `\`) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, 0, fmt.Errorf("%w: path %q: want a repository-relative path that stays inside the repository", ErrCorpus, rel)
	}
	data, err := evidence.ReadFileLimited(filepath.Join(repoRoot, filepath.FromSlash(rel)), MaxTraceBytes)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: read %s: %w", ErrCorpus, rel, err)
	}
	if got := evidence.DigestOf(data); got != corpus.Digest {
		return nil, 0, fmt.Errorf("%w: %s has digest %s, the workload declares %s", ErrCorpus, rel, got, corpus.Digest)
	}
	entries, err := ReadTrace(data)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %s: %w", ErrCorpus, rel, err)
	}
	scale := 1.0
	if corpus.TimeScale != nil {
		scale = *corpus.TimeScale
	}
	return entries, scale, nil
}

// TraceTokenCorpus resolves a trace corpus of length_unit tokens with the case's bound
// tokenizer: its entries (bound by digest, as readTraceCorpus reads them) synthesised with
// TraceTokenPrompts (ctx and progress as there), every prompt held. A replay plans it with
// ResolveTokenTrace instead, which holds none.
func TraceTokenCorpus(ctx context.Context, corpus contract.Corpus, repoRoot string, tc TokenCounter, template contract.TokenizerTemplate, progress func(done, total int)) ([]Prompt, error) {
	if corpus.Source != contract.CorpusSourceTrace || corpus.LengthUnit != contract.TraceCorpusLengthUnitTokens {
		return nil, fmt.Errorf("%w: trace %s: want length_unit %s", ErrCorpus, corpus.Path, contract.TraceCorpusLengthUnitTokens)
	}
	entries, scale, block, err := readTraceBlocks(corpus, repoRoot)
	if err != nil {
		return nil, err
	}
	ps, err := TraceTokenPrompts(ctx, entries, block, scale, tc, template, progress)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorpus, corpus.Path, err)
	}
	return ps, nil
}

// CheckTrace checks a trace corpus as Resolve and ResolveTokenTrace read it (path, digest,
// entries, block_tokens, each entry within the prompt bound as its length unit sizes it) without
// synthesising a prompt: preflight refuses a bad trace of tokens before its tokenizer is loaded.
func CheckTrace(corpus contract.Corpus, repoRoot string) error {
	entries, scale, _, err := readTraceBlocks(corpus, repoRoot)
	if err != nil {
		return err
	}
	if _, err := trace.Offsets(entries, scale); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCorpus, corpus.Path, fmt.Errorf("%w: %w", ErrTrace, err))
	}
	for i, e := range entries {
		if e.InputLength*8 > MaxPromptBytes {
			return fmt.Errorf("%w: %s: %w: entry %d: %d tokens exceed the prompt bound of %d bytes", ErrCorpus, corpus.Path, ErrTrace, i, e.InputLength, MaxPromptBytes)
		}
	}
	return nil
}

// TraceTokenPrompts synthesises one prompt per entry, exactly input_length tokens as tc counts
// it with template (a user message; docs/metrics.md "Trace replay"). Block j of a hash_ids
// prefix is the text of SyntheticTokens' exact-length synthesis of blockTokens tokens (counted
// as bare text) from SplitMix64 seeded with hash_ids[j] ⊕ 0x51574B5452414345, so requests
// sharing a hash id prefix share those blocks' text; blocks are joined by a space and taken
// while the prompt so far (and a space) counts fewer than input_length tokens. The rest is the
// same exact-length synthesis continuing that prefix to input_length tokens, its words drawn
// from the next hash id's stream (so a cut last block still shares its first words) or, past
// the hash ids, from SplitMix64 seeded with the entry's index ⊕ the salt ⊕ 1<<62. Ids, MaxTokens
// and AtNs are TracePrompts'. An input_length the template's own tokens already reach is an
// error naming the entry.
//
// The counts are those of whole prompts. A tokenizer whose counts are local at word boundaries
// (probeLocal) has them derived from a table of the trace's hash blocks, each counted once, and
// from the suffix each step of the rest adds (tracetokens.go, tailCounter), so synthesis is
// linear in the trace's distinct tokens; each prompt is counted whole once more to confirm it
// (else it is synthesised again counting whole prompts). Entries are synthesised on every core
// (tc must be safe for concurrent use, as TokenCounter says); the bytes do not depend on it.
// Cancelling ctx stops it within one count with ctx's error; progress, when set, is told the
// number of entries done after each one (never concurrently). PlanTokenTrace is the same
// synthesis holding no prompt.
func TraceTokenPrompts(ctx context.Context, entries []TraceEntry, blockTokens int64, timeScale float64, tc TokenCounter, template contract.TokenizerTemplate, progress func(done, total int)) ([]Prompt, error) {
	tp, err := PlanTokenTrace(ctx, entries, blockTokens, timeScale, tc, template, progress)
	if err != nil {
		return nil, err
	}
	return tp.prompts(), nil
}

// traceTokenPrompts is TraceTokenPrompts with full (a whole prompt's count) and whether counts
// may be derived from blocks and suffixes (local).
func traceTokenPrompts(ctx context.Context, entries []TraceEntry, blockTokens int64, timeScale float64, tc TokenCounter, full func(string) (int64, error), local bool, progress func(done, total int)) ([]Prompt, error) {
	tp, err := planTokenTrace(ctx, entries, blockTokens, timeScale, tc, full, local, progress)
	if err != nil {
		return nil, err
	}
	return tp.prompts(), nil
}

// prompts are every prompt of the plan, written now.
func (tp *TracePlan) prompts() []Prompt {
	out := make([]Prompt, tp.Len())
	for i := range out {
		out[i] = tp.Prompt(i)
	}
	return out
}
