package sim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"golang.org/x/sys/unix"
)

// syncBuffer is a bytes.Buffer safe for the writer goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]byte(nil), s.b.Bytes()...)
}

type gtLine struct {
	RequestID string `json:"request_id"`
	Event     int    `json:"event"`
	TMonoNS   int64  `json:"t_mono_ns"`
	Bytes     int    `json:"bytes"`
	Kind      string `json:"kind"`
}

func rawMono(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

func TestMonotonicNanos(t *testing.T) {
	for range 100 {
		a := rawMono(t)
		m := sim.MonotonicNanos(time.Now())
		b := rawMono(t)
		if m < a-int64(50*time.Microsecond) || m > b+int64(50*time.Microsecond) {
			t.Fatalf("MonotonicNanos %d outside the clock_gettime bracket [%d, %d]", m, a, b)
		}
	}
}

// TestGroundTruthAndTiming: the log has one line per event the client received, in order, with
// the bytes received, stamped between the request and the client's receipt; and no event is sent
// before the declared schedule.
func TestGroundTruthAndTiming(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.TTFT = 30 * time.Millisecond
	cfg.Timing.TokenInterval = 10 * time.Millisecond
	cfg.Timing.TokensPerEvent = 2
	var buf syncBuffer
	ts := start(t, cfg, true, sim.WithGroundTruth(&buf))
	body := chatBody("qualsim-tiny", "hello world", 5)
	body["stream_options"] = map[string]any{"include_usage": true}
	before := rawMono(t)
	_, evs, err := ts.stream("/v1/chat/completions", body)
	after := rawMono(t)
	if err != nil {
		t.Fatal(err)
	}
	if err := ts.stop(); err != nil { // flushes the log
		t.Fatal(err)
	}
	var lines []gtLine
	sc := bufio.NewScanner(bytes.NewReader(buf.Bytes()))
	for sc.Scan() {
		var l gtLine
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	// headers, slot, role, content x3 (1+2+2 tokens), finish, usage, done
	wantKinds := []string{"headers", "slot", "role", "content", "content", "content", "finish", "usage", "done"}
	if len(lines) != len(wantKinds) || len(evs) != len(wantKinds)-2 {
		t.Fatalf("%d log lines and %d events: %+v", len(lines), len(evs), lines)
	}
	slot := lines[1].TMonoNS
	for i, l := range lines {
		if l.Kind != wantKinds[i] || l.RequestID != "chatcmpl-qs-1" || l.TMonoNS < before || l.TMonoNS > after {
			t.Fatalf("line %d %+v (request window %d..%d)", i, l, before, after)
		}
		if i >= 2 {
			if l.Event != i-1 || l.Bytes != len(evs[i-2].raw)+2 {
				t.Fatalf("line %d %+v vs event %q", i, l, evs[i-2].raw)
			}
			if l.TMonoNS < lines[i-1].TMonoNS {
				t.Fatalf("line %d earlier than line %d", i, i-1)
			}
		}
	}
	// Content events are due at slot + TTFT + k*interval for their last token k (0, 2, 4).
	for i, k := range []int{0, 2, 4} {
		due := slot + int64(cfg.Timing.TTFT+time.Duration(k)*cfg.Timing.TokenInterval)
		if got := lines[3+i].TMonoNS; got < due {
			t.Fatalf("content event %d sent %v before it was due", i+1, time.Duration(due-got))
		}
	}
}
