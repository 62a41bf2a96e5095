package sim_test

import (
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
)

// do sends one request with the given Authorization header values (none for nil).
func (ts *testServer) do(method, path, body string, auth ...string) (int, http.Header, []byte) {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	if err != nil {
		ts.t.Fatal(err)
	}
	for _, a := range auth {
		req.Header.Add("Authorization", a)
	}
	resp, err := ts.client.Do(req)
	if err != nil {
		ts.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// TestAPIKey: with WithAPIKey every /v1 endpoint wants the bearer token, the refusal is an
// OpenAI-style 401 that quotes nothing that was sent, /health and /metrics stay open, and the
// log never carries the key or a wrong token.
func TestAPIKey(t *testing.T) {
	const key = "qs-key-Zq8-7fK2p"
	const wrong = "qs-wrong-Mv3-0xY"
	var logs syncBuffer
	ts := start(t, fastConfig(), false, sim.WithAPIKey(key),
		sim.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ := ts.get("/health"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready after 5s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	chat := `{"model":"qualsim-tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":3}`
	refused := []struct {
		name, method, path, body string
		auth                     []string
		message                  string
	}{
		{"no header", "GET", "/v1/models", "", nil, "missing API key"},
		{"wrong token", "GET", "/v1/models", "", []string{"Bearer " + wrong}, "invalid API key"},
		{"key as a prefix", "GET", "/v1/models", "", []string{"Bearer " + key + "x"}, "invalid API key"},
		{"empty token", "GET", "/v1/models", "", []string{"Bearer "}, "invalid API key"},
		{"basic scheme", "GET", "/v1/models", "", []string{"Basic " + key}, "not a bearer token"},
		{"bare key", "GET", "/v1/models", "", []string{key}, "not a bearer token"},
		{"two headers", "GET", "/v1/models", "", []string{"Bearer " + key, "Bearer " + wrong}, "more than one"},
		{"one model", "GET", "/v1/models/qualsim-tiny", "", []string{"Bearer " + wrong}, "invalid API key"},
		{"chat", "POST", "/v1/chat/completions", chat, []string{"Bearer " + wrong}, "invalid API key"},
		{"completions", "POST", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x"}`, nil, "missing API key"},
		{"unknown /v1 path", "GET", "/v1/nope", "", nil, "missing API key"},
	}
	for _, tc := range refused {
		code, h, body := ts.do(tc.method, tc.path, tc.body, tc.auth...)
		var e struct {
			Error struct {
				Message, Type string
				Code          *string
			}
		}
		if err := json.Unmarshal(body, &e); err != nil || code != 401 || e.Error.Code == nil || *e.Error.Code != "invalid_api_key" ||
			e.Error.Type != "invalid_request_error" || !strings.Contains(e.Error.Message, tc.message) {
			t.Errorf("%s: %d %s (%v)", tc.name, code, body, err)
		}
		if h.Get("WWW-Authenticate") != `Bearer realm="qualsim"` {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, h.Get("WWW-Authenticate"))
		}
		if strings.Contains(string(body), key) || strings.Contains(string(body), wrong) {
			t.Errorf("%s: the answer quotes a token: %s", tc.name, body)
		}
	}
	for _, auth := range []string{"Bearer " + key, "bearer " + key, "BEARER " + key} {
		if code, _, body := ts.do("GET", "/v1/models", "", auth); code != 200 || !strings.Contains(string(body), `"qualsim-tiny"`) {
			t.Errorf("%q: /v1/models = %d %s", auth[:7], code, body)
		}
	}
	if code, _, body := ts.do("POST", "/v1/chat/completions", chat, "Bearer "+key); code != 200 || !strings.Contains(string(body), `"completion_tokens":3`) {
		t.Errorf("chat with the key = %d %s", code, body)
	}
	for _, p := range []string{"/health", "/metrics"} {
		if code, _ := ts.get(p); code != 200 {
			t.Errorf("%s without a key = %d, want 200 (open, as in vLLM)", p, code)
		}
	}
	if got := metric(t, ts, `qualsim_http_requests_total{endpoint="/v1/models",code="401"}`); got != 7 {
		t.Errorf("401 on /v1/models counted %v, want 7", got)
	}
	if ts.stop() != nil {
		t.Fatal(ts.err)
	}
	if l := string(logs.Bytes()); strings.Contains(l, key) || strings.Contains(l, wrong) || !strings.Contains(l, "api_key=true") {
		t.Errorf("log:\n%s", l)
	}
}

func TestAPIKeyRefusedUnlessVisibleASCII(t *testing.T) {
	for _, key := range []string{"has space", "tab\there", "crlf\r\nX-Injected: 1", "caf\u00e9"} {
		_, err := sim.New(fastConfig(), sim.WithAPIKey(key))
		if !errors.Is(err, sim.ErrConfig) {
			t.Errorf("New(key %q) = %v", key, err)
		} else if strings.Contains(err.Error(), key) || strings.Contains(err.Error(), "Injected") {
			t.Errorf("the error quotes the key: %v", err)
		}
	}
}

// TestNoAPIKeyIsOpen: without WithAPIKey an Authorization header changes nothing.
func TestNoAPIKeyIsOpen(t *testing.T) {
	ts := start(t, fastConfig(), true)
	if code, _, _ := ts.do("GET", "/v1/models", "", "Bearer anything"); code != 200 {
		t.Fatalf("/v1/models = %d", code)
	}
}
