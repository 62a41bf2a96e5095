package load

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/contract"
)

// TestBurstHeldWaitersFreeSlots: the dispatcher sends a burst without starting a goroutine per
// send (openLoop holds their waiters), so when the burst is larger than the row's concurrency
// the held waiters must be started to free the slots: a burst of 30 arrivals at one instant
// against 2 slots completes, every request answered, each sent only once a slot was free. A
// dispatcher that held waiters and waited for a slot without starting them would never send the
// third request.
func TestBurstHeldWaitersFreeSlots(t *testing.T) {
	dir := t.TempDir()
	es := make([]TraceEntry, 30)
	for k := range es {
		es[k] = TraceEntry{InputLength: 8 + int64(k), OutputLength: 2}
	}
	es[29].TimestampMs = 50 // one arrival after the burst: the held waiters start before its wait
	var buf bytes.Buffer
	WriteTrace(&buf, es)
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	scale, wpt, block := 1.0, 0.75, int64(16)
	corpus := contract.Corpus{Source: contract.CorpusSourceTrace, Path: "trace.jsonl", Digest: evidence.DigestOf(buf.Bytes()), TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt, BlockTokens: &block}
	prompts, err := Resolve(corpus, dir)
	if err != nil {
		t.Fatal(err)
	}
	q := startQualsim(t, false, "--ttft", "2ms", "--token-interval", "1ms", "--slots", "64")
	c := servingCase([]int64{2}, 1, 0, 2)
	c.Corpus = &corpus
	plan := Plan{CaseID: "burst", Case: c, BaseURL: q.url, ModelID: "qualsim-tiny", Prompts: prompts, Seed: 1, Epoch: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := Run(ctx, plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	if row.Row.Requests != 30 || row.Row.Failures != 0 {
		t.Fatalf("%d requests, %d failed: want 30 answered", row.Row.Requests, row.Row.Failures)
	}
	// At most 2 in flight: each send after the second waited for an earlier close.
	var sends, closes []int64
	for k, r := range row.Records {
		if r.TSendNs == nil || r.TCloseNs == nil {
			t.Fatalf("request %d: send %v close %v", k, r.TSendNs, r.TCloseNs)
		}
		sends, closes = append(sends, *r.TSendNs), append(closes, *r.TCloseNs)
	}
	for k, s := range sends {
		open := 0
		for j := range sends {
			if j != k && sends[j] <= s && closes[j] > s {
				open++
			}
		}
		if open >= 2 {
			t.Fatalf("request %d sent with %d others in flight, concurrency 2", k, open)
		}
	}
}
