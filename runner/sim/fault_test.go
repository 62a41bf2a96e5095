package sim_test

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
)

func withFaults(t *testing.T, cfg sim.Config, specs ...string) sim.Config {
	t.Helper()
	for _, s := range specs {
		if err := cfg.Faults.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	return cfg
}

// streamWithUsage runs one chat stream of 4 tokens with include_usage: its events are the role
// prelude (1), content (2-5), finish (6), usage (7) and [DONE] (8).
func streamWithUsage(t *testing.T, ts *testServer) ([]event, error) {
	t.Helper()
	body := chatBody("qualsim-tiny", "hello world", 4)
	body["stream_options"] = map[string]any{"include_usage": true}
	_, evs, err := ts.stream("/v1/chat/completions", body)
	return evs, err
}

func TestStreamFaults(t *testing.T) {
	want := sim.Generate(sim.GenSpec{Prompt: sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "user", Content: "hello world"}}}, MaxTokens: 4})
	tests := []struct {
		fault string
		check func(t *testing.T, evs []event, err error)
	}{
		{"malformed-json@3", func(t *testing.T, evs []event, err error) {
			if err != nil || len(evs) != 8 {
				t.Fatalf("%d events, err %v", len(evs), err)
			}
			if json.Valid([]byte(evs[2].data)) || !strings.HasPrefix(evs[2].raw, "data: {") {
				t.Fatalf("event 3 is valid JSON: %s", evs[2].raw)
			}
			for i, e := range evs[:7] {
				if i != 2 && !json.Valid([]byte(e.data)) {
					t.Fatalf("event %d invalid too: %s", i+1, e.raw)
				}
			}
		}},
		{"missing-data-prefix@2", func(t *testing.T, evs []event, err error) {
			if err != nil || len(evs) != 8 || !strings.HasPrefix(evs[1].raw, "{") || !json.Valid([]byte(evs[1].raw)) {
				t.Fatalf("event 2 %q, err %v", evs[1].raw, err)
			}
			if got := content(t, evs); got != want.Text[sim.TokenWidth:] {
				t.Fatalf("a spec-following client sees %q", got)
			}
		}},
		{"missing-usage", func(t *testing.T, evs []event, err error) {
			if err != nil || len(evs) != 7 || evs[6].raw != "data: [DONE]" || strings.Contains(evs[5].raw, "usage") {
				t.Fatalf("events %v, err %v", evs, err)
			}
		}},
		{"inconsistent-usage", func(t *testing.T, evs []event, err error) {
			u := evs[6].json(t)["usage"].(map[string]any)
			if err != nil || u["prompt_tokens"] != 6.0 || u["completion_tokens"] != 4.0 || u["total_tokens"] != 11.0 {
				t.Fatalf("usage %v, err %v", u, err)
			}
		}},
		{"no-done", func(t *testing.T, evs []event, err error) {
			if err != nil || len(evs) != 7 || evs[6].data == "[DONE]" {
				t.Fatalf("events %v, err %v", evs, err)
			}
		}},
		{"stall=300ms@4", func(t *testing.T, evs []event, err error) {
			if err != nil || len(evs) != 8 {
				t.Fatalf("%d events, err %v", len(evs), err)
			}
			// Event 4 is due 300ms after event 3 was due; event 3 may have left a little late.
			if gap := evs[3].at.Sub(evs[2].at); gap < 250*time.Millisecond {
				t.Fatalf("gap before event 4 = %v", gap)
			}
			if gap := evs[4].at.Sub(evs[3].at); gap > 200*time.Millisecond {
				t.Fatalf("event 5 not shifted with event 4: gap %v", gap)
			}
		}},
		{"huge-event=2MiB@3", func(t *testing.T, evs []event, err error) {
			if err != nil || len(evs) != 8 || len(evs[2].raw) < 2<<20 {
				t.Fatalf("event 3 is %d bytes, err %v", len(evs[2].raw), err)
			}
			m := evs[2].json(t)
			if p, _ := m["qualsim_padding"].(string); len(p) < 2<<20-400 {
				t.Fatalf("padding %d bytes", len(p))
			}
			if got := content(t, evs); got != want.Text {
				t.Fatalf("content changed: %q", got)
			}
		}},
		{"crash-after-events=3", func(t *testing.T, evs []event, err error) {
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(evs) != 3 {
				t.Fatalf("%d events, err %v; want 3 then a cut", len(evs), err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			ts := start(t, withFaults(t, fastConfig(), tc.fault), true)
			evs, err := streamWithUsage(t, ts)
			tc.check(t, evs, err)
			if strings.HasPrefix(tc.fault, "crash") {
				if err := ts.wait(5 * time.Second); !errors.Is(err, sim.ErrCrashed) {
					t.Fatalf("Serve = %v, want ErrCrashed", err)
				}
			}
		})
	}
}

func TestUsageFaultsNonStreamed(t *testing.T) {
	for fault, want := range map[string]string{
		"missing-usage":      "",
		"inconsistent-usage": `"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":6}`,
	} {
		ts := start(t, withFaults(t, fastConfig(), fault), true)
		_, b, err := ts.post("/v1/completions", completionBody("qualsim-tiny", "hello world", 2))
		if err != nil {
			t.Fatal(err)
		}
		if (want == "" && strings.Contains(string(b), "usage")) || !strings.Contains(string(b), want) {
			t.Fatalf("%s: %s", fault, b)
		}
		ts.stop()
	}
}

func TestCrashHook(t *testing.T) {
	var called atomic.Int32
	ts := start(t, withFaults(t, fastConfig(), "crash-after-events=1"), true, sim.WithCrash(func() { called.Add(1) }))
	if _, evs, err := ts.stream("/v1/completions", completionBody("qualsim-tiny", "x", 5)); err == nil || len(evs) != 1 {
		t.Fatalf("%d events, err %v", len(evs), err)
	}
	if err := ts.wait(5 * time.Second); !errors.Is(err, sim.ErrCrashed) || called.Load() != 1 {
		t.Fatalf("Serve = %v, hook called %d times", err, called.Load())
	}
}

func TestHTTPFaults(t *testing.T) {
	pattern := func() string {
		ts := start(t, withFaults(t, fastConfig(), "http-429=0.3", "http-500=0.2"), true)
		defer ts.stop()
		var b strings.Builder
		for range 60 {
			resp, body, err := ts.post("/v1/completions", completionBody("qualsim-tiny", "x", 1))
			if err != nil {
				t.Fatal(err)
			}
			switch resp.StatusCode {
			case 200:
				b.WriteByte('.')
			case 429:
				if resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "rate_limit_error") {
					t.Fatalf("429 answer %v %s", resp.Header, body)
				}
				b.WriteByte('r')
			case 500:
				if !strings.Contains(string(body), "server_error") {
					t.Fatalf("500 answer %s", body)
				}
				b.WriteByte('e')
			default:
				t.Fatalf("status %d", resp.StatusCode)
			}
		}
		if n := metric(t, ts, `qualsim_errors_total{reason="injected_429"}`); n != float64(strings.Count(b.String(), "r")) {
			t.Fatalf("injected_429 = %v for %s", n, b.String())
		}
		return b.String()
	}
	a, b := pattern(), pattern()
	if a != b {
		t.Fatalf("fault pattern differs between runs:\n%s\n%s", a, b)
	}
	r, e := strings.Count(a, "r"), strings.Count(a, "e")
	if r < 8 || r > 30 || e < 4 || e > 24 {
		t.Fatalf("pattern %s: %d 429s and %d 500s of 60 for fractions 0.3 and 0.2", a, r, e)
	}
}

func TestReadinessFaults(t *testing.T) {
	t.Run("never-ready", func(t *testing.T) {
		cfg := withFaults(t, fastConfig(), "never-ready")
		cfg.Timing.StartupDelay = 10 * time.Millisecond
		ts := start(t, cfg, false)
		time.Sleep(100 * time.Millisecond)
		for _, p := range []string{"/v1/models", "/health"} {
			if code, _ := ts.get(p); code != 503 {
				t.Fatalf("%s = %d", p, code)
			}
		}
		if metric(t, ts, "qualsim_ready") != 0 {
			t.Fatal("ready gauge is 1")
		}
	})
	t.Run("models-without-id", func(t *testing.T) {
		ts := start(t, withFaults(t, fastConfig(), "models-without-id"), true)
		code, body := ts.get("/v1/models")
		if code != 200 || strings.Contains(string(body), `"qualsim-tiny"`) || !strings.Contains(string(body), `"id":"`+sim.DecoyModel+`"`) {
			t.Fatalf("/v1/models = %d %s", code, body)
		}
		if resp, _, err := ts.post("/v1/completions", completionBody("qualsim-tiny", "x", 1)); err != nil || resp.StatusCode != 200 {
			t.Fatalf("completion: %v %v", resp, err)
		}
	})
	t.Run("exit-before-ready", func(t *testing.T) {
		cfg := withFaults(t, fastConfig(), "exit-before-ready")
		cfg.Timing.StartupDelay = 100 * time.Millisecond
		ts := start(t, cfg, false)
		if code, _ := ts.get("/v1/models"); code != 503 {
			t.Fatalf("/v1/models before the exit = %d", code)
		}
		if err := ts.wait(5 * time.Second); !errors.Is(err, sim.ErrExitBeforeReady) {
			t.Fatalf("Serve = %v", err)
		}
		if code, _ := ts.get("/v1/models"); code != 0 {
			t.Fatalf("still answering after the exit: %d", code)
		}
	})
}
