package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

var arrivalsReport = flag.String("arrivals", "", "run the arrival benchmark (gamma, trace replay, 10,000 requests/s, 4,096 streams) and rewrite the Arrival fidelity section of this file")

// arrivalRun is one open-loop run: each request's send lag (t_send − t_sched, ms) and the achieved
// over the scheduled send rate.
type arrivalRun struct {
	lags     []float64
	achieved float64 // (n−1)/(max t_send − min t_send) over (n−1)/(max t_sched − min t_sched)
	failed   int64
	row      *contract.Row
}

func (a arrivalRun) stats() metric.Summary { return metric.Summarize(a.lags) }

func ratio(sched, send []int64) float64 {
	span := func(xs []int64) float64 { return float64(slices.Max(xs) - slices.Min(xs)) }
	if span(send) == 0 {
		return 0
	}
	return span(sched) / span(send)
}

func servingCase(c int64, n int64, maxTokens int64) contract.Case {
	return contract.Case{Kind: contract.CaseKindServing, ID: "bench", API: contract.ServingCaseAPIChat, Stream: true, Concurrency: []int64{c}, Repetitions: 1,
		MaxTokens: maxTokens, RequestTimeoutSeconds: 120, Sampling: &contract.Sampling{Temperature: 0, IgnoreEOS: true}, SLO: &contract.SLO{}, Requests: &n}
}

var benchPrompts = []load.Prompt{{ID: "bench-hello", Text: "hello there"}, {ID: "bench-count", Text: "count to three"}}

// runQualkit runs one row with package load and reduces it to an arrivalRun.
func runQualkit(t *testing.T, url string, c contract.Case, prompts []load.Prompt) arrivalRun {
	t.Helper()
	plan := load.Plan{CaseID: "bench", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: prompts, Seed: 20261202, Epoch: time.Now()}
	res, err := load.Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	var sched, send []int64
	out := arrivalRun{row: &row.Row, failed: row.Row.Failures}
	for _, r := range row.Records {
		if r.Warmup || r.TSendNs == nil {
			continue
		}
		sched, send = append(sched, r.TSchedNs), append(send, *r.TSendNs)
		out.lags = append(out.lags, float64(*r.TSendNs-r.TSchedNs)/1e6)
	}
	out.achieved = ratio(sched, send)
	return out
}

func runBaseline(url string, offsets []time.Duration, maxTokens, inflight int) arrivalRun {
	sched, send, failed := GoMinimalOpenLoop(url, offsets, maxTokens, inflight)
	out := arrivalRun{failed: failed, achieved: ratio(sched, send)}
	for i := range sched {
		out.lags = append(out.lags, float64(send[i]-sched[i])/1e6)
	}
	return out
}

// runPython runs the asyncio open-loop baseline (testdata/openloop_reader.py) over offsets.
func runPython(t *testing.T, baseURL string, offsets []time.Duration, maxTokens, inflight int) arrivalRun {
	t.Helper()
	u, _ := url.Parse(baseURL)
	var in strings.Builder
	for _, o := range offsets {
		fmt.Fprintln(&in, int64(o))
	}
	cmd := exec.Command("python3", filepath.Join("testdata", "openloop_reader.py"), u.Hostname(), u.Port(), strconv.Itoa(maxTokens), strconv.Itoa(inflight))
	cmd.Stdin, cmd.Stderr = strings.NewReader(in.String()), os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("openloop_reader.py: %v", err)
	}
	var r struct {
		Sched, Send []int64
		Failed      int64
	}
	if err := json.Unmarshal(out, &r); err != nil || len(r.Sched) != len(offsets) || len(r.Send) != len(offsets) {
		t.Fatalf("openloop_reader.py output %.200q: %v", out, err)
	}
	a := arrivalRun{failed: r.Failed, achieved: ratio(r.Sched, r.Send)}
	for i := range r.Sched {
		a.lags = append(a.lags, float64(r.Send[i]-r.Sched[i])/1e6)
	}
	return a
}

// median is the run with the median p99 lag.
func median(rs []arrivalRun) arrivalRun {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b arrivalRun) int {
		x, y := a.stats().P99, b.stats().P99
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return s[len(s)/2]
}

// benchTrace tiles the committed Mooncake sample's inter-arrival gaps to n entries (lengths kept,
// hash ids dropped) and returns its prompts at timeScale.
func benchTrace(t *testing.T, n int, timeScale float64) []load.Prompt {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "workloads", "traces", "mooncake-sample.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := load.ImportMooncake(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	es := make([]load.TraceEntry, n)
	at := int64(0)
	for i := range es {
		e := src[i%len(src)]
		if i > 0 {
			prev := src[(i-1)%len(src)]
			gap := e.TimestampMs - prev.TimestampMs
			if i%len(src) == 0 {
				gap = src[1].TimestampMs - src[0].TimestampMs
			}
			at += gap
		}
		es[i] = load.TraceEntry{TimestampMs: at, InputLength: 8, OutputLength: 4}
	}
	ps, err := load.TracePrompts(es, 0.75, 512, timeScale)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

// TestArrivalFidelity is the arrival benchmark `make bench` runs (skipped without -arrivals):
// gamma arrivals and a replayed trace, qualkit's client against the go-minimal open-loop
// baseline, interleaved; then qualkit alone at 10,000 requests/s open loop and at 4,096 streams.
func TestArrivalFidelity(t *testing.T) {
	if *arrivalsReport == "" {
		t.Skip("benchmark: run with -arrivals docs/performance.md (make bench)")
	}
	bin := buildQualsim(t)
	began := time.Now()
	loadBefore := loadavg()
	const runs, n, rps = 3, 4000, 1000.0
	q := startQualsim(t, bin, false, "--ttft", "1ms", "--token-interval", "1ms")

	// Gamma arrivals, burstiness 0.5 (CV 1.41) at 1,000 requests/s.
	k := 0.5
	gc := servingCase(256, n, 4)
	gc.Rate = &contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: rps, Burstiness: &k}
	var offs []time.Duration
	for _, v := range metric.Arrivals(gc.Rate, n, 20261202, 256, 0) {
		offs = append(offs, time.Duration(v))
	}
	// The replayed trace: the Mooncake sample's gaps tiled to 4,000 entries, scaled to about
	// 1,000 requests/s.
	src := benchTrace(t, n, 1)
	scale := float64(src[len(src)-1].AtNs) / 1e9 / (n / rps)
	trace := benchTrace(t, n, 1/scale)
	var toffs []time.Duration
	for _, p := range trace {
		toffs = append(toffs, time.Duration(p.AtNs))
	}
	tc := servingCase(256, n, 4)
	ts, wpt, block := 1/scale, 0.75, int64(512)
	tc.Corpus = &contract.Corpus{Source: contract.CorpusSourceTrace, TimeScale: &ts, LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt, BlockTokens: &block, Digest: "sha256:" + strings.Repeat("0", 64)}

	var gq, gb, gp, tq, tb, tp []arrivalRun
	for range runs {
		gq = append(gq, runQualkit(t, q.url, gc, benchPrompts))
		gb = append(gb, runBaseline(q.url, offs, 4, 256))
		gp = append(gp, runPython(t, q.url, offs, 4, 256))
		tq = append(tq, runQualkit(t, q.url, tc, trace))
		tb = append(tb, runBaseline(q.url, toffs, 4, 256))
		tp = append(tp, runPython(t, q.url, toffs, 4, 256))
		t.Logf("gamma p99 qualkit %.3f ms go %.3f ms python %.3f ms; trace p99 qualkit %.3f ms go %.3f ms python %.3f ms", gq[len(gq)-1].stats().P99, gb[len(gb)-1].stats().P99, gp[len(gp)-1].stats().P99, tq[len(tq)-1].stats().P99, tb[len(tb)-1].stats().P99, tp[len(tp)-1].stats().P99)
	}

	// 10,000 requests/s open loop (constant), 20,000 requests, at most 4,096 in flight.
	hc := servingCase(4096, 20000, 1)
	hc.Rate = &contract.Rate{Mode: contract.RateModeConstant, RequestsPerSecond: 10000}
	hq := startQualsim(t, bin, false, "--ttft", "0s", "--token-interval", "0s")
	high := runQualkit(t, hq.url, hc, benchPrompts)
	hq.stop()
	t.Logf("10k/s: achieved %.4f, lag p99 %.3f ms, degraded %v %v", high.achieved, high.stats().P99, high.row.Fidelity.Degraded, high.row.Fidelity.Reasons)

	// 4,096 concurrent streams, closed loop: each of 4,096 requests streams 64 tokens 10 ms apart.
	sq := startQualsim(t, bin, false, "--ttft", "20ms", "--token-interval", "10ms")
	streams := runQualkit(t, sq.url, servingCase(4096, 4096, 64), benchPrompts)
	sq.stop()
	t.Logf("4096 streams: peak %v, failures %d", streams.row.Fidelity.InFlightPeak, streams.failed)

	doc := renderArrivals(gq, gb, gp, tq, tb, tp, high, streams, scale, time.Since(began), loadBefore, loadavg())
	if err := writeMarked(*arrivalsReport, arrivalsBegin, arrivalsEnd, doc); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", *arrivalsReport)
}

const (
	arrivalsBegin = "<!-- BEGIN arrival-fidelity: written by `make bench` (runner/bench TestArrivalFidelity); edits are overwritten -->"
	arrivalsEnd   = "<!-- END arrival-fidelity -->"
)

func renderArrivals(gq, gb, gp, tq, tb, tp []arrivalRun, high, streams arrivalRun, scale float64, took time.Duration, loadBefore, loadAfter string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("%s\n## Arrival fidelity\n\n", arrivalsBegin)
	w("Measured by `make bench` (`TestArrivalFidelity`) on %s, in one run of %s (%s). The host is\n", time.Now().UTC().Format("2006-01-02"), took.Round(time.Second), host())
	w("shared and these rows do not wait for it to be quiet: its 1/5/15-minute load average was\n")
	w("%s before the run and %s after (a load far above the core count puts scheduler waits into\n", loadBefore, loadAfter)
	w("every lag below, for both clients alike).\n\n")
	w("Open-loop rows against one qualsim (1 ms TTFT, 1 ms a token, 4 tokens, at most 256 in flight),\n")
	w("4,000 requests a run, three runs per client interleaved; each cell is the run with the median\n")
	w("p99. **Send lag** is t_send − t_sched: qualkit's from its request records (the request's bytes\n")
	w("written), the baseline's just before `http.Client.Do`. **achieved / scheduled** is the span of\n")
	w("the scheduled times over the span of the send times (1 = the schedule's rate was held).\n")
	w("**go-minimal open loop** (`GoMinimalOpenLoop`) is the go-minimal reader's client with one\n")
	w("dispatcher goroutine pacing by `time.Sleep` (Go timers) and a goroutine per request.\n")
	w("**python asyncio open loop** (`testdata/openloop_reader.py`) is the shape of vLLM's `bench serve`\n")
	w("client in the standard library: an asyncio dispatcher sleeping with `asyncio.sleep` until each\n")
	w("arrival, a task per request over pooled keep-alive connections, send stamped with\n")
	w("`time.monotonic_ns()` just before the write.\n\n")
	w("| row | client | requests | lag p50 (ms) | lag p99 (ms) | lag max (ms) | achieved / scheduled | failed |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	line := func(name, client string, a arrivalRun) {
		s := a.stats()
		w("| %s | %s | %d | %.3f | %.3f | %.3f | %.4f | %d |\n", name, client, s.Count, s.P50, s.P99, s.Max, a.achieved, a.failed)
	}
	line("gamma, burstiness 0.5, 1,000/s", "qualkit", median(gq))
	line("gamma, burstiness 0.5, 1,000/s", "go-minimal open loop", median(gb))
	line("gamma, burstiness 0.5, 1,000/s", "python asyncio open loop", median(gp))
	line(fmt.Sprintf("Mooncake sample gaps tiled, time_scale %.4f", 1/scale), "qualkit", median(tq))
	line(fmt.Sprintf("Mooncake sample gaps tiled, time_scale %.4f", 1/scale), "go-minimal open loop", median(tb))
	line(fmt.Sprintf("Mooncake sample gaps tiled, time_scale %.4f", 1/scale), "python asyncio open loop", median(tp))
	hs := high.stats()
	f := high.row.Fidelity
	w("\n**10,000 requests/s open loop** (constant, 20,000 requests of one token, at most 4,096 in\n")
	w("flight, qualsim with no declared delay, one run): achieved / scheduled **%.4f**, send lag p50\n", high.achieved)
	w("%.3f ms, p99 %.3f ms, max %.3f ms, %d failed; the row's fidelity verdict: %s.\n", hs.P50, hs.P99, hs.Max, high.failed, verdictWord(f))
	sf := streams.row.Fidelity
	w("\n**4,096 concurrent streams** (closed loop, 4,096 requests of 64 tokens 10 ms apart after a\n")
	w("20 ms TTFT, one run): in-flight peak **%s**, mean %s, %d failed, schedule lag p99 %.3f ms; the\n", ptrInt(sf.InFlightPeak), ptrFloat(sf.InFlightMean), streams.failed, sf.ScheduleLagP99Ms)
	w("row's fidelity verdict: %s.\n", verdictWord(sf))
	w("\n%s\n", arrivalsEnd)
	return b.String()
}

func verdictWord(f contract.Fidelity) string {
	if !f.Degraded {
		return "faithful"
	}
	return "degraded (" + strings.Join(f.Reasons, "; ") + ")"
}

func ptrInt(p *int64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprint(*p)
}

func ptrFloat(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%.1f", *p)
}

// loadavg is /proc/loadavg's three load averages ("unknown" when unreadable).
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if err != nil || len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " / ")
}

// writeMarked replaces the section between begin and end in path (or appends it).
func writeMarked(path, begin, end, section string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	doc := string(old)
	if i := strings.Index(doc, begin); i >= 0 {
		j := strings.Index(doc[i:], end)
		if j < 0 {
			return fmt.Errorf("%s: %q without %q", path, begin, end)
		}
		doc = doc[:i] + section + doc[i+j+len(end)+1:]
	} else {
		doc = strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return os.WriteFile(path, []byte(doc), 0o644)
}
