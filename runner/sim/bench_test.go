package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
)

// The benchmarks measure qualsim as a separate process limited to one core (GOMAXPROCS=1): the
// test binary re-executes itself as the server (QUALSIM_BENCH_CHILD=sim) or as the baseline
// (QUALSIM_BENCH_CHILD=baseline), a minimal net/http handler that writes the same bytes qualsim
// would (taken from a qualsim answer) with no decoding, generation, timers or metrics. Each
// benchmark alternates between the two in the same run and reports, for each:
//
//   - <server>-events/s or -requests/s: the rate the benchmark's client achieved (on a small
//     host the client, not the one-core server, is usually the limit);
//   - <server>-events/cpu-s or -requests/cpu-s: events (requests) per CPU second the server
//     process used (utime+stime from /proc), i.e. what it would sustain with its core saturated;
//   - ratio: qualsim's per-CPU-second rate over the baseline's (1 = no overhead of its own).

const (
	benchStreamTokens = 1000 // tokens (= content events) per streamed request
	benchStreams      = 8    // concurrent streams per round
	benchShortTokens  = 16   // max_tokens of a short non-streamed request
	benchWorkers      = 8    // concurrent clients for short requests
	benchShortPerRnd  = 256  // short requests per round
)

// benchChild serves as a benchmark child process when the environment asks for one; it returns
// false otherwise. It prints its address on stdout and exits when stdin closes.
func benchChild() bool {
	mode := os.Getenv("QUALSIM_BENCH_CHILD")
	if mode == "" {
		return false
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	fmt.Println(ln.Addr().String())
	switch mode {
	case "sim":
		cfg := sim.DefaultConfig()
		cfg.Timing = sim.Timing{TokensPerEvent: 1}
		cfg.Slots = 1024
		srv, err := sim.New(cfg)
		if err == nil {
			err = srv.Serve(ctx, ln)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "baseline":
		events, err1 := os.ReadFile(os.Getenv("QUALSIM_BENCH_EVENTS"))
		body, err2 := os.ReadFile(os.Getenv("QUALSIM_BENCH_BODY"))
		if err1 != nil || err2 != nil {
			fmt.Fprintln(os.Stderr, err1, err2)
			os.Exit(1)
		}
		hs := &http.Server{Handler: baselineHandler(splitEvents(events), body)}
		go hs.Serve(ln)
		<-ctx.Done()
		hs.Close()
	}
	os.Exit(0)
	return true
}

// baselineHandler writes the recorded bytes: each SSE event flushed on its own for a streamed
// request, the whole body for another.
func baselineHandler(events [][]byte, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if !bytes.Contains(b, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		rc := http.NewResponseController(w)
		rc.Flush()
		for _, e := range events {
			if _, err := w.Write(e); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})
}

func splitEvents(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.Index(b, []byte("\n\n"))
		if i < 0 {
			break
		}
		out = append(out, b[:i+2])
		b = b[i+2:]
	}
	return out
}

// cpu returns the CPU time the child has used so far (utime+stime of every thread, from
// /proc/PID/stat, in USER_HZ = 100 ticks per second).
func (c *child) cpu(b *testing.B) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[bytes.LastIndexByte(data, ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64) // field 14 of stat(5)
	stime, err2 := strconv.ParseInt(f[12], 10, 64) // field 15
	if err1 != nil || err2 != nil {
		b.Fatalf("parse /proc/%d/stat: %v %v", c.cmd.Process.Pid, err1, err2)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// child is a running benchmark server process.
type child struct {
	url   string
	cmd   *exec.Cmd
	stdin io.Closer
}

func startChild(b *testing.B, mode string, env ...string) *child {
	b.Helper()
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(append(os.Environ(), "GOMAXPROCS=1", "QUALSIM_BENCH_CHILD="+mode), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	c := &child{cmd: cmd, stdin: stdin}
	b.Cleanup(func() {
		c.stdin.Close()
		c.cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		b.Fatalf("%s child: %v", mode, err)
	}
	c.url = "http://" + strings.TrimSpace(line)
	return c
}

type benchClient struct {
	http *http.Client
}

func newBenchClient(b *testing.B) *benchClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	return &benchClient{http: &http.Client{Transport: tr}}
}

// do posts body to url and returns the response body's length.
func (c *benchClient) do(url string, body []byte) (int64, error) {
	resp, err := c.http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != 200 {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return n, err
}

// round runs n requests over workers concurrent clients and returns the elapsed time; every
// answer must be about wantLen bytes.
func (c *benchClient) round(b *testing.B, url string, body []byte, n, workers int, wantLen int64) time.Duration {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	next := make(chan struct{}, n)
	for range n {
		next <- struct{}{}
	}
	close(next)
	began := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				got, err := c.do(url, body)
				// Ids and timestamps vary in width (in every event); anything else is a wrong answer.
				if slack := wantLen/20 + 16; err == nil && (got < wantLen-slack || got > wantLen+slack) {
					err = fmt.Errorf("answer of %d bytes, want about %d", got, wantLen)
				}
				if err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	d := time.Since(began)
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	return d
}

// recordAnswer fetches qualsim's answer to body and writes it to a file for the baseline.
func recordAnswer(b *testing.B, c *benchClient, url string, body []byte) (string, int64) {
	resp, err := c.http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		b.Fatalf("record: %v %d", err, resp.StatusCode)
	}
	path := b.TempDir() + "/answer"
	if err := os.WriteFile(path, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return path, int64(len(data))
}

func benchBodies(b *testing.B) (stream, short []byte) {
	stream, err := json.Marshal(map[string]any{"model": "qualsim-tiny", "prompt": "benchmark the stream", "max_tokens": benchStreamTokens, "stream": true})
	if err != nil {
		b.Fatal(err)
	}
	short, err = json.Marshal(map[string]any{"model": "qualsim-tiny", "prompt": "a short request", "max_tokens": benchShortTokens})
	if err != nil {
		b.Fatal(err)
	}
	return stream, short
}

// startPair starts qualsim and the baseline with qualsim's recorded answers.
func startPair(b *testing.B) (qs, base *child, c *benchClient, streamLen, shortLen int64) {
	streamBody, shortBody := benchBodies(b)
	qs = startChild(b, "sim")
	c = newBenchClient(b)
	events, streamLen := recordAnswer(b, c, qs.url+"/v1/completions", streamBody)
	body, shortLen := recordAnswer(b, c, qs.url+"/v1/completions", shortBody)
	base = startChild(b, "baseline", "QUALSIM_BENCH_EVENTS="+events, "QUALSIM_BENCH_BODY="+body)
	return qs, base, c, streamLen, shortLen
}

// measure alternates rounds against qualsim and the baseline and reports the rates of n units
// (events or requests) per round.
func measure(b *testing.B, unit string, n int, qs, base *child, round func(url string) time.Duration) {
	var wall [2]time.Duration
	servers := [2]*child{qs, base}
	cpu0 := [2]time.Duration{qs.cpu(b), base.cpu(b)}
	rounds := 0
	for b.Loop() {
		for i, s := range servers {
			wall[i] += round(s.url + "/v1/completions")
		}
		rounds++
	}
	total := float64(rounds * n)
	var perCPU [2]float64
	for i, name := range []string{"qualsim", "baseline"} {
		cpu := servers[i].cpu(b) - cpu0[i]
		b.ReportMetric(total/wall[i].Seconds(), name+"-"+unit+"/s")
		if cpu > 0 {
			perCPU[i] = total / cpu.Seconds()
			b.ReportMetric(perCPU[i], name+"-"+unit+"/cpu-s")
		}
	}
	if perCPU[1] > 0 {
		b.ReportMetric(perCPU[0]/perCPU[1], "ratio")
	}
}

// BenchmarkSSEEvents: SSE events that qualsim sends on one core with zero declared latency
// (1000-token streams, one token per event, 8 streams at a time), against the baseline.
func BenchmarkSSEEvents(b *testing.B) {
	qs, base, c, streamLen, _ := startPair(b)
	body, _ := benchBodies(b)
	const eventsPerStream = benchStreamTokens + 2 // content events, finish, [DONE]
	measure(b, "events", benchStreams*eventsPerStream, qs, base, func(url string) time.Duration {
		return c.round(b, url, body, benchStreams, benchStreams, streamLen)
	})
}

// BenchmarkShortRequests: short non-streamed requests (16 tokens) that qualsim answers on one
// core with zero declared latency, 8 clients at a time, against the baseline.
func BenchmarkShortRequests(b *testing.B) {
	qs, base, c, _, shortLen := startPair(b)
	_, body := benchBodies(b)
	measure(b, "requests", benchShortPerRnd, qs, base, func(url string) time.Duration {
		return c.round(b, url, body, benchShortPerRnd, benchWorkers, shortLen)
	})
}
