package check

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"fmt"
	"iter"
	"slices"
	"strconv"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/schemas/wire"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Request bodies: every measured, priming and warmup record's body_digest is recomputed from the
// body the runner renders for it (package schemas/wire) out of the workload case, the model id,
// the prompt the record names (written again by package schemas/synth for a synthesised corpus),
// the request's seed and the case's tools. The corpus is written one prompt at a time and no
// prompt is held past its records' bodies, so a trace of any length is checked in the memory of
// its entries and one prompt.

// corpusGen is a serving case's corpus as the verifier writes it again.
type corpusGen struct {
	n int
	// id is prompt i's id.
	id func(i int) string
	// each yields the prompts in declared order, each written when it is yielded.
	each iter.Seq2[int, wire.Prompt]
}

// regenCorpus returns the case's corpus as the runner resolved it: inline and file corpora as
// written, synthetic and shared-prefix corpora of words by their generators, a trace of
// length_unit words_per_token from its bound file. nil and a note saying what rests on the
// records when the verifier cannot write it.
func regenCorpus(s *load.Snapshot, c *finding.Collector, wc *contract.Case) (*corpusGen, string) {
	cp := wc.Corpus
	if cp == nil {
		return nil, "no corpus"
	}
	switch cp.Source {
	case contract.CorpusSourceInline:
		return promptList(cp.Prompts), ""
	case contract.CorpusSourceFile:
		f, note := boundCorpusFile(s, c, cp.Path, cp.Digest, "corpus file")
		if f == nil {
			return nil, note
		}
		var out []contract.Prompt
		sc := bufio.NewScanner(bytes.NewReader(f.Raw))
		sc.Buffer(nil, limits.MaxDocumentBytes)
		for sc.Scan() {
			var p contract.Prompt
			if err := jsonstrict.DecodeInto(sc.Bytes(), &p); err != nil {
				return nil, fmt.Sprintf("corpus file %s line %d: %v", cp.Path, len(out)+1, err)
			}
			out = append(out, p)
		}
		return promptList(out), ""
	case contract.CorpusSourceSynthetic:
		if cp.PromptTokens != nil {
			return nil, "synthetic corpus of prompt_tokens: its prompts are synthesised to exact token counts with the case's tokenizer, which the verifier does not load: the prompt set and the request bodies (body_digest) rest on the records"
		}
		seed, count, lo, hi, err := synth.CheckSynthetic(*cp)
		if err != nil {
			return nil, "synthetic corpus: " + err.Error() + ": the prompt set and the request bodies were not recomputed"
		}
		return &corpusGen{n: count, id: synth.SyntheticID, each: fromSynth(synth.SyntheticWords(seed, count, lo, hi))}, ""
	case contract.CorpusSourceSharedPrefix:
		if cp.PrefixTokens != nil {
			return nil, "shared-prefix corpus of prefix_tokens: its prompts are synthesised to exact token counts with the case's tokenizer, which the verifier does not load: the prompt set and the request bodies (body_digest) rest on the records"
		}
		a, err := synth.CheckSharedPrefix(*cp)
		if err != nil {
			return nil, "shared-prefix corpus: " + err.Error() + ": the prompt set and the request bodies were not recomputed"
		}
		return &corpusGen{n: a.Groups * a.Suffixes, id: func(i int) string { return synth.SharedPrefixID(i/a.Suffixes, i%a.Suffixes) }, each: fromSynth(a.Prompts())}, ""
	case contract.CorpusSourceTrace:
		return traceCorpus(s, c, cp)
	}
	return nil, "session corpus: each turn's body carries the server's earlier replies, which the evidence keeps only by digest (reply_digests): the request bodies (body_digest) rest on the records (the prompt set, think times and histories are checked against the corpus: rowcheck.SessionCorpus)"
}

// boundCorpusFile is the snapshot's copy of a file a case reads (a corpus file, a trace, a tools
// file) when it was read and its digest is the workload's; else nil and why not. The runner binds
// every such file as a corpus artifact: one the receipt does not bind, or binds with another
// digest than the workload declares, is a finding (corpus_mismatch), since the checks that read it
// would otherwise be skipped by leaving it out.
func boundCorpusFile(s *load.Snapshot, c *finding.Collector, path, digest, what string) (*load.File, string) {
	f := s.Files[path]
	if f == nil {
		c.Add(s.Receipt.Path, "/artifacts", reason.ErrCorpusMismatch, "the workload's %s %s is not bound by the receipt: the runner binds every corpus, trace and tools file a serving case reads", what, path)
		return nil, what + " " + path + " is not bound by the receipt: the prompt set and the request bodies were not recomputed"
	}
	if !f.Present || f.Raw == nil {
		return nil, what + " " + path + " is not available: the prompt set and the request bodies were not recomputed"
	}
	if f.Digest != digest {
		c.Add(s.Receipt.Path, "/artifacts", reason.ErrCorpusMismatch, "the receipt binds %s %s with digest %s, the workload declares %s", what, path, f.Digest, digest)
		return nil, what + " " + path + " does not match the workload's digest: the prompt set and the request bodies were not recomputed"
	}
	return f, ""
}

// traceCorpus is a trace corpus of length_unit words_per_token (synth.AppendTraceWords over the
// bound trace's entries).
func traceCorpus(s *load.Snapshot, c *finding.Collector, cp *contract.Corpus) (*corpusGen, string) {
	if cp.LengthUnit != contract.TraceCorpusLengthUnitWordsPerToken || cp.WordsPerToken == nil || !(*cp.WordsPerToken > 0) {
		return nil, "trace corpus of length_unit tokens: its prompts are synthesised to exact token counts with the case's tokenizer, which the verifier does not load: the prompt set and the request bodies (body_digest) rest on the records"
	}
	f, note := boundCorpusFile(s, c, cp.Path, cp.Digest, "trace")
	if f == nil {
		return nil, note
	}
	entries, err := trace.Read(f.Raw)
	if err != nil {
		return nil, fmt.Sprintf("trace %s: %v: the prompt set and the request bodies were not recomputed", cp.Path, err)
	}
	block := int64(1) // no block is ever drawn (a trace without hash_ids)
	if cp.BlockTokens != nil {
		block = *cp.BlockTokens
	} else if slices.ContainsFunc(entries, func(e trace.Entry) bool { return len(e.HashIDs) > 0 }) {
		return nil, fmt.Sprintf("trace %s has hash_ids and declares no block_tokens: the prompt set and the request bodies were not recomputed", cp.Path)
	}
	if block < 1 {
		return nil, fmt.Sprintf("trace %s: block_tokens %d: the prompt set and the request bodies were not recomputed", cp.Path, block)
	}
	wpt := *cp.WordsPerToken
	blockWords := synth.TraceBlockWords(block, wpt)
	for i, e := range entries {
		if synth.TraceWords(e.InputLength, wpt)*8 > synth.MaxPromptBytes {
			return nil, fmt.Sprintf("trace %s entry %d: %d input tokens at %g words per token exceed any prompt the runner sends: the prompt set and the request bodies were not recomputed", cp.Path, i, e.InputLength, wpt)
		}
	}
	each := func(yield func(int, wire.Prompt) bool) {
		var b []byte
		for i, e := range entries {
			b = synth.AppendTraceWords(b[:0], i, slices.Values(e.HashIDs), synth.TraceWords(e.InputLength, wpt), blockWords)
			if !yield(i, wire.Prompt{ID: synth.TraceID(i), Text: string(b), MaxTokens: e.OutputLength}) {
				return
			}
		}
	}
	return &corpusGen{n: len(entries), id: synth.TraceID, each: each}, ""
}

// promptList is a corpus written out.
func promptList(ps []contract.Prompt) *corpusGen {
	return &corpusGen{n: len(ps), id: func(i int) string { return ps[i].ID }, each: func(yield func(int, wire.Prompt) bool) {
		for i, p := range ps {
			if !yield(i, wire.Prompt{ID: p.ID, Text: p.Text, System: p.System}) {
				return
			}
		}
	}}
}

// fromSynth is a generator's prompts as bodies ask them.
func fromSynth(ps iter.Seq2[int, synth.Prompt]) iter.Seq2[int, wire.Prompt] {
	return func(yield func(int, wire.Prompt) bool) {
		for i, p := range ps {
			if !yield(i, wire.Prompt{ID: p.ID, Text: p.Text, System: p.System}) {
				return
			}
		}
	}
}

// bodyRef is a record whose body is checked, and its row.
type bodyRef struct {
	rec *record.Record
	row int
}

// bodyCheck is what renders a case's bodies: the model id, the tools the chat body offers, each
// row's cold nonces.
type bodyCheck struct {
	c      *finding.Collector
	cr     *contract.CaseResultDoc
	wc     *contract.Case
	model  string
	tools  *wire.Tools
	nonces map[int][]string
}

// regenerate writes the case's corpus once, in order: it returns the prompt set hash and, unless
// why says the bodies cannot be rendered, checks the body_digest of every measured and priming
// record (by the prompt its prompt_id names; one whose prompt is not the corpus's is left to the
// prompt id check) and of every warmup record (the row's warmup prompts, synth.Warmups over the
// corpus's shapes) against the sha256 of the body rendered for it (body_mismatch).
func regenerate(s *load.Snapshot, c *finding.Collector, cr *contract.CaseResultDoc, wc *contract.Case, gen *corpusGen) (string, error) {
	bc, why := bodyInputs(s, c, cr, wc)
	if bc == nil {
		c.Note("case %s: %s", wc.ID, why)
	}
	asks := map[string][]bodyRef{}
	var warm []bodyRef
	if bc != nil {
		for j, row := range cr.Rows {
			f := s.Files[row.Records.Path]
			if f == nil || f.Records == nil {
				continue
			}
			recs := RowRecords(nil, cr, row, f.Records)
			if regime(wc) == contract.CacheRegimeCold {
				last := int64(-1)
				for _, r := range recs {
					last = max(last, r.Index)
				}
				if last >= limits.MaxRecordsPerFile {
					c.Add(row.Records.Path, "", reason.ErrBodyMismatch, "a request index of %d: no row of at most %d requests has one, so no cold nonce was drawn for it", last, int64(limits.MaxRecordsPerFile))
					continue
				}
				bc.nonces[j] = synth.Nonces(seed(s), row.Concurrency, row.Repetition, int(last+1))
			}
			for _, r := range recs {
				switch {
				case r.Session != nil:
				case r.Warmup && !r.Priming:
					warm = append(warm, bodyRef{r, j})
				default:
					asks[r.PromptID] = append(asks[r.PromptID], bodyRef{r, j})
				}
			}
		}
	}
	w := int(min(wc.WarmupRequests, int64(gen.n)))
	type shape struct {
		system string
		fields int
	}
	shapes := make([]shape, 0, w)
	ps := evidence.NewPromptSetHash()
	for i, p := range gen.each {
		if err := ps.Add(contract.Prompt{ID: p.ID, Text: p.Text, System: p.System}); err != nil {
			return "", err
		}
		if i < w {
			shapes = append(shapes, shape{p.System, synth.TextFields(p.Text)})
		}
		if bc == nil {
			continue
		}
		bc.checkAll(asks[p.ID], p)
		delete(asks, p.ID)
	}
	if bc != nil && len(warm) > 0 && len(shapes) > 0 {
		type rowKey struct{ c, r int64 }
		warmups := map[rowKey][]synth.Prompt{}
		for _, ref := range warm {
			row := cr.Rows[ref.row]
			k := rowKey{row.Concurrency, row.Repetition}
			ws, ok := warmups[k]
			if !ok {
				// The warmups are drawn in turn from one stream: those up to the row's last warmup
				// record, at most the case's warmup_requests.
				last := int64(0)
				for _, o := range warm {
					if o.row == ref.row {
						last = max(last, o.rec.Index)
					}
				}
				n := int(min(wc.WarmupRequests, last+1))
				ws = synth.Warmups(len(shapes), func(i int) (string, int) { return shapes[i].system, shapes[i].fields }, n, seed(s), row.Concurrency, row.Repetition)
				warmups[k] = ws
			}
			r := ref.rec
			if r.Index < 0 || r.Index >= int64(len(ws)) || ws[r.Index].ID != r.PromptID {
				continue // not the warmup of its index: the row check's finding (row_mismatch)
			}
			bc.check(ref, wire.Prompt{ID: ws[r.Index].ID, Text: ws[r.Index].Text, System: ws[r.Index].System})
		}
	}
	return ps.Sum(), nil
}

// bodyInputs is what renders the case's bodies besides the prompt: the model id the requests
// named (the run configuration's --model-id, else the case's launch recipe's model_id) and the
// case's tools (its bound tools file); nil and why not when one is not available.
func bodyInputs(s *load.Snapshot, c *finding.Collector, cr *contract.CaseResultDoc, wc *contract.Case) (*bodyCheck, string) {
	model := RunConfigModelID(s)
	if model == "" {
		if r := s.Recipes[wc.Launch]; r != nil {
			model = r.ModelID
		}
	}
	if model == "" {
		return nil, "neither the run configuration nor the case's launch recipe " + wc.Launch + " (not available) names the model id the requests named: the request bodies (body_digest) were not recomputed"
	}
	bc := &bodyCheck{c: c, cr: cr, wc: wc, model: model, nonces: map[int][]string{}}
	if t := wc.Tools; t != nil {
		f, note := boundCorpusFile(s, c, t.Path, t.Digest, "tools file")
		if f == nil {
			return nil, note
		}
		tools, err := wire.OfferTools(f.Raw, *t)
		if err != nil {
			return nil, fmt.Sprintf("tools file %s: %v: the request bodies (body_digest) were not recomputed", t.Path, err)
		}
		bc.tools = tools
	}
	return bc, ""
}

// seedKey is the member a body carries its seed in: a key, since within an encoded string a '"'
// is always escaped and never follows a letter.
var seedKey = []byte(`"seed":`)

// checkAll checks the records refs, which all ask p. Their bodies differ in their seed alone (a
// cold row's nonce aside), so p's body is rendered once with the largest seed, split around it,
// and each record's body is that body with its own seed's digits: the bytes wire.Body writes
// (encoding/json writes an int64 as strconv.AppendInt does), hashed without being encoded again.
// A body whose split is not unique (a tools file that holds the same member and number) is
// rendered for each record.
func (bc *bodyCheck) checkAll(refs []bodyRef, p wire.Prompt) {
	if len(refs) == 0 {
		return
	}
	var head, tail []byte
	if bc.wc.Sampling != nil && bc.wc.Sampling.Seed != nil && len(refs) > 1 {
		probe := int64(wire.SeedLimit - 1)
		if body, err := wire.Body(bc.wc, bc.model, p, &probe, bc.tools); err == nil {
			mark := strconv.AppendInt(slices.Clip(seedKey), probe, 10)
			if k := bytes.Index(body, mark); k >= 0 && bytes.Count(body, mark) == 1 {
				head, tail = body[:k+len(seedKey)], body[k+len(mark):]
			}
		}
	}
	h := sha256.New()
	var digits []byte
	var sum [32]byte
	for _, ref := range refs {
		seed := wire.RequestSeed(bc.wc.Sampling, ref.rec.Index)
		if head == nil || bc.nonces[ref.row] != nil || seed == nil {
			bc.check(ref, p)
			continue
		}
		h.Reset()
		h.Write(head)
		digits = strconv.AppendInt(digits[:0], *seed, 10)
		h.Write(digits)
		h.Write(tail)
		if h.Sum(sum[:0]); sum != ref.rec.BodyDigest {
			bc.check(ref, p) // rendered whole, so that the finding names the body wire.Body writes
		}
	}
}

// check renders ref's body asking p and compares its sha256 with the record's body_digest.
func (bc *bodyCheck) check(ref bodyRef, p wire.Prompt) {
	r, row := ref.rec, bc.cr.Rows[ref.row]
	if n := bc.nonces[ref.row]; n != nil {
		w := synth.WithNonce(synth.Prompt{ID: p.ID, Text: p.Text, System: p.System}, n[r.Index])
		p.Text, p.System = w.Text, w.System
	}
	body, err := wire.Body(bc.wc, bc.model, p, wire.RequestSeed(bc.wc.Sampling, r.Index), bc.tools)
	if err != nil {
		bc.c.Add(row.Records.Path, finding.Pointer(r.Line, "body_digest"), reason.ErrBodyMismatch, "record %d (index %d, prompt %s): its body cannot be rendered: %v", r.Line, r.Index, r.PromptID, err)
		return
	}
	if sum := sha256.Sum256(body); sum != r.BodyDigest {
		bc.c.Add(row.Records.Path, finding.Pointer(r.Line, "body_digest"), reason.ErrBodyMismatch, "record %d (index %d, prompt %s) of row c%d r%d: body_digest sha256:%x, the body the case renders for it hashes to sha256:%x", r.Line, r.Index, r.PromptID, row.Concurrency, row.Repetition, r.BodyDigest, sum)
	}
}

// regime is the case's declared cache regime (natural when none).
func regime(wc *contract.Case) contract.CacheRegime {
	if wc.CacheRegime == "" {
		return contract.CacheRegimeNatural
	}
	return wc.CacheRegime
}
