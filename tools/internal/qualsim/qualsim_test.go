package qualsim_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"github.com/qualkit/qualkit/tools/internal/qualsim"
)

// fast are flags that make a process's timing quick for tests.
var fast = []string{"--ttft", "1ms", "--token-interval", "0s", "--log-level", "debug"}

func flags(extra ...string) []string { return append(append([]string(nil), fast...), extra...) }

func chat(maxTokens int, stream bool) map[string]any {
	b := map[string]any{
		"model":      "qualsim-tiny",
		"messages":   []map[string]any{{"role": "user", "content": "Say hello to a new colleague."}},
		"max_tokens": maxTokens,
		"seed":       1234,
		"stream":     stream,
	}
	if stream {
		b["stream_options"] = map[string]any{"include_usage": true}
	}
	return b
}

func TestEndpoints(t *testing.T) {
	p := startProc(t, flags("--model", "m1", "--model", "m2")...)
	p.waitReady()
	if !strings.HasPrefix(p.stdout.String(), "qualsim listening on http://"+p.addr) {
		t.Fatalf("stdout %q", p.stdout.String())
	}
	if code, body := p.get("/v1/models"); code != 200 || !strings.Contains(body, `"id":"m1"`) || !strings.Contains(body, `"id":"m2"`) {
		t.Fatalf("/v1/models = %d %s", code, body)
	}
	if code, body := p.get("/health"); code != 200 || body != `{"status":"ok"}`+"\n" {
		t.Fatalf("/health = %d %s", code, body)
	}
	body := chat(8, true)
	body["model"] = "m2"
	code, sse, err := p.post("/v1/chat/completions", body)
	evs := events(sse)
	if err != nil || code != 200 || len(evs) != 12 || evs[11] != "data: [DONE]" || !strings.Contains(evs[10], `"usage":{"prompt_tokens":`) {
		t.Fatalf("chat stream: %d %v\n%s", code, err, sse)
	}
	code, resp, err := p.post("/v1/completions", map[string]any{"model": "m1", "prompt": "hello world", "max_tokens": 3})
	want := sim.Generate(sim.GenSpec{Prompt: sim.Prompt{Text: "hello world"}, MaxTokens: 3})
	if err != nil || code != 200 || !strings.Contains(resp, `"text":"`+want.Text+`"`) {
		t.Fatalf("completion: %d %v %s (want text %q)", code, err, resp, want.Text)
	}
	code, metrics := p.get("/metrics")
	for _, line := range []string{
		`qualsim_http_requests_total{endpoint="/v1/chat/completions",code="200"} 1`,
		`qualsim_generation_tokens_total 11`,
		`qualsim_sse_events_total 12`,
		`qualsim_active_streams 0`,
	} {
		if code != 200 || !strings.Contains(metrics, line+"\n") {
			t.Fatalf("/metrics lacks %q:\n%s", line, metrics)
		}
	}
	p.signal(syscall.SIGTERM)
	if c := p.exitCode(5 * time.Second); c != 0 {
		t.Fatalf("exit %d after SIGTERM", c)
	}
}

// TestOutputIsReproducible: two processes with the same seeds give byte-identical texts.
func TestOutputIsReproducible(t *testing.T) {
	text := func(seed string) string {
		p := startProc(t, flags("--seed", seed)...)
		p.waitReady()
		_, body, err := p.post("/v1/chat/completions", chat(32, false))
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		return r.Choices[0].Message.Content
	}
	a, b, c := text("20261130"), text("20261130"), text("7")
	if a != b || a == c || len(a) != 32*sim.TokenWidth {
		t.Fatalf("texts %q %q %q", a, b, c)
	}
}

func TestStreamFaults(t *testing.T) {
	tests := []struct {
		fault string
		check func(evs []string) bool
	}{
		{"malformed-json@3", func(evs []string) bool {
			return len(evs) == 8 && !json.Valid([]byte(strings.TrimPrefix(evs[2], "data: "))) && json.Valid([]byte(strings.TrimPrefix(evs[3], "data: ")))
		}},
		{"missing-data-prefix@2", func(evs []string) bool { return len(evs) == 8 && strings.HasPrefix(evs[1], `{"id":`) }},
		{"missing-usage", func(evs []string) bool { return len(evs) == 7 && !strings.Contains(strings.Join(evs, ""), `"usage":{`) }},
		{"inconsistent-usage", func(evs []string) bool {
			want := fmt.Sprintf(`"usage":{"prompt_tokens":%d,"completion_tokens":4,"total_tokens":%d}`, promptTokens(), promptTokens()+5)
			return len(evs) == 8 && strings.Contains(evs[6], want)
		}},
		{"no-done", func(evs []string) bool { return len(evs) == 7 && !strings.Contains(evs[6], "[DONE]") }},
		{"huge-event=1MiB@2", func(evs []string) bool {
			return len(evs) == 8 && len(evs[1]) >= 1<<20 && json.Valid([]byte(strings.TrimPrefix(evs[1], "data: ")))
		}},
	}
	for _, tc := range tests {
		t.Run(tc.fault, func(t *testing.T) {
			p := startProc(t, flags("--fault", tc.fault)...)
			p.waitReady()
			code, body, err := p.post("/v1/chat/completions", chat(4, true))
			if err != nil || code != 200 || !tc.check(events(body)) {
				t.Fatalf("%d %v\n%.2000s", code, err, body)
			}
		})
	}
}

func promptTokens() int {
	return sim.Prompt{Chat: true, Messages: []sim.Message{{Role: "user", Content: "Say hello to a new colleague."}}}.Tokens()
}

func TestStallFault(t *testing.T) {
	gt := filepath.Join(t.TempDir(), "gt.jsonl")
	p := startProc(t, flags("--fault", "stall=300ms@3", "--ground-truth", gt)...)
	p.waitReady()
	resp, err := p.client.Post(p.url("/v1/completions"), "application/json", strings.NewReader(`{"model":"qualsim-tiny","prompt":"x","max_tokens":4,"stream":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var at []time.Time
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			break
		}
		if line == "\n" {
			at = append(at, time.Now())
		}
	}
	if len(at) != 6 || at[2].Sub(at[1]) < 250*time.Millisecond || at[3].Sub(at[2]) > 200*time.Millisecond {
		t.Fatalf("event arrivals %v", at)
	}
	p.signal(syscall.SIGTERM)
	if c := p.exitCode(5 * time.Second); c != 0 {
		t.Fatalf("exit %d", c)
	}
	lines := readGroundTruth(t, gt)
	if len(lines) != 8 || lines[4]["kind"] != "content+stall" || lines[4]["event"] != 3.0 {
		t.Fatalf("ground truth %v", lines)
	}
	// Never early: event 3 leaves at least the stall after the slot (zero TTFT and interval aside).
	if gap := lines[4]["t_mono_ns"].(float64) - lines[1]["t_mono_ns"].(float64); gap < 300e6+1e6 {
		t.Fatalf("ground truth: event 3 %v ns after the slot, want >= 301ms", gap)
	}
}

func readGroundTruth(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("ground truth line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func TestHTTPFaults(t *testing.T) {
	p := startProc(t, flags("--fault", "http-429=0.5", "--fault", "http-500=0.25")...)
	p.waitReady()
	counts := map[int]int{}
	for range 40 {
		code, _, err := p.post("/v1/completions", map[string]any{"model": "qualsim-tiny", "prompt": "x", "max_tokens": 1})
		if err != nil {
			t.Fatal(err)
		}
		counts[code]++
	}
	if counts[429] < 10 || counts[500] < 4 || counts[200] < 4 || counts[429]+counts[500]+counts[200] != 40 {
		t.Fatalf("status counts %v", counts)
	}
}

func TestReadinessFaults(t *testing.T) {
	t.Run("never-ready", func(t *testing.T) {
		p := startProc(t, flags("--fault", "never-ready")...)
		time.Sleep(100 * time.Millisecond)
		if code, _ := p.get("/v1/models"); code != 503 {
			t.Fatalf("/v1/models = %d", code)
		}
		if code, _ := p.get("/health"); code != 503 {
			t.Fatalf("/health = %d", code)
		}
		p.signal(syscall.SIGTERM)
		if c := p.exitCode(5 * time.Second); c != 0 {
			t.Fatalf("exit %d", c)
		}
	})
	t.Run("models-without-id", func(t *testing.T) {
		p := startProc(t, flags("--fault", "models-without-id")...)
		p.waitReady()
		if _, body := p.get("/v1/models"); strings.Contains(body, "qualsim-tiny") || !strings.Contains(body, sim.DecoyModel) {
			t.Fatalf("/v1/models = %s", body)
		}
	})
	t.Run("exit-before-ready", func(t *testing.T) {
		p := startProc(t, flags("--fault", "exit-before-ready", "--startup-delay", "200ms")...)
		if code, _ := p.get("/v1/models"); code != 503 {
			t.Fatalf("/v1/models before the exit = %d", code)
		}
		if c := p.exitCode(5 * time.Second); c != 3 {
			t.Fatalf("exit %d, want 3", c)
		}
		if _, err := procStat(p.pid()); err == nil {
			t.Fatalf("/proc/%d still exists after the exit", p.pid())
		}
		if !strings.Contains(p.stderr.String(), "exit-before-ready") {
			t.Fatalf("stderr %s", p.stderr.String())
		}
	})
}

func TestCrashAfterEvents(t *testing.T) {
	gt := filepath.Join(t.TempDir(), "gt.jsonl")
	p := startProc(t, flags("--fault", "crash-after-events=3", "--ground-truth", gt)...)
	p.waitReady()
	code, body, err := p.post("/v1/chat/completions", chat(10, true))
	if code != 200 || !errors.Is(err, io.ErrUnexpectedEOF) || len(events(body)) != 3 {
		t.Fatalf("%d %v: %d events\n%s", code, err, len(events(body)), body)
	}
	if c := p.exitCode(5 * time.Second); c != 3 {
		t.Fatalf("exit %d, want 3", c)
	}
	// headers, slot and the three events reached the log before the exit.
	if lines := readGroundTruth(t, gt); len(lines) != 5 || lines[4]["event"] != 3.0 {
		t.Fatalf("ground truth %v", lines)
	}
}

func TestSIGTERMFinishesStreams(t *testing.T) {
	p := startProc(t, "--ttft", "1ms", "--token-interval", "10ms")
	p.waitReady()
	type result struct {
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		_, body, err := p.post("/v1/chat/completions", chat(40, true))
		done <- result{body, err}
	}()
	for !strings.Contains(func() string { _, m := p.get("/metrics"); return m }(), "qualsim_active_streams 1\n") {
		time.Sleep(2 * time.Millisecond)
	}
	p.signal(syscall.SIGTERM)
	r := <-done
	if evs := events(r.body); r.err != nil || len(evs) != 44 || evs[43] != "data: [DONE]" {
		t.Fatalf("in-flight stream: %v, %d events", r.err, len(events(r.body)))
	}
	if c := p.exitCode(5 * time.Second); c != 0 {
		t.Fatalf("exit %d", c)
	}
	if _, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		t.Fatal("port still accepting after exit")
	}
}

func TestSlowShutdown(t *testing.T) {
	p := startProc(t, flags("--fault", "slow-shutdown=400ms")...)
	p.waitReady()
	began := time.Now()
	p.signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	if !p.running() {
		t.Fatal("exited before the slow-shutdown delay")
	}
	if _, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		t.Fatal("still accepting during shutdown")
	}
	if c := p.exitCode(5 * time.Second); c != 0 || time.Since(began) < 400*time.Millisecond {
		t.Fatalf("exit %d after %v", c, time.Since(began))
	}
}

func TestIgnoreSIGTERM(t *testing.T) {
	p := startProc(t, flags("--fault", "ignore-sigterm")...)
	p.waitReady()
	const sigterm, sigint = 1 << (15 - 1), 1 << (2 - 1)
	if m := sigMask(t, p.pid(), "SigIgn"); m&sigterm == 0 || m&sigint == 0 {
		t.Fatalf("SigIgn %x lacks SIGTERM or SIGINT", m)
	}
	p.signal(syscall.SIGTERM)
	p.signal(syscall.SIGINT)
	time.Sleep(300 * time.Millisecond)
	if code, _ := p.get("/v1/models"); !p.running() || code != 200 {
		t.Fatalf("not serving after SIGTERM and SIGINT (status %d)", code)
	}
	p.signal(syscall.SIGKILL)
	if c := p.exitCode(5 * time.Second); c != -1 || p.state.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("exit %d, want death by SIGKILL", c)
	}
}

func TestSetsidGrandchild(t *testing.T) {
	p := startProc(t, flags("--fault", "setsid-grandchild")...)
	p.waitReady()
	gs := grandchildrenOf(p.pid())
	if len(gs) != 1 {
		t.Fatalf("grandchildren %v", gs)
	}
	g := gs[0]
	st, err := procStat(g)
	if err != nil {
		t.Fatal(err)
	}
	parent, _ := procStat(p.pid())
	if st[1] != fmt.Sprint(p.pid()) || st[3] != fmt.Sprint(g) || st[2] != fmt.Sprint(g) || st[3] == parent[3] {
		t.Fatalf("grandchild stat ppid=%s pgrp=%s sid=%s; qualsim sid=%s", st[1], st[2], st[3], parent[3])
	}
	// A signal to qualsim's process group does not reach the grandchild.
	syscall.Kill(-p.pid(), syscall.SIGTERM)
	if c := p.exitCode(5 * time.Second); c != 0 {
		t.Fatalf("exit %d", c)
	}
	time.Sleep(50 * time.Millisecond)
	if !alive(g) {
		t.Fatal("the grandchild died with its parent")
	}
	syscall.Kill(g, syscall.SIGTERM)
	waitGone(t, g, 5*time.Second)
}

func TestGrandchildKeepsListener(t *testing.T) {
	p := startProc(t, flags("--fault", "grandchild-keeps-listener", "--model", "kept")...)
	p.waitReady()
	gs := grandchildrenOf(p.pid())
	if len(gs) != 1 {
		t.Fatalf("grandchildren %v", gs)
	}
	g := gs[0]
	inode := listenerInode(t, p.addr)
	if !holdsSocket(g, inode) || !holdsSocket(p.pid(), inode) {
		t.Fatalf("socket %s: held by qualsim %v, by grandchild %v", inode, holdsSocket(p.pid(), inode), holdsSocket(g, inode))
	}
	p.signal(syscall.SIGTERM)
	if c := p.exitCode(5 * time.Second); c != 0 {
		t.Fatalf("exit %d", c)
	}
	// The port still answers, from the grandchild.
	deadline := time.Now().Add(5 * time.Second)
	for {
		code, body := p.get("/v1/models")
		if code == 200 && strings.Contains(body, `"id":"kept"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nobody answers on %s after qualsim exited: %d %s", p.addr, code, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !holdsSocket(g, inode) {
		t.Fatal("the grandchild no longer holds the listener")
	}
	p.client.CloseIdleConnections()
	syscall.Kill(g, syscall.SIGTERM)
	waitGone(t, g, 5*time.Second)
	if c, err := net.DialTimeout("tcp", p.addr, time.Second); err == nil {
		c.Close()
		t.Fatal("port still accepting after the grandchild exited")
	}
}

func TestUsageErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	os.Unsetenv("QUALSIM_TEST_UNSET_KEY")
	t.Setenv("QUALSIM_TEST_EMPTY_KEY", "")
	t.Setenv("QUALSIM_TEST_SPACED_KEY", "two words")
	badConfig := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(badConfig, []byte(`{"slots": 0}`), 0o600)
	tests := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"--listen", "0.0.0.0:18080"}, 2, "not a loopback address"},
		{[]string{"--listen", ":18080"}, 2, "not a loopback address"},
		{[]string{"--listen", "nonsense"}, 2, "missing port"},
		{[]string{"--fault", "bogus"}, 2, `unknown name "bogus"`},
		{[]string{"--fault", "stall=soon"}, 2, "want a duration"},
		{[]string{"--slots", "0"}, 2, "slots 0"},
		{[]string{"--config", badConfig}, 2, "slots 0"},
		{[]string{"--config", "/does/not/exist.json"}, 2, "read config"},
		{[]string{"--log-level", "loud"}, 2, "--log-level"},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
		{[]string{"frobnicate"}, 2, `unknown command "frobnicate"`},
		{[]string{"--listen", taken.Addr().String()}, 3, "address already in use"},
		{[]string{"--api-key-env", "QUALSIM_TEST_UNSET_KEY"}, 2, "--api-key-env QUALSIM_TEST_UNSET_KEY: the variable is not set"},
		{[]string{"--api-key-env", "QUALSIM_TEST_EMPTY_KEY"}, 2, "--api-key-env QUALSIM_TEST_EMPTY_KEY: the variable is empty"},
		{[]string{"--api-key-env", "QUALSIM_TEST_SPACED_KEY"}, 2, "not visible ASCII"},
		{[]string{"--api-key-env", ""}, 2, "is not an environment variable name"},
	}
	for _, tc := range tests {
		var stdout, stderr bytes.Buffer
		code := qualsim.Main(append([]string{"qualsim"}, tc.args...), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.msg) {
			t.Errorf("qualsim %v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr.String(), tc.code, tc.msg)
		}
	}
}

// TestAPIKeyEnv: --api-key-env NAME makes the process require the bearer token NAME holds on
// /v1, and neither its output nor its log (at debug level) ever carries the key.
func TestAPIKeyEnv(t *testing.T) {
	const key = "qsk-8Hd2-Pq0vX"
	t.Setenv("QUALSIM_TEST_API_KEY", key)
	p := startProc(t, flags("--api-key-env", "QUALSIM_TEST_API_KEY")...)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if code, _ := p.get("/health"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not ready within 10s; stderr:\n%s", p.stderr.String())
		}
		time.Sleep(2 * time.Millisecond)
	}
	if code, body := p.get("/v1/models"); code != 401 || !strings.Contains(body, `"code":"invalid_api_key"`) {
		t.Fatalf("/v1/models without the key = %d %s", code, body)
	}
	get := func(auth string) (int, string) {
		req, _ := http.NewRequest("GET", p.url("/v1/models"), nil)
		req.Header.Set("Authorization", auth)
		resp, err := p.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("Bearer not-" + key); code != 401 || strings.Contains(body, key) {
		t.Fatalf("/v1/models with a wrong key = %d %s", code, body)
	}
	if code, body := get("Bearer " + key); code != 200 || !strings.Contains(body, `"id":"qualsim-tiny"`) {
		t.Fatalf("/v1/models with the key = %d %s", code, body)
	}
	var stdout, stderr bytes.Buffer
	if code := qualsim.Main([]string{"qualsim", "probe", "--addr", p.addr, "--api-key-env", "QUALSIM_TEST_API_KEY", "/v1/models"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"id":"qualsim-tiny"`) {
		t.Fatalf("probe --api-key-env: exit %d, stdout %s, stderr %s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	if code := qualsim.Main([]string{"qualsim", "probe", "--addr", p.addr, "/v1/models"}, &stdout, &stderr); code != 1 || !strings.Contains(stdout.String(), "invalid_api_key") {
		t.Fatalf("probe without the key: exit %d, stdout %s", code, stdout.String())
	}
	p.signal(syscall.SIGTERM)
	if c := p.exitCode(5 * time.Second); c != 0 {
		t.Fatalf("exit %d after SIGTERM", c)
	}
	if out := p.stdout.String() + p.stderr.String(); strings.Contains(out, key) || !strings.Contains(out, "api_key=true") {
		t.Fatalf("output:\n%s", out)
	}
}

func TestConfigFileAndOverride(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "qualsim.json")
	os.WriteFile(cfg, []byte(`{"models": ["from-file"], "ttft": "1ms", "token_interval": "0s", "tokens_per_event": 3, "faults": ["no-done"]}`), 0o600)
	p := startProc(t, "--config", cfg, "--tokens-per-event", "2")
	p.waitReady()
	if _, body := p.get("/v1/models"); !strings.Contains(body, `"id":"from-file"`) {
		t.Fatalf("/v1/models %s", body)
	}
	_, body, err := p.post("/v1/completions", map[string]any{"model": "from-file", "prompt": "x", "max_tokens": 5, "stream": true})
	// content events of 1, 2, 2 tokens (the flag beat the file), finish, and no [DONE] (the file's fault).
	if evs := events(body); err != nil || len(evs) != 4 || strings.Contains(body, "[DONE]") {
		t.Fatalf("%v\n%s", err, body)
	}
}

func TestProbe(t *testing.T) {
	p := startProc(t, flags("--startup-delay", "150ms")...)
	addrFile := filepath.Join(t.TempDir(), "addr")
	os.WriteFile(addrFile, []byte(p.addr+"\n"), 0o600)
	var stdout, stderr bytes.Buffer
	if code := qualsim.Main([]string{"qualsim", "probe", "--addr", p.addr, "/v1/models"}, &stdout, &stderr); code != 1 {
		t.Fatalf("probe during startup: exit %d, stderr %s", code, stderr.String())
	}
	stdout.Reset()
	if code := qualsim.Main([]string{"qualsim", "probe", "--addr-file", addrFile, "--wait", "5s", "/v1/models"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), `"id":"qualsim-tiny"`) {
		t.Fatalf("probe --wait: exit %d, stdout %s, stderr %s", code, stdout.String(), stderr.String())
	}
	stdout.Reset()
	data := `{"model":"qualsim-tiny","prompt":"hello world","max_tokens":2,"stream":true}`
	if code := qualsim.Main([]string{"qualsim", "probe", "--addr", p.addr, "--data", data, "/v1/completions"}, &stdout, &stderr); code != 0 || !strings.HasSuffix(stdout.String(), "data: [DONE]\n\n") {
		t.Fatalf("probe --data: exit %d, stdout %s", code, stdout.String())
	}
	for _, args := range [][]string{
		{"probe", "/v1/models"}, {"probe", "--addr", p.addr}, {"probe", "--addr", "10.0.0.1:80", "/v1/models"},
		{"probe", "--addr", p.addr, "--addr-file", addrFile, "/v1/models"}, {"probe", "--addr", p.addr, "v1/models"},
	} {
		if code := qualsim.Main(append([]string{"qualsim"}, args...), io.Discard, io.Discard); code != 2 {
			t.Errorf("qualsim %v: exit %d, want 2", args, code)
		}
	}
}

// TestDocsListEveryFault keeps docs/qualsim.md and the fault catalogue in step.
func TestDocsListEveryFault(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/qualsim.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range sim.FaultCatalogue() {
		if !bytes.Contains(doc, []byte("`"+f.Syntax+"`")) {
			t.Errorf("docs/qualsim.md does not document `%s`", f.Syntax)
		}
	}
	var help bytes.Buffer
	qualsim.Main([]string{"qualsim", "--help"}, &help, io.Discard)
	for _, line := range strings.Split(help.String(), "\n") {
		line = strings.TrimSpace(line)
		if name, ok := strings.CutPrefix(line, "--"); ok {
			name, _, _ = strings.Cut(name, " ")
			name, _, _ = strings.Cut(name, ",")
			if name != "help" && name != "version" && !bytes.Contains(doc, []byte("`--"+name)) {
				t.Errorf("docs/qualsim.md does not document --%s", name)
			}
		}
	}
}
