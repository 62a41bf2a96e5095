package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
)

// fastConfig is the default configuration with timing fast enough for tests.
func fastConfig() sim.Config {
	c := sim.DefaultConfig()
	c.Timing.TTFT = time.Millisecond
	c.Timing.TokenInterval = 0
	c.ShutdownGrace = 2 * time.Second
	return c
}

// testServer is a sim.Server serving on a real loopback socket in this process.
type testServer struct {
	t      *testing.T
	url    string
	client *http.Client
	cancel context.CancelFunc
	done   chan error
	err    error
	ended  bool
}

// start serves cfg on 127.0.0.1:0 and, unless waitReady is false, waits until /v1/models answers.
func start(t *testing.T, cfg sim.Config, waitReady bool, opts ...sim.Option) *testServer {
	t.Helper()
	srv, err := sim.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := &testServer{
		t: t, url: "http://" + ln.Addr().String(), cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second},
	}
	go func() { ts.done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		ts.stop()
		ts.client.CloseIdleConnections()
	})
	if waitReady {
		deadline := time.Now().Add(5 * time.Second)
		for {
			code, _ := ts.get("/v1/models")
			if code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("server not ready after 5s (last status %d)", code)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}
	return ts
}

// stop cancels the server's context and returns what Serve returned.
func (ts *testServer) stop() error {
	if ts.ended {
		return ts.err
	}
	ts.cancel()
	select {
	case ts.err = <-ts.done:
	case <-time.After(10 * time.Second):
		ts.t.Fatal("Serve did not return within 10s of cancel")
	}
	ts.ended = true
	return ts.err
}

// wait returns what Serve returned on its own (a fault ended it), within d.
func (ts *testServer) wait(d time.Duration) error {
	ts.t.Helper()
	select {
	case ts.err = <-ts.done:
		ts.ended = true
		return ts.err
	case <-time.After(d):
		ts.t.Fatalf("Serve still running after %v", d)
		return nil
	}
}

func (ts *testServer) get(path string) (int, []byte) {
	ts.t.Helper()
	resp, err := ts.client.Get(ts.url + path)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func (ts *testServer) post(path string, body any) (*http.Response, []byte, error) {
	ts.t.Helper()
	var data []byte
	switch b := body.(type) {
	case string:
		data = []byte(b)
	default:
		var err error
		if data, err = json.Marshal(body); err != nil {
			ts.t.Fatal(err)
		}
	}
	resp, err := ts.client.Post(ts.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

// stream posts a streamed request and reads its events as they arrive.
func (ts *testServer) stream(path string, body map[string]any) (*http.Response, []event, error) {
	ts.t.Helper()
	body["stream"] = true
	data, _ := json.Marshal(body)
	resp, err := ts.client.Post(ts.url+path, "application/json", bytes.NewReader(data))
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	return resp, evs, err
}

// event is one SSE event as a client reads it.
type event struct {
	raw  string    // its lines, joined by "\n"
	data string    // the payload after "data: " when the event is one such line
	at   time.Time // when its closing blank line arrived
}

func (e event) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(e.data), &m); err != nil {
		t.Fatalf("event %q: %v", trunc(e.raw), err)
	}
	return m
}

func trunc(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// readEvents splits an SSE body into events; the error is the read error that ended it, if any.
func readEvents(r io.Reader) ([]event, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var evs []event
	var lines []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if errors.Is(err, io.EOF) && line == "" && len(lines) == 0 {
				return evs, nil
			}
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return evs, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line != "" {
			lines = append(lines, line)
			continue
		}
		e := event{raw: strings.Join(lines, "\n"), at: time.Now()}
		if len(lines) == 1 && strings.HasPrefix(lines[0], "data: ") {
			e.data = strings.TrimPrefix(lines[0], "data: ")
		}
		evs = append(evs, e)
		lines = nil
	}
}

// content concatenates the text of a stream's content events (chat delta or completion text).
func content(t *testing.T, evs []event) string {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		if e.data == "" || e.data == "[DONE]" {
			continue
		}
		choices, _ := e.json(t)["choices"].([]any)
		for _, c := range choices {
			c := c.(map[string]any)
			if d, ok := c["delta"].(map[string]any); ok {
				s, _ := d["content"].(string)
				b.WriteString(s)
			}
			if s, ok := c["text"].(string); ok {
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// metric returns the value of the sample `name` (with its label set, e.g. `x{a="b"}`).
func metric(t *testing.T, ts *testServer, name string) float64 {
	t.Helper()
	code, body := ts.get("/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d", code)
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		if n, v, ok := strings.Cut(line, " "); ok && n == name {
			var f float64
			if err := json.Unmarshal([]byte(v), &f); err != nil {
				t.Fatalf("metric %s value %q: %v", name, v, err)
			}
			return f
		}
	}
	t.Fatalf("metric %s missing from /metrics", name)
	return 0
}

func chatBody(model, text string, maxTokens int) map[string]any {
	return map[string]any{
		"model":      model,
		"messages":   []map[string]any{{"role": "user", "content": text}},
		"max_tokens": maxTokens,
	}
}

func completionBody(model, prompt string, maxTokens int) map[string]any {
	return map[string]any{"model": model, "prompt": prompt, "max_tokens": maxTokens}
}
