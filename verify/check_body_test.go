package verify

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/synth"
	tracefmt "github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/schemas/wire"
)

// The frozen campaign's serving case and its rows (c0001: a warmup, then greet-short and
// count-three).
const (
	bodyReceipt = ".qualification/receipts/a-1.json"
	bodyCase    = "cases/000-chat-stream-r000"
)

// bodyShape turns a copy of the frozen campaign's serving case into one whose corpus is corpus
// (prompts, as the runner synthesises them, in declared order: at least the first two; the
// rows' prompt set is promptSet, or when "" that of prompts): the workload declares it, the
// records ask its prompts (the frozen prompts' places: greet-short is prompt 0, count-three
// prompt 1) with the bodies the runner sends for them, the rows carry its prompt set, extra
// files are written and bound as corpus artifacts, and the receipt is re-sealed with k. Only the
// bodies' and prompt ids' consistency is the runner's: the schedule of a trace is not, so a
// trace shape is judged by its body findings alone.
func bodyShape(t testing.TB, root string, k testKey, corpus map[string]any, prompts []wire.Prompt, files map[string][]byte, promptSet string) {
	t.Helper()
	for p, b := range files {
		mustWriteTB(t, filepath.Join(root, p), b)
		rp := filepath.Join(root, bodyReceipt)
		rc := readTree(t, rp)
		rc["artifacts"] = append(rc["artifacts"].([]any), map[string]any{"kind": "corpus", "path": p, "digest": evidence.DigestOf(b), "bytes": json.Number(fmt.Sprint(len(b)))})
		writeTree(t, rp, rc)
	}
	wp := filepath.Join(root, "workloads/frozen.json")
	w := readTree(t, wp)
	wcase := w["variants"].([]any)[0].(map[string]any)["cases"].([]any)[0].(map[string]any)
	wcase["corpus"] = corpus
	writeTree(t, wp, w)
	var wc contract.Case
	raw, _ := json.Marshal(wcase)
	if err := json.Unmarshal(raw, &wc); err != nil {
		t.Fatal(err)
	}
	run := runDirOf(t, root, bodyReceipt)
	place := map[string]int{"greet-short": 0, "count-three": 1}
	for _, f := range []string{"c0001-r000.jsonl", "c0002-r000.jsonl"} {
		editLines(t, filepath.Join(root, run, bodyCase, "rows", f), func(lines []map[string]any) {
			for _, l := range lines {
				index, _ := l["index"].(json.Number).Int64()
				c, _ := l["row"].(map[string]any)["concurrency"].(json.Number).Int64()
				var p wire.Prompt
				if l["warmup"] == true {
					ws := synth.Warmups(len(prompts), func(i int) (string, int) { return prompts[i].System, synth.TextFields(prompts[i].Text) }, int(wc.WarmupRequests), 20261130, c, 0) // the workload's determinism seed
					p = wire.Prompt{ID: ws[index].ID, Text: ws[index].Text, System: ws[index].System}
				} else {
					p = prompts[place[l["prompt_id"].(string)]]
				}
				body, err := wire.Body(&wc, "qualsim-frozen", p, wire.RequestSeed(wc.Sampling, index), nil)
				if err != nil {
					t.Fatal(err)
				}
				l["prompt_id"], l["body_digest"] = p.ID, evidence.DigestOf(body)
			}
		})
	}
	ps := promptSet
	if ps == "" {
		set := make([]contract.Prompt, len(prompts))
		for i, p := range prompts {
			set[i] = contract.Prompt{ID: p.ID, Text: p.Text, System: p.System}
		}
		var err error
		if ps, err = evidence.PromptSetDigest(set); err != nil {
			t.Fatal(err)
		}
	}
	cp := filepath.Join(root, run, bodyCase, "case-result.json")
	cr := readTree(t, cp)
	for _, r := range cr["rows"].([]any) {
		r.(map[string]any)["prompt_set_sha256"] = ps
	}
	writeTree(t, cp, cr)
	reseal(t, root, bodyReceipt, k)
}

// editLines is editRecordLines for a test or a benchmark.
func editLines(t testing.TB, path string, edit func(lines []map[string]any)) {
	t.Helper()
	doc := readDoc(t, path).([]any)
	lines := make([]map[string]any, len(doc))
	for i, l := range doc {
		lines[i] = l.(map[string]any)
	}
	edit(lines)
	writeDoc(t, path, doc)
}

// bodyFindings are the body_mismatch findings of a verification.
func bodyFindings(res *Result) []string {
	var out []string
	for _, f := range res.Check(CheckComparability).Findings {
		if errors.Is(f, ErrBodyMismatch) {
			out = append(out, f.Error())
		}
	}
	return out
}

// TestBodyDigestRecomputed: every request record's body_digest is the sha256 of the body the
// runner renders for its case, model, prompt and index, recomputed by the verifier for an inline
// corpus (the frozen campaign), a synthetic corpus, a shared-prefix corpus and a trace of
// length_unit words_per_token. An honest shape has no body_mismatch; an edit of one measured or
// one warmup record's body_digest, re-bound and re-signed, is body_mismatch naming the record,
// its index and its prompt (each verified on main before this check, which recomputed no body).
func TestBodyDigestRecomputed(t *testing.T) {
	k := newTestKey(t)
	trace := []byte(`{"timestamp":0,"input_length":6,"output_length":4,"hash_ids":[7,8]}` + "\n" + `{"timestamp":40,"input_length":9,"output_length":4,"hash_ids":[7,9,10]}` + "\n")
	traceWords := func(i int, in int64, ids []int64) wire.Prompt {
		b := synth.AppendTraceWords(nil, i, slices.Values(ids), synth.TraceWords(in, 0.75), synth.TraceBlockWords(4, 0.75))
		return wire.Prompt{ID: synth.TraceID(i), Text: string(b), MaxTokens: 4}
	}
	fromSynth := func(ps func(func(int, synth.Prompt) bool)) []wire.Prompt {
		var out []wire.Prompt
		for _, p := range ps {
			out = append(out, wire.Prompt{ID: p.ID, Text: p.Text, System: p.System})
		}
		return out
	}
	shapes := []struct {
		name    string
		corpus  map[string]any
		prompts []wire.Prompt
		files   map[string][]byte
	}{
		{"inline", nil, nil, nil},
		{"synthetic", map[string]any{"source": "synthetic", "generator": contract.SyntheticCorpusGenerator, "seed": json.Number("11"), "count": json.Number("2"),
			"prompt_words": map[string]any{"min": json.Number("3"), "max": json.Number("9")}}, fromSynth(synth.SyntheticWords(11, 2, 3, 9)), nil},
		{"shared-prefix", map[string]any{"source": "shared_prefix", "generator": contract.SharedPrefixCorpusGenerator, "seed": json.Number("5"), "groups": json.Number("1"),
			"prefix_words": json.Number("6"), "suffixes": json.Number("2"), "suffix_words": map[string]any{"min": json.Number("1"), "max": json.Number("4")}}, fromSynth(synth.SharedPrefix(5, 1, 6, 2, [2]int{1, 4})), nil},
		{"trace-words", map[string]any{"source": "trace", "path": "workloads/body-trace.jsonl", "digest": evidence.DigestOf(trace), "length_unit": "words_per_token",
			"words_per_token": json.Number("0.75"), "block_tokens": json.Number("4")},
			[]wire.Prompt{traceWords(0, 6, []int64{7, 8}), traceWords(1, 9, []int64{7, 9, 10})}, map[string][]byte{"workloads/body-trace.jsonl": trace}},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			fresh := func(t *testing.T) string {
				root := copyTree(t, frozenRoot)
				if sh.corpus != nil {
					bodyShape(t, root, k, sh.corpus, sh.prompts, sh.files, "")
				} else {
					reseal(t, root, bodyReceipt, k)
				}
				return root
			}
			root := fresh(t)
			res := verifyAt(t, root, bodyReceipt, k.policy())
			if got := bodyFindings(res); len(got) > 0 {
				t.Fatalf("the honest %s shape has body findings: %v", sh.name, got)
			}
			if sh.name == "inline" && res.Verdict != Verified {
				t.Fatalf("the honest frozen campaign does not verify:%s", findingsOf(res))
			}
			for _, edit := range []struct {
				line int
				text string
			}{{1, "record 1 (index 1, prompt "}, {0, "record 0 (index 0, prompt warmup-0000)"}} {
				root := fresh(t)
				run := runDirOf(t, root, bodyReceipt)
				var prompt string
				editRecordLines(t, filepath.Join(root, run, bodyCase, "rows/c0001-r000.jsonl"), func(lines []map[string]any) {
					prompt = lines[edit.line]["prompt_id"].(string)
					lines[edit.line]["body_digest"] = fmt.Sprintf("sha256:%x", sha256.Sum256([]byte("another body")))
				})
				reseal(t, root, bodyReceipt, k)
				res := verifyAt(t, root, bodyReceipt, k.policy())
				want := edit.text
				if edit.line == 1 {
					want += prompt + ")"
				}
				if !hasFinding(res, CheckComparability, ErrBodyMismatch, want) {
					t.Errorf("an edited body_digest of line %d (%s) verifies without body_mismatch %q:%s", edit.line, prompt, want, findingsOf(res))
				}
			}
		})
	}
}

// TestBodyCorpusUnbound: a workload's trace the receipt does not bind (the artifact dropped and
// the receipt re-signed) is a finding, not a note that the bodies were not recomputed.
func TestBodyCorpusUnbound(t *testing.T) {
	k := newTestKey(t)
	root := copyTree(t, frozenRoot)
	trace := []byte(`{"timestamp":0,"input_length":6,"output_length":4}` + "\n" + `{"timestamp":40,"input_length":9,"output_length":4}` + "\n")
	tw := func(i int, in int64) wire.Prompt {
		return wire.Prompt{ID: synth.TraceID(i), Text: string(synth.AppendTraceWords(nil, i, slices.Values([]int64(nil)), synth.TraceWords(in, 1), 1)), MaxTokens: 4}
	}
	bodyShape(t, root, k, map[string]any{"source": "trace", "path": "workloads/body-trace.jsonl", "digest": evidence.DigestOf(trace), "length_unit": "words_per_token", "words_per_token": json.Number("1")},
		[]wire.Prompt{tw(0, 6), tw(1, 9)}, map[string][]byte{"workloads/body-trace.jsonl": trace}, "")
	rp := filepath.Join(root, bodyReceipt)
	rc := readTree(t, rp)
	arts := rc["artifacts"].([]any)
	rc["artifacts"] = slices.DeleteFunc(arts, func(a any) bool { return a.(map[string]any)["path"] == "workloads/body-trace.jsonl" })
	writeTree(t, rp, rc)
	reseal(t, root, bodyReceipt, k)
	if err := os.Remove(filepath.Join(root, "workloads/body-trace.jsonl")); err != nil {
		t.Fatal(err)
	}
	res := verifyAt(t, root, bodyReceipt, k.policy())
	if !hasFinding(res, CheckComparability, ErrCorpusMismatch, "not bound by the receipt") {
		t.Fatalf("an unbound trace is not a finding:%s", findingsOf(res))
	}
}

// mooncakeShaped is a trace of n entries shaped like the public Mooncake trace (docs/metrics.md
// "Trace replay"): inputs of 200 to 16,200 tokens in blocks of 512, each entry sharing the first
// blocks of the one before it when i mod 3 is not 0, one arrival every 294 ms.
func mooncakeShaped(n int) []byte {
	var b []byte
	next := int64(1)
	var prev []int64
	for i := range n {
		in := int64(200 + (i*7919)%16000)
		blocks := int((in + 511) / 512)
		ids := make([]int64, 0, blocks)
		if i%3 != 0 {
			ids = append(ids, prev[:min(len(prev), blocks/2)]...)
		}
		for len(ids) < blocks {
			ids = append(ids, next)
			next++
		}
		prev = ids
		line, _ := json.Marshal(map[string]any{"timestamp": i * 294, "input_length": in, "output_length": 4, "hash_ids": ids})
		b = append(append(b, line...), '\n')
	}
	return b
}

// BenchmarkVerifyTrace12k verifies the frozen campaign whose serving case replays a trace of
// 12,031 Mooncake-shaped entries in words (words_per_token 0.75): the verifier writes every
// prompt once, in order, to hash the prompt set and render the records' bodies. It reports the
// peak of the live heap while verifying (peak_heap_MB, sampled every millisecond) beside the bytes
// of all the prompts it wrote (prompts_MB): the prompts are never held together.
func BenchmarkVerifyTrace12k(b *testing.B) {
	const n = 12031
	k := newTestKey(b)
	root := copyTree(b, frozenRoot)
	trace := mooncakeShaped(n)
	entries, err := tracefmt.Read(trace)
	if err != nil {
		b.Fatal(err)
	}
	// The prompts, written one at a time as the runner does: the first two kept for the records,
	// every one hashed into the prompt set.
	var prompts []wire.Prompt
	var promptBytes int
	h := sha256.New()
	h.Write([]byte{'['})
	for i, e := range entries {
		text := synth.AppendTraceWords(nil, i, slices.Values(e.HashIDs), synth.TraceWords(e.InputLength, 0.75), synth.TraceBlockWords(512, 0.75))
		p := contract.Prompt{ID: synth.TraceID(i), Text: string(text)}
		if i < 2 {
			prompts = append(prompts, wire.Prompt{ID: p.ID, Text: p.Text, MaxTokens: e.OutputLength})
		}
		c, err := jsonstrict.Canonical(p)
		if err != nil {
			b.Fatal(err)
		}
		if i > 0 {
			h.Write([]byte{','})
		}
		h.Write(c)
		promptBytes += len(text)
	}
	h.Write([]byte{']'})
	bodyShape(b, root, k, map[string]any{"source": "trace", "path": "workloads/body-trace.jsonl", "digest": evidence.DigestOf(trace), "length_unit": "words_per_token",
		"words_per_token": json.Number("0.75"), "block_tokens": json.Number("512")}, prompts, map[string][]byte{"workloads/body-trace.jsonl": trace}, fmt.Sprintf("sha256:%x", h.Sum(nil)))
	entries = nil
	ev, err := LocateIn(root, filepath.Join(root, bodyReceipt))
	if err != nil {
		b.Fatal(err)
	}
	var peak uint64
	b.ResetTimer()
	for range b.N {
		runtime.GC()
		stop, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				peak = max(peak, ms.HeapAlloc)
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		res, err := Verify(context.Background(), ev, k.policy())
		close(stop)
		<-done
		if err != nil {
			b.Fatal(err)
		}
		for _, f := range res.Check(CheckComparability).Findings {
			if errors.Is(f, ErrBodyMismatch) || errors.Is(f, ErrCorpusMismatch) && strings.Contains(f.Error(), "prompt_set_sha256") {
				b.Fatalf("the prompt set or a body differs: %v", f)
			}
		}
		if note := res.Check(CheckComparability).Note; strings.Contains(note, "not recomputed") {
			b.Fatalf("not recomputed: %s", note)
		}
	}
	b.ReportMetric(float64(peak)/1e6, "peak_heap_MB")
	b.ReportMetric(float64(promptBytes)/1e6, "prompts_MB")
}
