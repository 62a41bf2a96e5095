package load

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

func msNs(v float64) int64 { return int64(math.Round(v * 1e6)) }

func p64(v int64) *int64 { return &v }

type ev struct {
	at   float64 // ms
	kind string
}

// rec builds a record; times in ms, nil-able ones negative when absent.
func rec(index int64, warmup bool, sched, send, hdr, end, cls float64, evs []ev, n, p int64, errClass string) contract.RequestRecordDoc {
	r := contract.RequestRecordDoc{Schema: "qualkit.request-record.v1", Index: index, Warmup: warmup, TSchedNs: msNs(sched), Events: []contract.Event{}, Assertions: []contract.AssertionOutcome{}}
	opt := func(v float64) *int64 {
		if v < 0 {
			return nil
		}
		return p64(msNs(v))
	}
	r.TSendNs, r.THdrNs, r.TEndNs, r.TCloseNs = opt(send), opt(hdr), opt(end), opt(cls)
	for _, e := range evs {
		r.Events = append(r.Events, contract.Event{TNs: msNs(e.at), Kind: contract.EventKind(e.kind), Bytes: 100})
	}
	if errClass != "" {
		r.Error = &contract.RequestError{Class: contract.ErrorClass(errClass), Message: "x"}
	} else {
		r.Usage = &contract.Usage{PromptTokens: p, CompletionTokens: n, TotalTokens: p + n}
		d := "sha256:" + strings.Repeat(string(rune('a'+index)), 64)
		r.OutputDigest = &d
	}
	return r
}

// handRecords is the hand-computed row of the tests (all times in ms):
//
//	warmup  index 0: ignored
//	R0 index 1: sched 0, send 1, hdr 2, content at 10, 14 (two tokens in one event), 20; N=4 P=5
//	R1 index 2: sched 0, send 2, hdr 3, content at 12; N=1 (TPOT undefined) P=3
//	R2 index 3: sched 20, send 20.5, HTTP 500 (a failure: no latency, but counted)
//	R3 index 4: sched 21, send 21.2, hdr 22, content at 30, 31, 35; N=3 P=2
func handRecords() []contract.RequestRecordDoc {
	return []contract.RequestRecordDoc{
		rec(3, false, 20, 20.5, -1, -1, 21, nil, 0, 0, "http_status"),
		rec(0, true, 0, 0.1, 0.2, 0.5, 0.6, []ev{{0.5, "content"}}, 1, 1, ""),
		rec(1, false, 0, 1, 2, 20, 21, []ev{{2, "other"}, {10, "content"}, {14, "content"}, {20, "content"}, {20, "other"}, {20, "usage"}, {20, "done"}}, 4, 5, ""),
		rec(2, false, 0, 2, 3, 12, 13, []ev{{12, "content"}, {12, "usage"}, {12, "done"}}, 1, 3, ""),
		rec(4, false, 21, 21.2, 22, 35, 35.5, []ev{{30, "content"}, {31, "content"}, {35, "content"}, {35, "usage"}, {35, "done"}}, 3, 2, ""),
	}
}

func rowMetric(t *testing.T, row contract.Row, name string) contract.Metric {
	t.Helper()
	for _, m := range row.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("no metric %s", name)
	return contract.Metric{}
}

func hasMetric(row contract.Row, name string) bool {
	for _, m := range row.Metrics {
		if m.Name == name {
			return true
		}
	}
	return false
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestRowHandComputed(t *testing.T) {
	row := Row(RowSpec{Concurrency: 2, Repetition: 1, Loop: "closed", SLO: contract.SLO{TTFTMs: 9.5}, PromptSetSHA256: "sha256:p"}, handRecords())
	if row.Requests != 4 || row.Successes != 3 || row.Failures != 1 || row.Concurrency != 2 || row.Repetition != 1 || row.Loop != "closed" {
		t.Fatalf("counts %+v", row)
	}
	if !near(row.WindowSeconds, 0.034) || row.OutputSetSHA256 != nil || row.PromptSetSHA256 != "sha256:p" {
		t.Fatalf("window %v output set %v", row.WindowSeconds, row.OutputSetSHA256)
	}
	W := 0.034
	want := []struct {
		name    string
		v       float64
		unit    string
		agg     string
		formula string
		samples int64
	}{
		// TTFT = c_f - t_send: 9, 10, 8.8 -> sorted 8.8, 9, 10.
		{"ttft_ms.p50", 9, "ms", "p50", "ttft.v1", 3},
		{"ttft_ms.p90", 9.8, "ms", "p90", "ttft.v1", 3},
		{"ttft_ms.p99", 9.98, "ms", "p99", "ttft.v1", 3},
		{"ttft_ms.min", 8.8, "ms", "min", "ttft.v1", 3},
		{"ttft_ms.max", 10, "ms", "max", "ttft.v1", 3},
		{"ttft_ms.mean", 27.8 / 3, "ms", "mean", "ttft.v1", 3},
		// TTFT_sched = c_f - t_sched: 10, 12, 9.
		{"ttft_sched_ms.p50", 10, "ms", "p50", "ttft_sched.v1", 3},
		// TTFB = t_hdr - t_send: 1, 1, 0.8.
		{"ttfb_ms.min", 0.8, "ms", "min", "ttfb.v1", 3},
		{"ttfb_ms.p50", 1, "ms", "p50", "ttfb.v1", 3},
		// E2E = t_end - t_send: 19, 10, 13.8; E2E_sched: 20, 12, 14.
		{"e2e_ms.p50", 13.8, "ms", "p50", "e2e.v1", 3},
		{"e2e_ms.max", 19, "ms", "max", "e2e.v1", 3},
		{"e2e_sched_ms.p50", 14, "ms", "p50", "e2e_sched.v1", 3},
		// TPOT = (t_end - c_f)/(N-1): R0 10/3, R3 5/2; R1 has N=1 and no TPOT.
		{"tpot_ms.p50", (10.0/3 + 2.5) / 2, "ms", "p50", "tpot.v1", 2},
		{"tpot_ms.max", 10.0 / 3, "ms", "max", "tpot.v1", 2},
		// Decode rate = (N-1)/(t_end - c_f): 3/0.010 = 300, 2/0.005 = 400 tokens/s.
		{"decode_rate.p50", 350, "tokens/s", "p50", "decode_rate.v1", 2},
		{"decode_rate.min", 300, "tokens/s", "min", "decode_rate.v1", 2},
		// ICL, pooled gaps between content events: 4, 6 and 1, 4.
		{"icl_ms.p50", 4, "ms", "p50", "icl.v1", 4},
		{"icl_ms.p99", 4 + 0.97*2, "ms", "p99", "icl.v1", 4},
		{"icl_ms.mean", 3.75, "ms", "mean", "icl.v1", 4},
		{"icl_max_ms.p50", 5, "ms", "p50", "icl_max.v1", 2},
		// Chunking factor = N / content events: 4/3, 1, 1.
		{"chunking_factor.mean", (4.0/3 + 2) / 3, "tokens/event", "mean", "chunking_factor.v1", 3},
		{"request_failures", 1, "requests", "count", "request_failures.v1", 4},
		{"request_failures.http_status", 1, "requests", "count", "request_failures_by_class.v1", 4},
		{"output_tokens.sum", 8, "tokens", "sum", "output_tokens.v1", 3},
		{"prompt_tokens.sum", 10, "tokens", "sum", "prompt_tokens.v1", 3},
		{"window_s", W, "s", "exact", "request_window.v1", 4},
		{"request_throughput", 3 / W, "requests/s", "rate", "request_throughput.v1", 3},
		{"output_throughput_window", 8 / W, "tokens/s", "rate", "output_throughput_window.v1", 3},
		{"total_throughput_window", 18 / W, "tokens/s", "rate", "total_throughput_window.v1", 3},
		// TTFT_sched <= 9.5 ms: only R3 (9 ms); the failure stays in the denominator.
		{"slo_goodput", 1 / W, "requests/s", "rate", "slo_goodput.v1", 4},
		{"slo_goodput_tokens", 3 / W, "tokens/s", "rate", "slo_goodput_tokens.v1", 4},
		{"slo_good_fraction", 0.25, "fraction", "mean", "slo_good_fraction.v1", 4},
		// Schedule lag = t_send - t_sched: 1, 2, 0.5, 0.2 (the failure too).
		{"schedule_lag_ms.p50", 0.75, "ms", "p50", "schedule_lag.v1", 4},
		{"schedule_lag_ms.p99", 1.97, "ms", "p99", "schedule_lag.v1", 4},
		{"schedule_lag_ms.max", 2, "ms", "max", "schedule_lag.v1", 4},
		// Dispatch spread over the first two (the barrier's) requests: sends at 1 and 2.
		{"dispatch_spread_ms", 1, "ms", "exact", "dispatch_spread.v1", 2},
		// Achieved rate = (4-1) / (21.2 - 1) ms.
		{"achieved_rate", 3 / 0.0202, "requests/s", "rate", "achieved_rate.v1", 4},
	}
	for _, w := range want {
		m := rowMetric(t, row, w.name)
		if !near(m.Value, w.v) || m.Unit != w.unit || string(m.Aggregation) != w.agg || m.Formula != w.formula || m.Samples == nil || *m.Samples != w.samples {
			t.Errorf("%s = %v %s %s %s samples %v; want %v %s %s %s samples %d", w.name, m.Value, m.Unit, m.Aggregation, m.Formula, *m.Samples, w.v, w.unit, w.agg, w.formula, w.samples)
		}
	}
	if hasMetric(row, "ttft_ms.p99.9") {
		t.Error("p99.9 emitted with 3 samples")
	}
	seen := map[string]bool{}
	for _, m := range row.Metrics {
		if seen[m.Name] {
			t.Errorf("metric %s repeats", m.Name)
		}
		seen[m.Name] = true
		if m.Direction == "" || m.Formula == "" {
			t.Errorf("%s lacks direction or formula", m.Name)
		}
	}
	// Fidelity: lag p50 0.75, p99 1.97; judged: of 4 lags the largest, 2 ms, is the 95 % lower
	// bound of the p99 (0.99^4 >= 0.95) and exceeds 1 ms -> degraded (closed loop: all lag is the
	// client's).
	f := row.Fidelity
	if !near(f.ScheduleLagP50Ms, 0.75) || !near(f.ScheduleLagP99Ms, 1.97) || !near(f.ScheduleLagMaxMs, 2) || f.OfferedRate != nil || !near(f.AchievedRate, 3/0.0202) {
		t.Fatalf("fidelity %+v", f)
	}
	if !f.Degraded || len(f.Reasons) != 1 || !strings.Contains(f.Reasons[0], "2.000 ms, the largest of 4 lags") || !strings.Contains(f.Reasons[0], "exceeds the bound 1.000 ms") {
		t.Fatalf("degraded %v %q", f.Degraded, f.Reasons)
	}
}

func TestRowSLOGates(t *testing.T) {
	tests := []struct {
		slo  contract.SLO
		good float64
	}{
		{contract.SLO{}, 3},                      // no gate: every success
		{contract.SLO{ICLMs: 5}, 2},              // R0's 6 ms gap fails; R1 (one event) passes vacuously
		{contract.SLO{E2EMs: 13}, 1},             // E2E_sched 20, 12, 14
		{contract.SLO{TTFTMs: 12, ICLMs: 5}, 2},  // TTFT_sched 10, 12, 9 all pass; ICL drops R0
		{contract.SLO{TTFTMs: 8, E2EMs: 100}, 0}, // nobody under 8 ms
	}
	for _, tt := range tests {
		row := Row(RowSpec{Concurrency: 2, Loop: "closed", SLO: tt.slo}, handRecords())
		if v := rowMetric(t, row, "slo_good_fraction").Value; !near(v, tt.good/4) {
			t.Errorf("%+v: good fraction %v, want %v", tt.slo, v, tt.good/4)
		}
		if v := rowMetric(t, row, "slo_goodput").Value; !near(v, tt.good/0.034) {
			t.Errorf("%+v: goodput %v, want %v", tt.slo, v, tt.good/0.034)
		}
	}
}

// TestRowSingleToken: a row of one-token responses has no TPOT, decode rate or ICL, and the
// other metrics are still there.
func TestRowSingleToken(t *testing.T) {
	recs := []contract.RequestRecordDoc{
		rec(0, false, 0, 0.5, 1, 5, 6, []ev{{5, "content"}, {5, "usage"}, {5, "done"}}, 1, 2, ""),
	}
	row := Row(RowSpec{Concurrency: 1, Loop: "closed"}, recs)
	for _, name := range []string{"tpot_ms.p50", "decode_rate.p50", "icl_ms.p50", "icl_max_ms.p50"} {
		if hasMetric(row, name) {
			t.Errorf("%s emitted for a one-token response", name)
		}
	}
	if v := rowMetric(t, row, "ttft_ms.p50").Value; !near(v, 4.5) {
		t.Errorf("ttft %v", v)
	}
	if v := rowMetric(t, row, "e2e_ms.p50").Value; !near(v, 4.5) {
		t.Errorf("e2e %v", v)
	}
	if hasMetric(row, "achieved_rate") {
		t.Error("achieved_rate from one send")
	}
	if row.OutputSetSHA256 == nil {
		t.Error("output set hash missing with every request successful")
	}
	if row.Fidelity.Degraded || row.Fidelity.AchievedRate != 0 {
		t.Errorf("fidelity %+v", row.Fidelity)
	}
}

// TestRowAllFailed: no success means no latency metric, no window and no output set hash; the
// failures are still counted.
func TestRowAllFailed(t *testing.T) {
	recs := []contract.RequestRecordDoc{
		rec(0, false, 0, 0.1, -1, -1, 1, nil, 0, 0, "connection"),
		rec(1, false, 0, -1, -1, -1, -1, nil, 0, 0, "connection"),
	}
	row := Row(RowSpec{Concurrency: 2, Loop: "closed"}, recs)
	if row.Requests != 2 || row.Failures != 2 || row.WindowSeconds != 0 || row.OutputSetSHA256 != nil {
		t.Fatalf("%+v", row)
	}
	for _, m := range row.Metrics {
		if strings.HasPrefix(m.Name, "ttft") || m.Name == "request_throughput" || m.Name == "window_s" {
			t.Errorf("%s emitted", m.Name)
		}
	}
	if v := rowMetric(t, row, "request_failures.connection").Value; v != 2 {
		t.Errorf("failures %v", v)
	}
	if v := rowMetric(t, row, "slo_good_fraction").Value; v != 0 {
		t.Errorf("good fraction %v", v)
	}
}

// TestRowOpenLoopCap: in open loop, an arrival that found every slot busy waited for the server;
// its lag is reported but does not make the client degraded.
func TestRowOpenLoopCap(t *testing.T) {
	recs := []contract.RequestRecordDoc{
		rec(0, false, 0, 0.1, 0.2, 9, 10, []ev{{5, "content"}, {9, "content"}}, 2, 1, ""),
		rec(1, false, 5, 10.05, 10.1, 19, 20, []ev{{15, "content"}, {19, "content"}}, 2, 1, ""), // waited for slot 1
		rec(2, false, 30, 30.1, 30.2, 39, 40, []ev{{35, "content"}, {39, "content"}}, 2, 1, ""),
	}
	rate := 20.0
	row := Row(RowSpec{Concurrency: 1, Loop: "open", OfferedRate: &rate}, recs)
	f := row.Fidelity
	if f.Degraded || *f.OfferedRate != 20 || !near(f.ScheduleLagMaxMs, 5.05) {
		t.Fatalf("cap 1: %+v", f)
	}
	if hasMetric(row, "dispatch_spread_ms") {
		t.Error("dispatch spread in open loop")
	}
	// With two slots the same wait was the client's own.
	row = Row(RowSpec{Concurrency: 2, Loop: "open", OfferedRate: &rate}, recs)
	if !row.Fidelity.Degraded || !strings.Contains(row.Fidelity.Reasons[0], "found a free slot") {
		t.Fatalf("cap 2: %+v", row.Fidelity)
	}
}

func TestOutputAndPromptSetHashes(t *testing.T) {
	recs := []contract.RequestRecordDoc{
		rec(1, false, 0, 1, 2, 3, 4, []ev{{3, "content"}}, 1, 1, ""),
		rec(0, false, 0, 1, 2, 3, 4, []ev{{3, "content"}}, 1, 1, ""),
		rec(0, true, 0, 1, 2, 3, 4, []ev{{3, "content"}}, 1, 1, ""),
	}
	a, b := strings.Repeat("a", 64), strings.Repeat("b", 64)
	sum := sha256.Sum256([]byte(`["sha256:` + a + `","sha256:` + b + `"]`))
	want := "sha256:" + hex.EncodeToString(sum[:])
	if got := OutputSetSHA256(recs); got == nil || *got != want {
		t.Fatalf("output set %v, want %s", got, want)
	}
	got, err := PromptSetSHA256([]contract.Prompt{{ID: "p-1", Text: "x"}, {ID: "p-2", Text: "y", System: "s"}})
	sum = sha256.Sum256([]byte(`[{"id":"p-1","text":"x"},{"id":"p-2","system":"s","text":"y"}]`))
	if err != nil || got != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Fatalf("prompt set %s %v", got, err)
	}
	if _, err := PromptSetSHA256([]contract.Prompt{{ID: "p", Text: "\xff"}}); err == nil {
		t.Fatal("invalid UTF-8 hashed")
	}
}

func TestRowValidatesAsCaseResult(t *testing.T) {
	row := Row(RowSpec{Concurrency: 2, Repetition: 0, Loop: "closed", SLO: contract.SLO{TTFTMs: 9.5},
		PromptSetSHA256: "sha256:" + strings.Repeat("0", 64)}, handRecords())
	row.Records = contract.FileRef{Path: "rows/c0002-r000.jsonl", Digest: "sha256:" + strings.Repeat("1", 64)}
	doc := contract.CaseResultDoc{Schema: "qualkit.case-result.v1", CaseID: "chat-stream", Status: "failed", EffectiveConfig: contract.Config{},
		Metrics: metric.CaseMetrics([]contract.Row{row}), Tolerances: []contract.Tolerance{}, Rows: []contract.Row{row}}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	out, err := schemas.CheckDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Violations {
		t.Error(v)
	}
}
