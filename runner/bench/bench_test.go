package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/metric"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

var (
	report   = flag.String("report", "", "run the client benchmark and rewrite the Client fidelity section of this file (docs/performance.md)")
	reps     = flag.Int("reps", 5, "runs per reader and concurrency (the table gives the median run)")
	tokens   = flag.Int("tokens", 200, "content events per stream")
	interval = flag.Duration("interval", 5*time.Millisecond, "qualsim token interval")
	only     = flag.String("only", "", "iterate on the stamp-error table alone: comma-separated stream counts (the report is not written)")
)

// Concurrencies and readers of the stamp-error table.
var (
	concurrencies = []int{1, 64, 256}
	readers       = []string{"qualkit", "go-minimal", "python-threads"}
)

func TestMain(m *testing.M) {
	if mode := os.Getenv("QUALKIT_BENCH_CHILD"); mode != "" {
		os.Exit(child(mode))
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// child runs one reader in this process (re-executed by the benchmark) and prints its results.
func child(mode string) int {
	url := os.Getenv("QUALKIT_BENCH_URL")
	n, _ := strconv.Atoi(os.Getenv("QUALKIT_BENCH_N"))
	tok, _ := strconv.Atoi(os.Getenv("QUALKIT_BENCH_TOKENS"))
	enc := json.NewEncoder(os.Stdout)
	var res []StreamResult
	var err error
	switch mode {
	case "qualkit":
		var opts []load.Option
		if r, _ := strconv.Atoi(os.Getenv("QUALKIT_BENCH_REACTORS")); r > 0 {
			opts = append(opts, load.WithReactors(r))
		}
		res, err = QualkitStreams(url, n, tok, opts...)
	case "go-minimal":
		res, err = GoMinimalStreams(url, n, tok)
	case "short":
		d, _ := time.ParseDuration(os.Getenv("QUALKIT_BENCH_DURATION"))
		ok, took, failed, serr := QualkitShort(url, n, d, shortBody)
		if serr != nil {
			fmt.Fprintln(os.Stderr, serr)
			return 1
		}
		enc.Encode(map[string]int64{"ok": ok, "failed": failed, "elapsed_ns": int64(took)})
		return 0
	default:
		err = fmt.Errorf("unknown mode %q", mode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, r := range res {
		enc.Encode(r)
	}
	return 0
}

// shortBody is the short request of the requests/s comparison: one streamed token.
var shortBody = ChatBody(1)

type qualsimProc struct {
	url, gt string
	cmd     *exec.Cmd
	exited  chan struct{}
}

func buildQualsim(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "qualsim")
	cmd := exec.Command("go", "build", "-o", out, "github.com/qualkit/qualkit/tools/cmd/qualsim")
	cmd.Dir = filepath.Join("..", "..")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build qualsim: %v\n%s", err, b)
	}
	return out
}

func startQualsim(t *testing.T, bin string, groundTruth bool, args ...string) *qualsimProc {
	t.Helper()
	dir := t.TempDir()
	p := &qualsimProc{exited: make(chan struct{})}
	argv := []string{"--listen", "127.0.0.1:0", "--addr-file", filepath.Join(dir, "addr"), "--log-level", "error", "--slots", "4096"}
	if groundTruth {
		p.gt = filepath.Join(dir, "gt.jsonl")
		argv = append(argv, "--ground-truth", p.gt)
	}
	p.cmd = exec.Command(bin, append(argv, args...)...)
	p.cmd.Stderr = os.Stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	t.Cleanup(p.stop)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "addr"))
		if err == nil && strings.HasSuffix(string(b), "\n") {
			p.url = "http://" + strings.TrimSpace(string(b))
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("qualsim did not start")
		}
	}
	time.Sleep(50 * time.Millisecond)
	return p
}

// cpu is the CPU time of a qualsim that has exited.
func (p *qualsimProc) cpu() time.Duration {
	<-p.exited
	return cpuTime(p.cmd)
}

func (p *qualsimProc) stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// runReader runs a reader process and returns its streams and the CPU time it used.
func runReader(t *testing.T, reader, baseURL string, n, tok int) ([]StreamResult, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var cmd *exec.Cmd
	switch reader {
	case "python-threads":
		u, _ := url.Parse(baseURL)
		cmd = exec.CommandContext(ctx, "python3", filepath.Join("testdata", "sse_reader.py"), u.Hostname(), u.Port(), strconv.Itoa(n), strconv.Itoa(tok))
	default:
		cmd = exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "QUALKIT_BENCH_CHILD="+reader, "QUALKIT_BENCH_URL="+baseURL,
			"QUALKIT_BENCH_N="+strconv.Itoa(n), "QUALKIT_BENCH_TOKENS="+strconv.Itoa(tok))
	}
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s reader: %v", reader, err)
	}
	var out []StreamResult
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var r StreamResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s reader output %q: %v", reader, sc.Text(), err)
		}
		if r.Err != nil {
			t.Fatalf("%s reader: stream %s failed: %s", reader, r.ID, *r.Err)
		}
		out = append(out, r)
	}
	if len(out) != n {
		t.Fatalf("%s reader: %d streams, want %d", reader, len(out), n)
	}
	return out, cpuTime(cmd)
}

func cpuTime(cmd *exec.Cmd) time.Duration {
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	return 0
}

// sentStamps reads qualsim's ground truth: request id -> SSE event number -> CLOCK_MONOTONIC ns.
func sentStamps(t *testing.T, path string) map[string]map[int]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]map[int]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var g struct {
			ID    string `json:"request_id"`
			Event int    `json:"event"`
			T     int64  `json:"t_mono_ns"`
		}
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		if g.Event == 0 {
			continue
		}
		if out[g.ID] == nil {
			out[g.ID] = map[int]int64{}
		}
		out[g.ID][g.Event] = g.T
	}
	return out
}

// dist is one table cell: the stamp errors of each run of one reader at one concurrency.
type dist struct {
	runs [][]float64 // per run: client stamp - send stamp, µs
	cpu  time.Duration
}

// p99Range is the smallest and largest p99 of the runs.
func (d dist) p99Range() (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range d.runs {
		p := metric.Summarize(r).P99
		lo, hi = min(lo, p), max(hi, p)
	}
	return lo, hi
}

// runsFor is how many runs a concurrency gets: a single stream's 204 events make a run's p99 its
// second or third largest error, so one stream gets three times as many (short) runs.
func runsFor(c int) int {
	if c == 1 {
		return 3 * *reps
	}
	return *reps
}

// summary is the median run's: the median over runs of each statistic (the host is shared, so a
// burst of someone else's load during one run moves that run's tail, not the table).
func (d dist) summary() metric.Summary {
	var p50, p90, p99, mx []float64
	out := metric.Summary{}
	for _, r := range d.runs {
		s := metric.Summarize(r)
		p50, p90, p99, mx = append(p50, s.P50), append(p90, s.P90), append(p99, s.P99), append(mx, s.Max)
		out.Count += s.Count
	}
	med := func(xs []float64) float64 {
		slices.Sort(xs)
		return metric.Percentile(xs, 0.5)
	}
	out.P50, out.P90, out.P99, out.Max = med(p50), med(p90), med(p99), med(mx)
	return out
}

type rate struct {
	events float64
	perSec float64
	cpu    time.Duration
}

// TestClientFidelity is the benchmark `make bench` runs (skipped without -report).
func TestClientFidelity(t *testing.T) {
	if *report == "" {
		t.Skip("benchmark: run with -report docs/performance.md (make bench)")
	}
	for _, tool := range []string{"python3", "wrk"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found (apt-get install -y python3 wrk)", tool)
		}
	}
	bin := buildQualsim(t)
	began := time.Now()
	quiet := &quietness{}
	if *only != "" {
		concurrencies = nil
		for _, f := range strings.Split(*only, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			concurrencies = append(concurrencies, n)
		}
	}

	// 1. Stamp error at 1, 64 and 256 streams, readers interleaved.
	errs := map[int]map[string]*dist{}
	for _, c := range concurrencies {
		errs[c] = map[string]*dist{}
		for _, r := range readers {
			errs[c][r] = &dist{}
		}
		for rep := range runsFor(c) {
			order := slices.Clone(readers)
			for range rep {
				order = append(order[1:], order[0])
			}
			for _, r := range order {
				var res []StreamResult
				var cpu time.Duration
				var q *qualsimProc
				quiet.measure(t, fmt.Sprintf("c=%d %s", c, r), 0, func() time.Duration {
					if q != nil {
						q.stop()
					}
					q = startQualsim(t, bin, true, "--ttft", "5ms", "--token-interval", interval.String())
					res, cpu = runReader(t, r, q.url, c, *tokens)
					q.stop()
					return cpu + q.cpu() // the server was started inside the run: all of its CPU
				})
				sent := sentStamps(t, q.gt)
				d := errs[c][r]
				d.cpu += cpu
				var run []float64
				for _, s := range res {
					byEvent, ok := sent[s.ID]
					if !ok || len(s.Stamps) != len(byEvent) {
						t.Fatalf("%s c=%d: stream %q saw %d events, qualsim sent %d", r, c, s.ID, len(s.Stamps), len(byEvent))
					}
					for k, at := range s.Stamps {
						run = append(run, float64(at-byEvent[k+1])/1e3)
					}
				}
				d.runs = append(d.runs, run)
				rs := metric.Summarize(run)
				t.Logf("c=%d %s rep %d: p50 %.1f µs p99 %.1f µs max %.1f µs", c, r, rep, rs.P50, rs.P99, rs.Max)
			}
		}
	}

	if *only != "" {
		for _, c := range concurrencies {
			for _, r := range readers {
				s := errs[c][r].summary()
				t.Logf("c=%d %-14s p50 %8.1f µs  p90 %8.1f  p99 %8.1f  max %8.1f  cpu %v", c, r, s.P50, s.P90, s.P99, s.Max, errs[c][r].cpu)
			}
		}
		return
	}

	// 2. Events per second with no declared delay: the client and the server share the host.
	const rateStreams, rateTokens, rateRuns = 64, 2000, 3
	rates := map[string]rate{}
	perRun := map[string][]float64{}
	for range rateRuns {
		for _, r := range readers {
			var res []StreamResult
			var cpu time.Duration
			quiet.measure(t, "events/s "+r, 0, func() time.Duration {
				q := startQualsim(t, bin, false, "--ttft", "0s", "--token-interval", "0s")
				res, cpu = runReader(t, r, q.url, rateStreams, rateTokens)
				q.stop()
				return cpu + q.cpu()
			})
			var n float64
			lo, hi := int64(1<<62), int64(0)
			for _, s := range res {
				n += float64(len(s.Stamps))
				lo, hi = min(lo, s.Stamps[0]), max(hi, s.Stamps[len(s.Stamps)-1])
			}
			perRun[r] = append(perRun[r], n/(float64(hi-lo)/1e9))
			x := rates[r]
			x.events += n
			x.cpu += cpu
			rates[r] = x
		}
	}
	for _, r := range readers {
		x := rates[r]
		slices.Sort(perRun[r])
		x.perSec = metric.Percentile(perRun[r], 0.5)
		rates[r] = x
		t.Logf("%s: %.0f events/s (runs %v), %v CPU", r, x.perSec, perRun[r], x.cpu)
	}

	// 3. Short requests per second: qualkit against wrk, alternating, same qualsim, same
	// connections and duration.
	const shortConns, shortFor = 64, 5 * time.Second
	q := startQualsim(t, bin, false, "--ttft", "0s", "--token-interval", "0s")
	script := filepath.Join(t.TempDir(), "post.lua")
	lua := fmt.Sprintf("wrk.method = \"POST\"\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.body = %q\n", shortBody)
	if err := os.WriteFile(script, []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	var wrkRates, qkRates []float64
	for range 3 {
		var w, k float64
		quiet.measure(t, "wrk", q.cmd.Process.Pid, func() (cpu time.Duration) {
			w, cpu = runWrk(t, q.url, script, shortConns, shortFor)
			return cpu
		})
		quiet.measure(t, "short requests", q.cmd.Process.Pid, func() (cpu time.Duration) {
			k, cpu = runShort(t, q.url, shortConns, shortFor)
			return cpu
		})
		wrkRates, qkRates = append(wrkRates, w), append(qkRates, k)
	}
	q.stop()
	slices.Sort(wrkRates)
	slices.Sort(qkRates)
	t.Logf("short requests/s: qualkit %v, wrk %v", qkRates, wrkRates)

	doc := render(errs, rates, rateStreams, rateTokens, qkRates[1], wrkRates[1], shortConns, shortFor, time.Since(began), quiet)
	if err := writeSection(*report, doc); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", *report)
}

var wrkRate = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func runWrk(t *testing.T, baseURL, script string, conns int, d time.Duration) (float64, time.Duration) {
	t.Helper()
	cmd := exec.Command("wrk", "-t2", "-c"+strconv.Itoa(conns), "-d"+d.String(), "-s", script, baseURL+"/v1/chat/completions")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("wrk: %v\n%s", err, out)
	}
	if bytes.Contains(out, []byte("Non-2xx")) || bytes.Contains(out, []byte("Socket errors")) {
		t.Fatalf("wrk saw errors:\n%s", out)
	}
	m := wrkRate.FindSubmatch(out)
	if m == nil {
		t.Fatalf("wrk output:\n%s", out)
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v, cpuTime(cmd)
}

func runShort(t *testing.T, baseURL string, conns int, d time.Duration) (float64, time.Duration) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "QUALKIT_BENCH_CHILD=short", "QUALKIT_BENCH_URL="+baseURL, "QUALKIT_BENCH_N="+strconv.Itoa(conns), "QUALKIT_BENCH_DURATION="+d.String())
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("short: %v", err)
	}
	var r struct {
		OK        int64 `json:"ok"`
		Failed    int64 `json:"failed"`
		ElapsedNs int64 `json:"elapsed_ns"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Failed > 0 {
		t.Fatalf("short: %s (%v)", out, err)
	}
	return float64(r.OK) / (float64(r.ElapsedNs) / 1e9), cpuTime(cmd)
}

func host() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		if m := regexp.MustCompile(`(?m)^model name\s*:\s*(.+)$`).FindSubmatch(b); m != nil {
			model = string(m[1])
		}
	}
	var u unix.Utsname
	kernel := ""
	if unix.Uname(&u) == nil {
		kernel = unix.ByteSliceToString(u.Release[:])
	}
	py, _ := exec.Command("python3", "--version").CombinedOutput()
	wrk, _ := exec.Command("wrk", "-v").CombinedOutput()
	wrkLine, _, _ := strings.Cut(string(wrk), "\n")
	wrkVer := strings.Fields(wrkLine)
	wv := "wrk"
	if len(wrkVer) >= 2 {
		wv = wrkVer[0] + " " + wrkVer[1]
	}
	return fmt.Sprintf("%d × %s, Linux %s, %s, %s, %s", runtime.NumCPU(), model, kernel, runtime.Version(), strings.TrimSpace(string(py)), wv)
}

const (
	beginMarker = "<!-- BEGIN client-fidelity: written by `make bench` (runner/bench); edits are overwritten -->"
	endMarker   = "<!-- END client-fidelity -->"
)

func render(errs map[int]map[string]*dist, rates map[string]rate, rateStreams, rateTokens int, qk, wrk float64, conns int, d, took time.Duration, quiet *quietness) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n## Client fidelity\n\n", beginMarker)
	w("Measured by `make bench` on %s, in one run of %s (%s).\n\n", time.Now().UTC().Format("2006-01-02"), took.Round(time.Second), host())
	w("**Stamp error** is the client's arrival stamp of an SSE event minus the moment qualsim flushed\n")
	w("that event to the socket (its `--ground-truth` log), both CLOCK_MONOTONIC, over every event of\n")
	w("every stream (role prelude, %d content events, finish, usage, `[DONE]`). qualsim sends a token\n", *tokens)
	w("every %v after a 5 ms TTFT. Each cell ran %d times (one stream: %d), readers interleaved, a\n", *interval, *reps, runsFor(1))
	w("fresh qualsim each time; it shows the median over the runs of each statistic, with the range\n")
	w("of the runs' p99, and `events` counts all runs. Server and client share the host's cores, so\n")
	w("the numbers include the wait for a CPU; qualsim stamps after its write returns, so an error can\n")
	w("be negative.\n\n")
	w("Readers: **qualkit** is package `load` (reactor threads blocked in `epoll_wait`, stamp at\n")
	w("`read(2)`, then HTTP, SSE and JSON parsing); **go-minimal** is net/http with one goroutine per\n")
	w("stream and `bufio.Reader.ReadSlice`, stamping each `data:` line, no JSON; **python-threads** is\n")
	w("Python's standard library, one thread per stream, a blocking socket read through a buffered\n")
	w("`readline()`, stamping each `data:` line with `time.monotonic_ns()`\n")
	w("(`runner/bench/testdata/sse_reader.py`). Each reader runs in its own process; CPU is that\n")
	w("process's user + system time.\n\n")
	w("The host is shared, so every run (here and below) measures the CPU the rest of the host used\n")
	w("meanwhile (`/proc/stat` user, system and steal time minus qualsim's, the reader's and the\n")
	w("harness's); a run in which that exceeded %.0f%% of the host was repeated: %d runs were repeated,\n", maxForeign*100, quiet.repeated)
	w("%d kept disturbed after %d attempts.\n\n", quiet.disturbed, maxAttempts)
	w("| streams | reader | events | p50 (ms) | p99 (ms) | p99 of the runs (ms) | max (ms) | reader CPU (s) |\n|---:|---|---:|---:|---:|---|---:|---:|\n")
	for _, c := range concurrencies {
		for _, r := range readers {
			d := errs[c][r]
			s := d.summary()
			lo, hi := d.p99Range()
			w("| %d | %s | %d | %.3f | %.3f | %.3f–%.3f | %.3f | %.2f |\n", c, r, s.Count, s.P50/1e3, s.P99/1e3, lo/1e3, hi/1e3, s.Max/1e3, d.cpu.Seconds())
		}
	}
	w("\nGoals (qualkit at or below the better baseline at every concurrency; at 256 streams, p99 at most\n")
	w("a third of the Python reader's):\n\n")
	w("| streams | qualkit p50 ≤ best baseline p50 | qualkit p99 ≤ best baseline p99 | qualkit p99 ≤ python p99 / 3 |\n|---:|---|---|---|\n")
	for _, c := range concurrencies {
		q, g, p := errs[c]["qualkit"].summary(), errs[c]["go-minimal"].summary(), errs[c]["python-threads"].summary()
		third := "—"
		if c == 256 {
			third = verdict(q.P99 <= p.P99/3, q.P99/1e3, p.P99/3e3)
		}
		w("| %d | %s | %s | %s |\n", c, verdict(q.P50 <= min(g.P50, p.P50), q.P50/1e3, min(g.P50, p.P50)/1e3),
			verdict(q.P99 <= min(g.P99, p.P99), q.P99/1e3, min(g.P99, p.P99)/1e3), third)
	}
	w("\n**SSE events/s sustained**: %d streams of %d one-token events each against qualsim with no\n", rateStreams, rateTokens)
	w("declared delay (`--ttft 0s --token-interval 0s`); events over the span from the first event to\n")
	w("the last, median of three runs per reader, interleaved. The server's share of the cores limits\n")
	w("it as much as the reader, so the reader's CPU per event is the client's own figure:\n\n")
	w("| reader | events/s | reader CPU (s) | reader CPU per event (µs) |\n|---|---:|---:|---:|\n")
	for _, r := range readers {
		x := rates[r]
		w("| %s | %.0f | %.2f | %.2f |\n", r, x.perSec, x.cpu.Seconds(), x.cpu.Seconds()*1e6/x.events)
	}
	w("\n**Short requests/s**: one streamed token per request (`max_tokens` 1, `stream_options.include_usage`),\n")
	w("%d connections for %v against one qualsim with no declared delay, qualkit's client (every event\n", conns, d)
	w("parsed and checked, usage required) and `wrk -t2 -c%d` with the same body, alternating three\n", conns)
	w("times; medians: qualkit **%.0f**/s, wrk **%.0f**/s, ratio **%.2f×** (goal ≥ 0.5×).\n", qk, wrk, qk/wrk)
	w("\n%s\n", endMarker)
	return b.String()
}

func verdict(ok bool, got, bound float64) string {
	mark := "yes"
	if !ok {
		mark = "**no**"
	}
	return fmt.Sprintf("%s (%.3f vs %.3f)", mark, got, bound)
}

// writeSection replaces the client-fidelity section of path (or appends it; the file is created
// with a title when missing), leaving every other section as it is.
func writeSection(path, section string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(path, []byte("# Performance\n\nNumbers measured on a named host by `make bench`; each section says how.\n"), 0o644); err != nil {
			return err
		}
	}
	return writeMarked(path, beginMarker, endMarker, section)
}

func TestWriteSection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "performance.md")
	other := "# Performance\n\n## qualsim\n\nTheirs.\n"
	if err := os.WriteFile(path, []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	sec := func(s string) string { return beginMarker + "\n## Client fidelity\n\n" + s + "\n" + endMarker + "\n" }
	for _, s := range []string{"first", "second"} {
		if err := writeSection(path, sec(s)); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := os.ReadFile(path)
	if want := other + "\n" + sec("second"); string(got) != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Text after the section survives too.
	os.WriteFile(path, append(got, "\n## Later\n"...), 0o644)
	writeSection(path, sec("third"))
	got, _ = os.ReadFile(path)
	if !strings.HasSuffix(string(got), sec("third")+"\n## Later\n") || !strings.HasPrefix(string(got), other) {
		t.Fatalf("got\n%s", got)
	}
}
