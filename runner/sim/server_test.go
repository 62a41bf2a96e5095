package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if benchChild() {
		return
	}
	goleak.VerifyTestMain(m)
}

func TestModelsHealthRoutes(t *testing.T) {
	cfg := fastConfig()
	cfg.Models = []string{"m1", "m2"}
	ts := start(t, cfg, true)

	code, body := ts.get("/v1/models")
	var list struct {
		Object string `json:"object"`
		Data   []struct {
			ID, Object, OwnedBy string
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil || code != 200 || list.Object != "list" || len(list.Data) != 2 ||
		list.Data[0].ID != "m1" || list.Data[1].ID != "m2" || list.Data[0].Object != "model" {
		t.Fatalf("/v1/models = %d %s (%v)", code, body, err)
	}
	if code, body := ts.get("/v1/models/m2"); code != 200 || !strings.Contains(string(body), `"id":"m2"`) {
		t.Fatalf("/v1/models/m2 = %d %s", code, body)
	}
	if code, _ := ts.get("/v1/models/nope"); code != 404 {
		t.Fatalf("/v1/models/nope = %d", code)
	}
	if code, body := ts.get("/health"); code != 200 || string(body) != `{"status":"ok"}`+"\n" {
		t.Fatalf("/health = %d %s", code, body)
	}
	if code, body := ts.get("/nope"); code != 404 || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("/nope = %d %s", code, body)
	}
	resp, _, err := ts.post("/v1/models", "{}")
	if err != nil || resp.StatusCode != 405 || resp.Header.Get("Allow") != "GET, HEAD" {
		t.Fatalf("POST /v1/models = %v %v", resp, err)
	}
	if code, _ := ts.get("/v1/completions"); code != 405 {
		t.Fatalf("GET /v1/completions = %d", code)
	}
	if resp.Proto != "HTTP/1.1" {
		t.Fatalf("protocol %s, want HTTP/1.1", resp.Proto)
	}
}

func TestStartupDelay(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.StartupDelay = 300 * time.Millisecond
	began := time.Now()
	ts := start(t, cfg, false)
	if code, body := ts.get("/v1/models"); code != 503 || !strings.Contains(string(body), "model_not_ready") {
		t.Fatalf("/v1/models during startup = %d %s", code, body)
	}
	if code, _ := ts.get("/health"); code != 503 {
		t.Fatalf("/health during startup = %d", code)
	}
	if resp, _, err := ts.post("/v1/completions", completionBody("qualsim-tiny", "x", 1)); err != nil || resp.StatusCode != 503 {
		t.Fatalf("completion during startup = %v %v", resp, err)
	}
	if code, _ := ts.get("/metrics"); code != 200 {
		t.Fatalf("/metrics during startup = %d", code)
	}
	for {
		if code, _ := ts.get("/v1/models"); code == 200 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(began); d < cfg.Timing.StartupDelay {
		t.Fatalf("ready after %v, before the startup delay %v", d, cfg.Timing.StartupDelay)
	}
}

func TestChatStream(t *testing.T) {
	ts := start(t, fastConfig(), true)
	body := chatBody("qualsim-tiny", "hello world", 5)
	body["stream_options"] = map[string]any{"include_usage": true}
	resp, evs, err := ts.stream("/v1/chat/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	want := sim.Generate(sim.GenSpec{Prompt: sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "user", Content: "hello world"}}}, MaxTokens: 5})
	// role, 5 content, finish, usage, [DONE]
	if len(evs) != 9 {
		t.Fatalf("%d events, want 9: %v", len(evs), evs)
	}
	role := evs[0].json(t)["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)
	if role["role"] != "assistant" || role["content"] != "" {
		t.Fatalf("first event %s is not the role prelude", evs[0].raw)
	}
	for i, e := range evs[1:6] {
		m := e.json(t)
		if m["object"] != "chat.completion.chunk" || m["model"] != "qualsim-tiny" || m["id"] != "chatcmpl-qs-1" {
			t.Fatalf("event %d: %s", i+1, e.raw)
		}
		if _, ok := m["usage"]; !ok || m["usage"] != nil {
			t.Fatalf("event %d: include_usage chunks carry usage null: %s", i+1, e.raw)
		}
		if d := m["choices"].([]any)[0].(map[string]any)["delta"].(map[string]any)["content"]; d != want.TokenText(i) {
			t.Fatalf("event %d content %q, want %q", i+1, d, want.TokenText(i))
		}
	}
	if got := content(t, evs); got != want.Text {
		t.Fatalf("text %q, want %q", got, want.Text)
	}
	fin := evs[6].json(t)["choices"].([]any)[0].(map[string]any)
	if fin["finish_reason"] != "length" || len(fin["delta"].(map[string]any)) != 0 {
		t.Fatalf("finish event %s", evs[6].raw)
	}
	u := evs[7].json(t)
	usage := u["usage"].(map[string]any)
	if len(u["choices"].([]any)) != 0 || usage["prompt_tokens"] != 6.0 || usage["completion_tokens"] != 5.0 || usage["total_tokens"] != 11.0 {
		t.Fatalf("usage event %s", evs[7].raw)
	}
	if evs[8].raw != "data: [DONE]" {
		t.Fatalf("last event %q", evs[8].raw)
	}
}

func TestCompletionStreamWithoutUsage(t *testing.T) {
	ts := start(t, fastConfig(), true)
	_, evs, err := ts.stream("/v1/completions", completionBody("qualsim-tiny", "hello world", 3))
	if err != nil {
		t.Fatal(err)
	}
	// 3 content, finish, [DONE]: no role prelude outside chat, no usage without include_usage.
	if len(evs) != 5 || evs[4].raw != "data: [DONE]" {
		t.Fatalf("events %v", evs)
	}
	for _, e := range evs[:4] {
		m := e.json(t)
		if _, ok := m["usage"]; ok || m["object"] != "text_completion" {
			t.Fatalf("event %s", e.raw)
		}
	}
	want := sim.Generate(sim.GenSpec{Prompt: sim.Prompt{Text: "hello world"}, MaxTokens: 3})
	if got := content(t, evs); got != want.Text {
		t.Fatalf("text %q, want %q", got, want.Text)
	}
	if evs[3].json(t)["choices"].([]any)[0].(map[string]any)["finish_reason"] != "length" {
		t.Fatalf("finish %s", evs[3].raw)
	}
}

func TestNonStreamed(t *testing.T) {
	cfg := fastConfig()
	cfg.Seed = 42
	ts := start(t, cfg, true)
	for _, chat := range []bool{true, false} {
		path, body, prompt := "/v1/completions", completionBody("qualsim-tiny", "one two three", 4), sim.Prompt{Text: "one two three"}
		if chat {
			path, body = "/v1/chat/completions", chatBody("qualsim-tiny", "one two three", 4)
			prompt = sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "user", Content: "one two three"}}}
		}
		body["seed"] = 5
		resp, b, err := ts.post(path, body)
		if err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %v %v %s", path, resp, err, b)
		}
		var r struct {
			Object  string
			Choices []struct {
				Text         string
				Message      struct{ Role, Content string }
				FinishReason string `json:"finish_reason"`
			}
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			}
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		want := sim.Generate(sim.GenSpec{ModelSeed: 42, RequestSeed: 5, Prompt: prompt, MaxTokens: 4})
		got := r.Choices[0].Text
		if chat {
			got = r.Choices[0].Message.Content
			if r.Object != "chat.completion" || r.Choices[0].Message.Role != "assistant" {
				t.Fatalf("chat body %s", b)
			}
		}
		if got != want.Text || r.Choices[0].FinishReason != "length" || r.Usage.Prompt != prompt.Tokens() ||
			r.Usage.Completion != 4 || r.Usage.Total != prompt.Tokens()+4 {
			t.Fatalf("%s body %s, want text %q", path, b, want.Text)
		}
	}
}

// TestDeterministicAcrossServers: two servers with the same seed give the same text; another
// seed gives another.
func TestDeterministicAcrossServers(t *testing.T) {
	text := func(seed uint64) string {
		cfg := fastConfig()
		cfg.Seed = seed
		ts := start(t, cfg, true)
		body := chatBody("qualsim-tiny", "Count from one to ten.", 20)
		body["seed"] = 1234
		_, evs, err := ts.stream("/v1/chat/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		if err := ts.stop(); err != nil {
			t.Fatal(err)
		}
		return content(t, evs)
	}
	a, b, c := text(20261130), text(20261130), text(1)
	if a != b || a == c || len(a) != 20*sim.TokenWidth {
		t.Fatalf("outputs %q %q %q", a, b, c)
	}
}

func TestChunkingAndContinuousUsage(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.TokensPerEvent = 4
	ts := start(t, cfg, true)
	body := completionBody("qualsim-tiny", "p", 10)
	body["stream_options"] = map[string]any{"include_usage": true, "continuous_usage_stats": true}
	_, evs, err := ts.stream("/v1/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	// content events carry 1, 4, 4, 1 tokens; then finish, usage, [DONE]
	if len(evs) != 7 {
		t.Fatalf("%d events: %v", len(evs), evs)
	}
	for i, n := range []int{1, 5, 9, 10} {
		m := evs[i].json(t)
		text := m["choices"].([]any)[0].(map[string]any)["text"].(string)
		if len(text) != []int{1, 4, 4, 1}[i]*sim.TokenWidth {
			t.Fatalf("event %d text %q", i+1, text)
		}
		if u := m["usage"].(map[string]any); u["completion_tokens"] != float64(n) || u["prompt_tokens"] != 2.0 {
			t.Fatalf("event %d usage %v, want %d completion tokens", i+1, u, n)
		}
	}
}

func TestStopAndEOSOverHTTP(t *testing.T) {
	cfg := fastConfig()
	cfg.EOSAfter = 3
	ts := start(t, cfg, true)
	full := sim.Generate(sim.GenSpec{Prompt: sim.Prompt{Text: "p"}, MaxTokens: 8})

	body := completionBody("qualsim-tiny", "p", 8)
	body["stop"] = []string{full.TokenText(1)[3:]} // the last two digits and the space
	_, evs, err := ts.stream("/v1/completions", body)
	if err != nil {
		t.Fatal(err)
	}
	if got := content(t, evs); got != full.TokenText(0)+full.TokenText(1)[:3] {
		t.Fatalf("text with stop %q", got)
	}
	if fin := evs[len(evs)-2].json(t)["choices"].([]any)[0].(map[string]any)["finish_reason"]; fin != "stop" {
		t.Fatalf("finish %v", fin)
	}

	for _, ignore := range []bool{false, true} {
		body := completionBody("qualsim-tiny", "p", 8)
		body["ignore_eos"] = ignore
		_, b, err := ts.post("/v1/completions", body)
		if err != nil {
			t.Fatal(err)
		}
		wantTokens, wantFinish := 3, "stop"
		if ignore {
			wantTokens, wantFinish = 8, "length"
		}
		if !strings.Contains(string(b), fmt.Sprintf(`"completion_tokens":%d,`, wantTokens)) || !strings.Contains(string(b), `"finish_reason":"`+wantFinish+`"`) {
			t.Fatalf("ignore_eos=%v: %s", ignore, b)
		}
	}
}

func TestBadRequests(t *testing.T) {
	ts := start(t, fastConfig(), true)
	tests := []struct {
		name, path, body string
		code             int
	}{
		{"not json", "/v1/completions", `{`, 400},
		{"trailing data", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x"} x`, 400},
		{"no model", "/v1/completions", `{"prompt":"x"}`, 400},
		{"unknown model", "/v1/completions", `{"model":"nope","prompt":"x"}`, 404},
		{"no prompt", "/v1/completions", `{"model":"qualsim-tiny"}`, 400},
		{"two prompts", "/v1/completions", `{"model":"qualsim-tiny","prompt":["a","b"]}`, 400},
		{"token prompt", "/v1/completions", `{"model":"qualsim-tiny","prompt":[1,2]}`, 400},
		{"messages on completions", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x","messages":[]}`, 400},
		{"prompt on chat", "/v1/chat/completions", `{"model":"qualsim-tiny","prompt":"x","messages":[{"role":"user","content":"x"}]}`, 400},
		{"no messages", "/v1/chat/completions", `{"model":"qualsim-tiny","messages":[]}`, 400},
		{"no role", "/v1/chat/completions", `{"model":"qualsim-tiny","messages":[{"content":"x"}]}`, 400},
		{"image part", "/v1/chat/completions", `{"model":"qualsim-tiny","messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400},
		{"n=2", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x","n":2}`, 400},
		{"max_tokens 0", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x","max_tokens":0}`, 400},
		{"max_tokens huge", "/v1/completions", fmt.Sprintf(`{"model":"qualsim-tiny","prompt":"x","max_tokens":%d}`, sim.MaxCompletionTokens+1), 400},
		{"stream_options without stream", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x","stream_options":{"include_usage":true}}`, 400},
		{"stop not strings", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x","stop":[1]}`, 400},
		{"too many stops", "/v1/completions", `{"model":"qualsim-tiny","prompt":"x","stop":["a","b","c","d","e","f","g","h","i","j","k","l","m","n","o","p","q"]}`, 400},
		{"body too large", "/v1/completions", `{"model":"qualsim-tiny","prompt":"` + strings.Repeat("x", sim.MaxRequestBodyBytes) + `"}`, 413},
		{"parts are joined", "/v1/chat/completions", `{"model":"qualsim-tiny","max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`, 200},
		{"max_completion_tokens", "/v1/chat/completions", `{"model":"qualsim-tiny","max_completion_tokens":2,"messages":[{"role":"user","content":null}]}`, 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, b, err := ts.post(tc.path, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, b)
			}
			var e struct {
				Error struct{ Message, Type string }
			}
			if tc.code != 200 && (json.Unmarshal(b, &e) != nil || e.Error.Message == "" || e.Error.Type == "") {
				t.Fatalf("error body %s", b)
			}
		})
	}
	if n := metric(t, ts, `qualsim_errors_total{reason="bad_request"}`); n != 17 {
		t.Fatalf("bad_request errors %v, want 17", n)
	}
	if n := metric(t, ts, `qualsim_errors_total{reason="body_too_large"}`); n != 1 {
		t.Fatalf("body_too_large errors %v", n)
	}
}

// TestSlotsQueue: with one slot, the second of two concurrent requests waits for the first, so
// its TTFT includes the first's service time; /metrics shows the wait.
func TestSlotsQueue(t *testing.T) {
	cfg := fastConfig()
	cfg.Slots = 1
	cfg.Timing.TTFT = 100 * time.Millisecond
	ts := start(t, cfg, true)
	type result struct {
		first time.Duration
		err   error
	}
	results := make(chan result, 2)
	began := time.Now()
	release := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-release
			_, evs, err := ts.stream("/v1/completions", completionBody("qualsim-tiny", fmt.Sprint(i), 1))
			if err == nil && len(evs) == 0 {
				err = errors.New("no events")
			}
			r := result{err: err}
			if err == nil {
				r.first = evs[0].at.Sub(began)
			}
			results <- r
		}()
	}
	close(release)
	// While one request holds the slot, the other is waiting.
	deadline := time.Now().Add(2 * time.Second)
	for metric(t, ts, "qualsim_num_requests_waiting") != 1 {
		if time.Now().After(deadline) {
			t.Fatal("no request ever waited for the slot")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if metric(t, ts, "qualsim_num_requests_running") != 1 {
		t.Fatal("running gauge is not 1")
	}
	wg.Wait()
	close(results)
	var firsts []time.Duration
	for r := range results {
		if r.err != nil {
			t.Fatal(r.err)
		}
		firsts = append(firsts, r.first)
	}
	lo, hi := min(firsts[0], firsts[1]), max(firsts[0], firsts[1])
	if lo < cfg.Timing.TTFT || hi < 2*cfg.Timing.TTFT {
		t.Fatalf("first events at %v and %v; want >= %v and >= %v", lo, hi, cfg.Timing.TTFT, 2*cfg.Timing.TTFT)
	}
	if w := metric(t, ts, "qualsim_queue_wait_seconds_sum"); w < 0.09 {
		t.Fatalf("queue wait sum %v s, want about 0.1", w)
	}
	if n := metric(t, ts, "qualsim_queue_wait_seconds_count"); n != 2 {
		t.Fatalf("queue wait count %v", n)
	}
}

func TestMetricsCounters(t *testing.T) {
	ts := start(t, fastConfig(), true)
	body := chatBody("qualsim-tiny", "a b c", 7)
	body["stream_options"] = map[string]any{"include_usage": true}
	for range 3 {
		if _, _, err := ts.stream("/v1/chat/completions", body); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := ts.post("/v1/completions", completionBody("qualsim-tiny", "x", 2)); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{
		`qualsim_http_requests_total{endpoint="/v1/chat/completions",code="200"}`: 3,
		`qualsim_http_requests_total{endpoint="/v1/completions",code="200"}`:      1,
		"qualsim_prompt_tokens_total":                                             3*(1+3+3) + 2,
		"qualsim_generation_tokens_total":                                         3*7 + 2,
		"qualsim_sse_events_total":                                                3 * (1 + 7 + 3),
		"qualsim_active_streams":                                                  0,
		"qualsim_num_requests_running":                                            0,
		"qualsim_decode_slots":                                                    8,
		"qualsim_ready":                                                           1,
	} {
		if got := metric(t, ts, name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// Every line is a comment or `name[{labels}] value`, and every family has HELP and TYPE.
	_, b := ts.get("/metrics")
	sc := bufio.NewScanner(bytes.NewReader(b))
	types := map[string]bool{}
	for sc.Scan() {
		line := sc.Text()
		if f, ok := strings.CutPrefix(line, "# TYPE "); ok {
			types[strings.Fields(f)[0]] = true
			continue
		}
		if strings.HasPrefix(line, "# HELP ") {
			continue
		}
		name, _, ok := strings.Cut(line, " ")
		base, _, _ := strings.Cut(name, "{")
		base = strings.TrimSuffix(strings.TrimSuffix(base, "_sum"), "_count")
		if !ok || !types[base] {
			t.Errorf("line %q has no TYPE for %q", line, base)
		}
	}
}

func TestClientDisconnectFreesSlot(t *testing.T) {
	cfg := fastConfig()
	cfg.Slots = 1
	cfg.Timing.TokenInterval = 20 * time.Millisecond
	ts := start(t, cfg, true)
	ctx, cancel := context.WithCancel(context.Background())
	data, _ := json.Marshal(map[string]any{"model": "qualsim-tiny", "prompt": "x", "max_tokens": 1000, "stream": true})
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/v1/completions", bytes.NewReader(data))
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(2 * time.Second)
	for metric(t, ts, `qualsim_errors_total{reason="client_disconnected"}`) != 1 || metric(t, ts, "qualsim_num_requests_running") != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the disconnected stream kept its slot")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if resp, _, err := ts.post("/v1/completions", completionBody("qualsim-tiny", "x", 1)); err != nil || resp.StatusCode != 200 {
		t.Fatalf("next request: %v %v", resp, err)
	}
}

func TestGracefulShutdownFinishesStreams(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.TokenInterval = 10 * time.Millisecond
	ts := start(t, cfg, true)
	type out struct {
		evs []event
		err error
	}
	done := make(chan out, 1)
	go func() {
		_, evs, err := ts.stream("/v1/completions", completionBody("qualsim-tiny", "x", 30))
		done <- out{evs, err}
	}()
	for metric(t, ts, "qualsim_active_streams") != 1 {
		time.Sleep(2 * time.Millisecond)
	}
	addr := strings.TrimPrefix(ts.url, "http://")
	if err := ts.stop(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	o := <-done
	if o.err != nil || len(o.evs) != 32 || o.evs[31].raw != "data: [DONE]" {
		t.Fatalf("in-flight stream: %d events, err %v", len(o.evs), o.err)
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatal("still accepting after shutdown")
	}
}

func TestShutdownGraceCutsStreams(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.TokenInterval = 10 * time.Millisecond
	cfg.ShutdownGrace = 50 * time.Millisecond
	ts := start(t, cfg, true)
	done := make(chan error, 1)
	var n int
	go func() {
		_, evs, err := ts.stream("/v1/completions", completionBody("qualsim-tiny", "x", 1000))
		n = len(evs)
		done <- err
	}()
	for metric(t, ts, "qualsim_active_streams") != 1 {
		time.Sleep(2 * time.Millisecond)
	}
	began := time.Now()
	if err := ts.stop(); err != nil {
		t.Fatalf("Serve = %v", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Fatalf("shutdown took %v with a 50ms grace", d)
	}
	if err := <-done; err == nil || n >= 1000 {
		t.Fatalf("stream was not cut: %d events, err %v", n, err)
	}
}

func TestSlowShutdown(t *testing.T) {
	cfg := fastConfig()
	if err := cfg.Faults.Set("slow-shutdown=300ms"); err != nil {
		t.Fatal(err)
	}
	ts := start(t, cfg, true)
	began := time.Now()
	if err := ts.stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(began); d < 300*time.Millisecond {
		t.Fatalf("shutdown took %v, want >= 300ms", d)
	}
}

type fakeAddrListener struct{ net.Listener }

func (fakeAddrListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 80} }

func TestServeRefusesNonLoopback(t *testing.T) {
	srv, err := sim.New(fastConfig())
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(context.Background(), fakeAddrListener{ln}); !errors.Is(err, sim.ErrNotLoopback) {
		t.Fatalf("Serve = %v, want ErrNotLoopback", err)
	}
	if err := srv.Serve(context.Background(), ln); err == nil {
		t.Fatal("second Serve accepted")
	}
	ln.Close()
}

func TestNewRejectsInvalidConfig(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Slots = 0
	if _, err := sim.New(cfg); !errors.Is(err, sim.ErrConfig) {
		t.Fatalf("New = %v", err)
	}
}
