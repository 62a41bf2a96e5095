package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

func newTestClient(t *testing.T, url string, opts ...Option) *Client {
	t.Helper()
	c, err := NewClient(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func doStream(c *Client, ctx context.Context, maxTokens int, timeout time.Duration) *Response {
	return c.Do(ctx, Request{Path: "/v1/chat/completions", Body: chatBody(maxTokens), Stream: true, Epoch: time.Now(), Timeout: timeout, ExpectEvents: maxTokens})
}

// TestClientFaults runs every qualsim fault that breaks a response against the real qualsim
// process: each ends as a named request failure, never a crash and never a guessed number.
func TestClientFaults(t *testing.T) {
	tests := []struct {
		fault   []string
		timeout time.Duration
		class   contract.ErrorClass
		msg     string
	}{
		{fault: []string{"--fault", "missing-usage"}, class: ClassMissingUsage},
		{fault: []string{"--fault", "inconsistent-usage"}, class: ClassInconsistentUsage, msg: "!= prompt_tokens 6 + completion_tokens 8"},
		{fault: []string{"--fault", "no-done"}, class: ClassTruncatedStream, msg: "without data: [DONE]"},
		{fault: []string{"--fault", "malformed-json@3"}, class: ClassMalformedEvent, msg: "event 3"},
		{fault: []string{"--fault", "missing-data-prefix@3"}, class: ClassMalformedEvent, msg: "unknown field"},
		{fault: []string{"--fault", "huge-event=2MiB@3"}, class: ClassOversizeLine, msg: "limit 1048576"},
		{fault: []string{"--fault", "stall=3s@3"}, timeout: 300 * time.Millisecond, class: ClassTimeout},
		{fault: []string{"--fault", "http-429=1"}, class: ClassHTTPStatus, msg: "HTTP 429"},
		{fault: []string{"--fault", "http-500=1"}, class: ClassHTTPStatus, msg: "HTTP 500"},
		{fault: []string{"--fault", "never-ready"}, class: ClassHTTPStatus, msg: "HTTP 503"},
		{fault: []string{"--fault", "crash-after-events=4"}, class: ClassTruncatedStream},
		{fault: []string{"--fault", "content-after-finish"}, class: ClassContentAfterFinish, msg: "content after finish_reason"},
		{fault: []string{"--fault", "duplicate-finish-reason"}, class: ClassDuplicateFinishReason, msg: "carries finish_reason \"length\" after"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.fault[1:], " "), func(t *testing.T) {
			t.Parallel()
			var p *qualsimProc
			if tt.fault[1] == "never-ready" {
				p = startQualsimUnready(t, tt.fault...)
			} else {
				p = startQualsim(t, false, append([]string{"--ttft", "1ms", "--token-interval", "1ms"}, tt.fault...)...)
			}
			c := newTestClient(t, p.url)
			start := time.Now()
			r := doStream(c, context.Background(), 8, tt.timeout)
			if r.Err == nil {
				t.Fatalf("no error; usage %+v", r.Usage)
			}
			if r.Err.Class != tt.class || !strings.Contains(r.Err.Message, tt.msg) {
				t.Fatalf("error %s: %s; want %s containing %q", r.Err.Class, r.Err.Message, tt.class, tt.msg)
			}
			if u := r.Usage; u != nil && u.TotalTokens != u.PromptTokens+u.CompletionTokens {
				t.Fatalf("inconsistent usage recorded: %+v", u)
			}
			if tt.class == ClassTimeout && time.Since(start) > 2*time.Second {
				t.Fatalf("timeout took %v", time.Since(start))
			}
			if r.TSendNs == nil || r.TCloseNs == nil {
				t.Fatalf("t_send %v t_close %v", r.TSendNs, r.TCloseNs)
			}
		})
	}
}

// startQualsimUnready starts qualsim without waiting for readiness.
func startQualsimUnready(t *testing.T, args ...string) *qualsimProc {
	t.Helper()
	p := startQualsimNoWait(t, args...)
	return p
}

func TestClientSuccessAndKeepAlive(t *testing.T) {
	p := startQualsim(t, false, "--ttft", "1ms", "--token-interval", "100us", "--slots", "64")
	c := newTestClient(t, p.url, WithMaxIdleConns(16))
	for i := range 20 {
		r := doStream(c, context.Background(), 16, 10*time.Second)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if i > 0 && !r.reused {
			t.Fatalf("request %d opened a new connection", i)
		}
		if r.Usage.CompletionTokens != 16 || *r.FinishReason != "length" || len(r.Text) != 16*6 || !strings.HasPrefix(r.ID, "chatcmpl-") {
			t.Fatalf("usage %+v finish %v text %q id %q", r.Usage, *r.FinishReason, r.Text, r.ID)
		}
		contents := 0
		for _, e := range r.Events {
			if e.Kind == "content" {
				contents++
			}
		}
		if contents != 16 || kinds(r.Events[:1]) != "other" || kinds(r.Events[len(r.Events)-2:]) != "usage,done" {
			t.Fatalf("events %s", kinds(r.Events))
		}
		if *r.TSendNs > *r.THdrNs || *r.THdrNs > r.Events[0].TNs || *r.TEndNs > *r.TCloseNs {
			t.Fatalf("times out of order: send %d hdr %d first %d end %d close %d", *r.TSendNs, *r.THdrNs, r.Events[0].TNs, *r.TEndNs, *r.TCloseNs)
		}
		// The write's return is stamped after its start (the response may come before it).
		if r.TSentNs == nil || *r.TSentNs < *r.TSendNs {
			t.Fatalf("t_sent %v, t_send %d: the write's return is not stamped after its start", r.TSentNs, *r.TSendNs)
		}
	}
	// 16 concurrent streams fit in 16 idle connections afterwards.
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := doStream(c, context.Background(), 32, 10*time.Second); r.Err != nil {
				t.Error(r.Err)
			}
		}()
	}
	wg.Wait()
	c.mu.Lock()
	idle, open := len(c.idle), len(c.open)
	c.mu.Unlock()
	if idle != 16 || open != 16 {
		t.Fatalf("idle %d open %d, want 16 and 16", idle, open)
	}
}

func TestClientCompletionsAndNonStreamed(t *testing.T) {
	url := startSim(t, fastSim())
	c := newTestClient(t, url)
	r := c.Do(context.Background(), Request{Path: "/v1/completions", Stream: true, Epoch: time.Now(),
		Body: []byte(`{"model":"qualsim-tiny","prompt":"hi","max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"ignore_eos":true}`)})
	if r.Err != nil || r.Usage.CompletionTokens != 4 || len(r.Text) != 24 {
		t.Fatalf("completions: %v %+v %q", r.Err, r.Usage, r.Text)
	}
	r = c.Do(context.Background(), Request{Path: "/v1/chat/completions", Epoch: time.Now(),
		Body: []byte(`{"model":"qualsim-tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true}`)})
	if r.Err != nil || r.Usage.CompletionTokens != 3 || len(r.Text) != 18 || len(r.Events) != 0 || r.TEndNs == nil {
		t.Fatalf("non-streamed: %v %+v %q", r.Err, r.Usage, r.Text)
	}
}

func TestClientCancel(t *testing.T) {
	p := startQualsim(t, false, "--ttft", "1ms", "--token-interval", "1ms", "--fault", "stall=10s@3")
	c := newTestClient(t, p.url)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	r := doStream(c, ctx, 8, time.Minute)
	if r.Err == nil || r.Err.Class != ClassCancelled {
		t.Fatalf("err %v, want cancelled", r.Err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel took %v", d)
	}
	// A cancelled context before sending also yields a record, not a Go error.
	r = doStream(c, ctx, 8, 0)
	if r.Err == nil || r.Err.Class != ClassCancelled || r.TSendNs != nil {
		t.Fatalf("pre-cancelled: %+v", r.Err)
	}
}

func TestClientConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, "http://"+addr)
	r := doStream(c, context.Background(), 4, time.Second)
	if r.Err == nil || r.Err.Class != ClassConnection || r.TSendNs != nil {
		t.Fatalf("err %+v", r.Err)
	}
}

func TestNewClientLoopbackOnly(t *testing.T) {
	for _, u := range []string{"http://10.1.2.3:80", "https://127.0.0.1:443", "http://example.com", "http://[fe80::1%25lo]:80", "http://user@127.0.0.1:1", "ftp://127.0.0.1"} {
		if c, err := NewClient(u); err == nil {
			c.Close()
			t.Errorf("NewClient(%q) accepted", u)
		}
	}
	if c, err := NewClient("http://127.0.0.1:1", WithBearerToken("a\r\nX-Injected: 1")); err == nil {
		c.Close()
		t.Error("a token with CRLF accepted")
	} else if strings.Contains(err.Error(), "Injected") {
		t.Errorf("the error quotes the token: %v", err)
	}
	for _, u := range []string{"http://127.0.0.1:1", "http://localhost:1", "http://[::1]:1", "http://127.1.2.3:1/prefix/"} {
		c, err := NewClient(u)
		if err != nil {
			t.Errorf("NewClient(%q): %v", u, err)
			continue
		}
		c.Close()
	}
}

func TestClientIPv6(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	ln.Close()
	p := startQualsim(t, false, "--listen", "[::1]:0", "--ttft", "1ms", "--token-interval", "100us")
	if !strings.Contains(p.url, "[::1]") {
		t.Fatalf("url %s", p.url)
	}
	c := newTestClient(t, p.url)
	if r := doStream(c, context.Background(), 4, 5*time.Second); r.Err != nil {
		t.Fatal(r.Err)
	}
}

// TestClientBearerToken: the token goes in the Authorization header, never in a record.
func TestClientBearerToken(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
		http.Error(w, "token "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+" is not allowed", http.StatusUnauthorized)
	}))
	defer srv.Close()
	c := newTestClient(t, srv.URL, WithBearerToken("tok-123"))
	r := doStream(c, context.Background(), 4, 5*time.Second)
	if r.Err == nil || r.Err.Class != ClassHTTPStatus || strings.Contains(r.Err.Message, "tok-123") || !strings.Contains(r.Err.Message, "[REDACTED]") {
		t.Fatalf("err %+v", r.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != "Bearer tok-123" {
		t.Fatalf("Authorization %q", got)
	}
}

// TestClientServerClosesIdle: a server that closes each connection after its response (without
// saying so) costs no request: the next one goes out on a fresh connection.
func TestClientServerClosesIdle(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer ln.Close()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			br := bufio.NewReader(conn)
			req, err := http.ReadRequest(br)
			if err == nil {
				io.Copy(io.Discard, req.Body)
				body := "data: " + evA + "\n\ndata: " + evUsage + "\n\ndata: [DONE]\n\n"
				fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			}
			time.Sleep(20 * time.Millisecond)
			conn.Close()
		}
	}()
	c := newTestClient(t, "http://"+ln.Addr().String())
	for i := range 4 {
		r := doStream(c, context.Background(), 1, 5*time.Second)
		if r.Err != nil {
			t.Fatalf("request %d: %v", i, r.Err)
		}
		time.Sleep(50 * time.Millisecond) // the server has closed the idle connection by now
	}
}
