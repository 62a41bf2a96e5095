package load

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// gtRecord is one line of qualsim's ground-truth log.
type gtRecord struct {
	RequestID string `json:"request_id"`
	Event     int    `json:"event"`
	TMonoNs   int64  `json:"t_mono_ns"`
	Bytes     int    `json:"bytes"`
	Kind      string `json:"kind"`
}

func readGroundTruth(t *testing.T, path string) map[string]map[int]gtRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[int]gtRecord{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var g gtRecord
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatalf("ground truth %q: %v", sc.Text(), err)
		}
		if out[g.RequestID] == nil {
			out[g.RequestID] = map[int]gtRecord{}
		}
		out[g.RequestID][g.Event] = g
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFidelityAgainstGroundTruth streams from the real qualsim process with its ground-truth log
// on and compares every event's client stamp with the moment qualsim flushed it (both
// CLOCK_MONOTONIC): every event must be there, of the same kind and size, and the stamp error
// |measured - sent| is reported as p50/p99 (make bench measures it at 1, 64 and 256 streams).
func TestFidelityAgainstGroundTruth(t *testing.T) {
	const streams, tokens = 8, 100
	q := startQualsim(t, true, "--ttft", "2ms", "--token-interval", "2ms", "--slots", "64")
	c := newTestClient(t, q.url, WithMaxIdleConns(streams))
	epoch := time.Now()
	base := MonotonicNanos(epoch)
	if base < 0 {
		t.Skip("CLOCK_MONOTONIC unreadable")
	}
	resps := make([]*Response, streams)
	var wg sync.WaitGroup
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resps[i] = c.Do(context.Background(), Request{Path: "/v1/chat/completions", Body: chatBody(tokens), Stream: true, Epoch: epoch, Timeout: 30 * time.Second, ExpectEvents: tokens})
		}()
	}
	wg.Wait()
	q.stop(t) // flushes the ground-truth log
	gt := readGroundTruth(t, q.groundTruth)
	var errs []float64 // |measured - sent| in microseconds
	for _, r := range resps {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		sent, ok := gt[r.ID]
		if !ok {
			t.Fatalf("request %s not in the ground truth", r.ID)
		}
		for k, e := range r.Events {
			g, ok := sent[k+1]
			if !ok {
				t.Fatalf("%s event %d not in the ground truth", r.ID, k+1)
			}
			want := map[string]string{"role": "other", "finish": "other", "content": "content", "usage": "usage", "done": "done"}[g.Kind]
			// qualsim counts the whole "data: ...\n\n" line; the record counts the event data.
			if string(e.Kind) != want || int(e.Bytes)+len("data: \n\n") != g.Bytes {
				t.Fatalf("%s event %d: %s of %d bytes, sent %s of %d bytes", r.ID, k+1, e.Kind, e.Bytes, g.Kind, g.Bytes)
			}
			d := float64(base+e.TNs-g.TMonoNs) / 1e3
			if d < 0 {
				d = -d
			}
			errs = append(errs, d)
		}
		if len(r.Events) != len(sent)-1 { // the ground truth also logs headers and slot as event 0
			t.Fatalf("%s: %d events received, %d sent", r.ID, len(r.Events), len(sent)-1)
		}
	}
	sort.Float64s(errs)
	p := func(q float64) float64 { return errs[int(q*float64(len(errs)-1))] }
	t.Logf("%d events over %d streams: |client stamp - qualsim send stamp| p50 %.1f µs, p99 %.1f µs, max %.1f µs", len(errs), streams, p(0.5), p(0.99), errs[len(errs)-1])
	if p(0.5) > 5000 || p(0.99) > 50000 {
		t.Fatalf("stamp error p50 %.0f µs p99 %.0f µs: the client stamps far from the bytes' arrival", p(0.5), p(0.99))
	}
	if !strings.HasPrefix(resps[0].ID, "chatcmpl-qs-") {
		t.Fatalf("id %q", resps[0].ID)
	}
}
