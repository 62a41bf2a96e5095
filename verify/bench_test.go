package verify

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/wire"
	"github.com/qualkit/qualkit/verify/internal/record"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Benchmarks (docs/performance.md, "Verification"):
//
//	go test -run '^$' -bench . -benchtime 3x ./verify/
//
// and, for the command line with its peak RSS,
//
//	go test ./verify/ -run TestWriteBenchEvidence -bench-evidence DIR
//	/usr/bin/time -v qualverify verify DIR/big/.qualification/receipts/a-1.json --key DIR/big/bench.pub

var benchEvidence = flag.String("bench-evidence", "", "write the benchmark evidence (a receipt with 100k request records) to this directory")

// Shape of the big receipt: rowsBig rows of promptsBig requests, each with eventsPerRecord content
// events, like a 32-token streamed completion.
const (
	rowsBig         = 10
	promptsBig      = 10000
	eventsPerRecord = 32
	// maxTokensBig is the frozen workload's max_tokens: each record completes that many tokens
	// (in eventsPerRecord content events).
	maxTokensBig = 4
)

// writeBigEvidence turns a copy of the frozen campaign into one whose serving case ran a
// 10,000-prompt file corpus at ten concurrency levels: 100,000 request records, every row metric
// recomputed, sealed with a fresh key whose public key is written to root/bench.pub.
func writeBigEvidence(tb testing.TB, root string) {
	tb.Helper()
	copyInto(tb, frozenRoot, root)
	k := newTestKey(tb)
	const receipt = ".qualification/receipts/a-1.json"
	for _, r := range []string{recA2, recB1} {
		os.Remove(filepath.Join(root, r))
	}
	run := runDirOf(tb, root, receipt)
	caseDir := filepath.Join(root, run, "cases/000-chat-stream-r000")
	// The corpus: a JSONL file bound by digest.
	prompts := make([]contract.Prompt, promptsBig)
	var corpus []byte
	for i := range prompts {
		prompts[i] = contract.Prompt{ID: fmt.Sprintf("p-%05d", i), Text: fmt.Sprintf("Prompt number %d: say something short about the number %d.", i, i*7)}
		b, _ := json.Marshal(prompts[i])
		corpus = append(append(corpus, b...), '\n')
	}
	mustWriteTB(tb, filepath.Join(root, "workloads/corpus-10k.jsonl"), corpus)
	corpusDigest := evidence.DigestOf(corpus)
	concurrency := []any{}
	for i := range rowsBig {
		concurrency = append(concurrency, json.Number(record.Itoa(int64(1)<<i)))
	}
	wp := filepath.Join(root, "workloads/frozen.json")
	w := readTree(tb, wp)
	wcase := w["variants"].([]any)[0].(map[string]any)["cases"].([]any)[0].(map[string]any)
	wcase["corpus"] = map[string]any{"source": "file", "path": "workloads/corpus-10k.jsonl", "digest": corpusDigest}
	wcase["concurrency"] = concurrency
	wcase["warmup_requests"] = json.Number("0")
	wcase["timeout_seconds"] = json.Number("3600") // the rows' records span 30 minutes
	writeTree(tb, wp, w)
	// Each record's body_digest is the body the runner sends for it (the verifier renders it again).
	var wc contract.Case
	if raw, err := json.Marshal(wcase); err != nil || json.Unmarshal(raw, &wc) != nil {
		tb.Fatalf("the benchmark's case: %v", err)
	}
	var slo contract.SLO
	sloRaw, _ := json.Marshal(wcase["slo"])
	json.Unmarshal(sloRaw, &slo)
	pset, err := record.PromptSet(prompts)
	if err != nil {
		tb.Fatal(err)
	}
	// The rows.
	os.RemoveAll(filepath.Join(caseDir, "rows"))
	os.MkdirAll(filepath.Join(caseDir, "rows"), 0o755)
	var rows []contract.Row
	var arts []any
	var lastClose int64
	for ri := range rowsBig {
		c := int64(1) << ri
		rel := fmt.Sprintf("%s/cases/000-chat-stream-r000/rows/c%04d-r000.jsonl", run, c)
		f, err := os.Create(filepath.Join(root, rel))
		if err != nil {
			tb.Fatal(err)
		}
		bw := bufio.NewWriterSize(f, 1<<20)
		recs := make([]record.Record, 0, promptsBig)
		for i := range promptsBig {
			doc := syntheticRecord(c, int64(i), prompts[i].ID)
			body, err := wire.Body(&wc, "qualsim-frozen", wire.Prompt{ID: prompts[i].ID, Text: prompts[i].Text}, wire.RequestSeed(wc.Sampling, int64(i)), nil)
			if err != nil {
				tb.Fatal(err)
			}
			doc.BodyDigest = evidence.DigestOf(body)
			b, _ := json.Marshal(doc)
			bw.Write(b)
			bw.WriteByte('\n')
			recs = append(recs, record.FromDoc(&doc))
			lastClose = max(lastClose, *doc.TCloseNs)
		}
		if err := bw.Flush(); err != nil {
			tb.Fatal(err)
		}
		f.Close()
		ptrs := make([]*record.Record, len(recs))
		for i := range recs {
			ptrs[i] = &recs[i]
		}
		rf := record.RecomputeRow(record.RowSpec{Concurrency: c, Loop: "closed", SLO: slo, SLOKnown: true}, ptrs)
		d, n := fileDigest(tb, filepath.Join(root, rel))
		rows = append(rows, contract.Row{Concurrency: c, Repetition: 0, Loop: "closed", Requests: rf.Requests, Successes: rf.Successes, Failures: rf.Failures,
			WindowSeconds: rf.WindowSeconds, PromptSetSHA256: pset, OutputSetSHA256: rf.OutputSet, Records: contract.FileRef{Path: rel, Digest: d},
			Metrics: rf.Metrics, Fidelity: contract.Fidelity{ScheduleLagP50Ms: rf.LagP50, ScheduleLagP99Ms: rf.LagP99, ScheduleLagMaxMs: rf.LagMax,
				AchievedRate: rf.Achieved, Degraded: rf.Degraded, Reasons: []string{}}})
		arts = append(arts, map[string]any{"kind": "request_records", "path": rel, "digest": d, "bytes": json.Number(record.Itoa(n))})
	}
	// The server is stopped after the last request closed, by the monotonic and the wall clock.
	editJSONTB(tb, filepath.Join(root, run, "lifecycle.json"), func(l map[string]any) {
		la, sd := l["launch"].(map[string]any), l["shutdown"].(map[string]any)
		t0, _ := la["t_start_ns"].(json.Number).Int64()
		started, err := time.Parse(time.RFC3339Nano, la["started_at"].(string))
		if err != nil {
			tb.Fatal(err)
		}
		sent := lastClose + 1_000_000
		sd["t_sent_ns"] = json.Number(record.Itoa(sent))
		sd["sent_at"] = started.Add(time.Duration(sent - t0)).UTC().Format(time.RFC3339Nano)
	})
	crp := filepath.Join(caseDir, "case-result.json")
	cr := readTree(tb, crp)
	cr["rows"] = rows
	// The case lasted its rows' windows (they run one after another), and so did the campaign.
	var windows float64
	for _, r := range rows {
		windows += r.WindowSeconds
	}
	duration := json.Number(strconv.FormatFloat(math.Ceil(windows)+1, 'f', -1, 64))
	cr["duration_seconds"] = duration
	metrics := record.RecomputeCase(rows)
	cr["metrics"] = metrics
	writeTree(tb, crp, cr)
	// The receipt binds the corpus and the new records.
	rp := filepath.Join(root, receipt)
	rc := readTree(tb, rp)
	var kept []any
	for _, a := range rc["artifacts"].([]any) {
		m := a.(map[string]any)
		if m["kind"] == "request_records" {
			continue
		}
		kept = append(kept, m)
		if m["kind"] == "workload" {
			kept = append(kept, map[string]any{"kind": "corpus", "path": "workloads/corpus-10k.jsonl", "digest": corpusDigest, "bytes": json.Number(record.Itoa(int64(len(corpus))))})
			kept = append(kept, arts...)
		}
	}
	rc["artifacts"] = kept
	rc["results"].([]any)[0].(map[string]any)["metrics"] = metrics
	rc["results"].([]any)[0].(map[string]any)["duration_seconds"] = duration
	q := rc["qualification"].(map[string]any)
	campaign := math.Ceil(windows) + 2
	q["duration_seconds"] = json.Number(strconv.FormatFloat(campaign, 'f', -1, 64))
	started, err := time.Parse(time.RFC3339Nano, q["started_at"].(string))
	if err != nil {
		tb.Fatal(err)
	}
	q["finished_at"] = started.Add(time.Duration(campaign * float64(time.Second))).UTC().Format(time.RFC3339Nano)
	rc["created_at"] = q["finished_at"]
	writeTree(tb, rp, rc)
	reseal(tb, root, receipt, k)
	pem, err := cryptoutils.MarshalPublicKeyToPEM(k.pub)
	if err != nil {
		tb.Fatal(err)
	}
	mustWriteTB(tb, filepath.Join(root, "bench.pub"), pem)
}

// syntheticRecord is a successful streamed request of a closed-loop row: 32 content events 5 ms
// apart after a 20 ms first token, sends spread as a closed loop of c slots would spread them.
func syntheticRecord(c, i int64, promptID string) contract.RequestRecordDoc {
	const ms = int64(1_000_000)
	wave := i / c
	sched := 1_000*ms + wave*180*ms + (i%c)*20_000
	send := sched + 15_000 + (i%7)*1_000
	hdr := send + ms
	events := []contract.Event{{TNs: hdr, Kind: "other", Bytes: 246}}
	t := send + 20*ms + (i%5)*100_000
	for k := range int64(eventsPerRecord) {
		events = append(events, contract.Event{TNs: t + k*5*ms + (k%3)*10_000, Kind: "content", Bytes: 233})
	}
	end := events[len(events)-1].TNs
	events = append(events, contract.Event{TNs: end + 50_000, Kind: "usage", Bytes: 180}, contract.Event{TNs: end + 60_000, Kind: "done", Bytes: 14})
	closeT := end + 100_000
	status := int64(200)
	seed := 1234 + i
	finish := contract.RecordFinishReasonLength
	out := evidence.DigestOf([]byte(fmt.Sprintf("output %d %d", c, i)))
	return contract.RequestRecordDoc{Schema: "qualkit.request-record.v1", CaseID: "chat-stream", Row: contract.RowKey{Concurrency: c, Repetition: 0},
		Index: i, PromptID: promptID, Seed: &seed, BodyDigest: evidence.DigestOf([]byte(fmt.Sprintf("body %d", i))),
		TSchedNs: sched, TSendNs: &send, THdrNs: &hdr, Events: events, TEndNs: &end, TCloseNs: &closeT, StatusCode: &status,
		Usage: &contract.Usage{PromptTokens: 14, CompletionTokens: maxTokensBig, TotalTokens: 14 + maxTokensBig}, FinishReason: &finish,
		OutputDigest: &out, Assertions: []contract.AssertionOutcome{{Kind: "finish_reason", Passed: true}, {Kind: "completion_tokens_equal_max_tokens", Passed: true}}}
}

func editJSONTB(tb testing.TB, path string, edit func(map[string]any)) {
	tb.Helper()
	m := readTree(tb, path)
	edit(m)
	writeTree(tb, path, m)
}

func copyInto(tb testing.TB, src, dst string) {
	tb.Helper()
	tmp := copyTree(tb, src)
	if err := os.CopyFS(dst, os.DirFS(tmp)); err != nil {
		tb.Fatal(err)
	}
}

func mustWriteTB(tb testing.TB, p string, b []byte) {
	tb.Helper()
	if err := os.WriteFile(p, b, 0o644); err != nil {
		tb.Fatal(err)
	}
}

var (
	bigOnce sync.Once
	bigRoot string
)

func bigEvidence(b *testing.B) (string, Policy) {
	bigOnce.Do(func() {
		dir, err := os.MkdirTemp("", "qualkit-verify-bench-")
		if err != nil {
			b.Fatal(err)
		}
		bigRoot = filepath.Join(dir, "big")
		writeBigEvidence(b, bigRoot)
	})
	pub, err := LoadPublicKey(filepath.Join(bigRoot, "bench.pub"))
	if err != nil {
		b.Fatal(err)
	}
	p := DefaultPolicy()
	p.Keys = append(p.Keys, pub)
	return bigRoot, p
}

// TestMain removes the benchmark evidence after the run.
func TestMain(m *testing.M) {
	code := m.Run()
	if bigRoot != "" {
		os.RemoveAll(filepath.Dir(bigRoot))
	}
	os.Exit(code)
}

// BenchmarkVerify100kRecords verifies one receipt whose serving case holds 100,000 request
// records (10 rows x 10,000; about 250 MB of JSON Lines): every line validated, every row metric
// recomputed, every file re-hashed, the signature checked. Each iteration also times the
// baseline, one SHA-256 pass over the same evidence files on one core (the least any verifier
// must do), and reports the median ratio verify / baseline as x_sha256.
func BenchmarkVerify100kRecords(b *testing.B) {
	root, p := bigEvidence(b)
	ev, err := LocateIn(root, filepath.Join(root, ".qualification/receipts/a-1.json"))
	if err != nil {
		b.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, runDirOf(b, root, ".qualification/receipts/a-1.json"), "cases/*/rows/*.jsonl"))
	if err != nil || len(files) != rowsBig {
		b.Fatalf("%d record files, %v", len(files), err)
	}
	var ratios []float64
	var bytesRead int64
	var verifyTime, cpu time.Duration
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		t0 := time.Now()
		bytesRead = 0
		for _, f := range files {
			_, n, err := evidence.DigestFile(f)
			if err != nil {
				b.Fatal(err)
			}
			bytesRead += n
		}
		hashTime := time.Since(t0)
		b.StartTimer()
		t1, c1 := time.Now(), cpuTime(b)
		res, err := Verify(context.Background(), ev, p)
		cpu += cpuTime(b) - c1
		if err != nil {
			b.Fatal(err)
		}
		if res.Verdict != Verified {
			b.Fatalf("benchmark evidence rejected:%s", findingsOf(res))
		}
		d := time.Since(t1)
		verifyTime += d
		ratios = append(ratios, d.Seconds()/hashTime.Seconds())
	}
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "x_sha256")
	b.ReportMetric(float64(rowsBig*promptsBig)*float64(b.N)/verifyTime.Seconds(), "records/s")
	// cpu_s/op is the process's CPU time (user and system, every goroutine and the GC) per
	// verification: steadier than the wall clock on a host whose cores are shared.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu_s/op")
	b.ReportMetric(float64(bytesRead)*float64(b.N)/verifyTime.Seconds()/1e6, "MB/s")
}

// BenchmarkVerifyFrozen verifies the small frozen receipt (2 rows, 6 records): the per-receipt
// cost that batch verification multiplies.
func BenchmarkVerifyFrozen(b *testing.B) {
	p := frozenPolicyB(b)
	ev, err := LocateIn(frozenRoot, filepath.Join(frozenRoot, recA1))
	if err != nil {
		b.Fatal(err)
	}
	for range b.N {
		if res, err := Verify(context.Background(), ev, p); err != nil || res.Verdict != Verified {
			b.Fatal(err)
		}
	}
}

func frozenPolicyB(b *testing.B) Policy {
	pub, err := LoadPublicKey(filepath.Join(frozenRoot, "frozen.pub"))
	if err != nil {
		b.Fatal(err)
	}
	p := DefaultPolicy()
	p.Keys = append(p.Keys, pub)
	return p
}

// TestWriteBenchEvidence writes the big receipt for command-line measurements (skipped unless
// -bench-evidence DIR is given).
func TestWriteBenchEvidence(t *testing.T) {
	if *benchEvidence == "" {
		t.Skip("give -bench-evidence DIR")
	}
	root := filepath.Join(*benchEvidence, "big")
	writeBigEvidence(t, root)
	res := verifyAt(t, root, ".qualification/receipts/a-1.json", func() Policy {
		pub, _ := LoadPublicKey(filepath.Join(root, "bench.pub"))
		p := DefaultPolicy()
		p.Keys = append(p.Keys, pub)
		return p
	}())
	if res.Verdict != Verified {
		t.Fatalf("rejected:%s", findingsOf(res))
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("wrote %s (verified)", root)
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
