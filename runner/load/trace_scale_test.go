package load

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// TestTraceMillionFirstMinute (issue 28 item 4; slow, run only with QUALKIT_TRACE_1M=1): a
// synthetic Mooncake-like trace of 1,000,000 requests (mooncakeLike: 3 s ticks, bursts up to 28,
// inputs log-normal around 8k tokens up to 126,000, 512-token hash blocks) is planned
// (PlanTrace, words_per_token 0.75, time_scale 0.005) and the first minute of its replay (the
// entries scheduled within 60 s, requests = their count) runs against qualsim in this process,
// concurrency 512, with every request answered, while the process's peak resident set
// (VmHWM) stays under 1 GB. The row's prompt set hash covers all 1,000,000 prompts (about 56 GB
// of text, synthesised and hashed one at a time): minutes of CPU, which is why the test is
// gated. docs/performance.md gives the command and the numbers.
//
//	QUALKIT_TRACE_1M=1 go test ./runner/load -run TestTraceMillionFirstMinute -v -timeout 60m
//
// QUALKIT_TRACE_1M=N (a number other than 1) plans N entries instead, for a quicker look.
func TestTraceMillionFirstMinute(t *testing.T) {
	n := 1_000_000
	switch v := os.Getenv("QUALKIT_TRACE_1M"); v {
	case "":
		t.Skip("slow (minutes): set QUALKIT_TRACE_1M=1 to run it")
	case "1":
	default:
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 2 {
			t.Fatalf("QUALKIT_TRACE_1M=%q: want 1 or a number of entries", v)
		}
	}
	const gb = 1 << 30
	start := time.Now()
	es := mooncakeLike(1, n)
	scale, wpt, block := 0.005, 0.75, int64(512)
	tp, err := PlanTrace(es, wpt, block, scale)
	if err != nil {
		t.Fatal(err)
	}
	planned := time.Since(start)
	es = nil // the plan is what a replay keeps
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("%d entries generated and planned in %v: plan %d MB, live heap %d MB, peak RSS so far %d MB", n, planned.Round(time.Millisecond), tp.PlanBytes()>>20, ms.HeapAlloc>>20, vmHWM(t)>>20)
	debug.FreeOSMemory()

	minute := 0
	for minute < tp.Len() && tp.atNs(minute) < int64(time.Minute) {
		minute++
	}
	hashStart := time.Now()
	set, err := tp.PromptSetSHA256()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prompt set %s of %d prompts in %v; peak RSS so far %d MB", set[:20], n, time.Since(hashStart).Round(time.Millisecond), vmHWM(t)>>20)

	cfg := fastSim()
	cfg.Slots = 1024
	cfg.Timing.TTFT, cfg.Timing.TokenInterval, cfg.Timing.TokensPerEvent = 2*time.Millisecond, time.Millisecond, 16
	url := startSim(t, cfg)
	c := servingCase([]int64{512}, 1, 0, 2000)
	c.OutputAssertions = nil
	c.SLO = &contract.SLO{}
	c.RequestTimeoutSeconds = 300
	requests := int64(minute)
	c.Requests = &requests
	saturation := true
	c.MeasuresSaturation = &saturation
	c.Corpus = &contract.Corpus{Source: contract.CorpusSourceTrace, Path: "mooncake-like-1m.jsonl", Digest: evidence.DigestOf([]byte("mooncakeLike(1, " + strconv.Itoa(n) + ")")),
		TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt, BlockTokens: &block}
	runStart := time.Now()
	res, err := Run(context.Background(), Plan{CaseID: "trace", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Trace: tp, Seed: 9, Epoch: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	peak := vmHWM(t)
	t.Logf("first minute: %d requests (%d failed) replayed in %v; prompt set %s; peak RSS %d MB; total %v", len(row.Records), row.Row.Failures, time.Since(runStart).Round(time.Millisecond), row.Row.PromptSetSHA256[:20], peak>>20, time.Since(start).Round(time.Second))
	if int64(len(row.Records)) != requests || row.Row.PromptSetSHA256 != set {
		t.Fatalf("%d records of %d requests; prompt set %s, planned %s", len(row.Records), requests, row.Row.PromptSetSHA256, set)
	}
	if peak >= gb {
		t.Fatalf("peak RSS %d MB: want under 1 GB", peak>>20)
	}
}

// vmHWM is this process's peak resident set (VmHWM of /proc/self/status), in bytes.
func vmHWM(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/self/status")
	return 0
}
