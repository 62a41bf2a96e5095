package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

func servingCase(conc []int64, reps, warmups, maxTokens int64) contract.Case {
	seed := int64(1234)
	return contract.Case{
		Kind: "serving", ID: "chat-stream", API: "chat", Stream: true, Concurrency: conc, Repetitions: reps,
		WarmupRequests: warmups, MaxTokens: maxTokens, RequestTimeoutSeconds: 30,
		Sampling: &contract.Sampling{Temperature: 0, Seed: &seed, IgnoreEOS: true},
		SLO:      &contract.SLO{TTFTMs: 500, ICLMs: 100, E2EMs: 5000},
		OutputAssertions: []contract.OutputAssertion{
			{Kind: "finish_reason", Equals: "length"},
			{Kind: "completion_tokens_equal_max_tokens"},
		},
	}
}

func inlinePrompts() []Prompt {
	return []Prompt{
		{ID: "greet-short", Text: "Say hello to a new colleague in one sentence."},
		{ID: "count-to-ten", Text: "Count from one to ten in words."},
		{ID: "explain-tcp", Text: "Explain what a TCP three-way handshake is.", System: "You are a concise technical writer."},
		{ID: "list-colors", Text: "List five colors of the rainbow."},
		{ID: "haiku-server", Text: "Write a haiku about a server that starts on time."},
		{ID: "one-word", Text: "Hi"},
	}
}

// checkRecordDoc validates a record against its contract and semantic rules.
func checkRecordDoc(t *testing.T, r contract.RequestRecordDoc) {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	out, err := schemas.CheckDocument(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range out.Violations {
		t.Errorf("record %d: %v", r.Index, v)
	}
}

func rowSpec(p Plan, row contract.Row) RowSpec {
	sp := make([]contract.Prompt, len(p.Prompts))
	for i, x := range p.Prompts {
		sp[i] = contract.Prompt{ID: x.ID, Text: x.Text, System: x.System}
	}
	h, _ := PromptSetSHA256(sp)
	// The row's fidelity is judged with its recorded send calibration and the case's bound.
	spec := RowSpec{Concurrency: row.Concurrency, Repetition: row.Repetition, Loop: row.Loop, PromptSetSHA256: h,
		Fidelity: p.Case.Fidelity, Calibration: row.Fidelity.Calibration}
	if p.Case.SLO != nil {
		spec.SLO = *p.Case.SLO
	}
	if r := p.Case.Rate; r != nil {
		v := r.RequestsPerSecond
		spec.OfferedRate = &v
	}
	return spec
}

// TestRunClosedLoop runs a case against the real qualsim process and checks every record, the
// determinism of bodies and outputs, that each row's numbers are recomputable from its records,
// and the /metrics deltas against the records' usage.
func TestRunClosedLoop(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "2ms", "--token-interval", "300us", "--slots", "8")
	plan := Plan{CaseID: "chat-stream", Case: servingCase([]int64{1, 4}, 2, 2, 16), BaseURL: q.url, ModelID: "qualsim-tiny",
		Prompts: inlinePrompts(), Seed: 20261130, Epoch: time.Now(), ScrapeMetrics: true}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 4 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	var outputSet *string
	for k, rr := range res.Rows {
		row := rr.Row
		if row.Concurrency != []int64{1, 1, 4, 4}[k] || row.Repetition != int64(k%2) || row.Loop != "closed" {
			t.Fatalf("row %d is c=%d r=%d %s", k, row.Concurrency, row.Repetition, row.Loop)
		}
		if row.Requests != 6 || row.Successes != 6 || len(rr.Records) != 8 {
			t.Fatalf("row %d: %d/%d ok, %d records", k, row.Successes, row.Requests, len(rr.Records))
		}
		for i, r := range rr.Records {
			checkRecordDoc(t, r)
			if r.Index != int64(i) || r.Warmup != (i < 2) || r.CaseID != "chat-stream" || r.Row.Concurrency != row.Concurrency || r.Row.Repetition != row.Repetition {
				t.Fatalf("record %d: index %d warmup %v row %+v", i, r.Index, r.Warmup, r.Row)
			}
			if *r.Seed != 1234+int64(i) || r.Error != nil {
				t.Fatalf("record %d: seed %v error %v", i, *r.Seed, r.Error)
			}
			if r.Warmup {
				if !strings.HasPrefix(r.PromptID, "warmup-") || len(r.Assertions) != 0 {
					t.Fatalf("warmup %d: %s %v", i, r.PromptID, r.Assertions)
				}
				continue
			}
			p := plan.Prompts[i-2]
			body, _ := Body(&plan.Case, plan.ModelID, p, r.Seed)
			if r.PromptID != p.ID || r.BodyDigest != evidence.DigestOf(body) {
				t.Fatalf("record %d: prompt %s digest %s", i, r.PromptID, r.BodyDigest)
			}
			if len(r.Assertions) != 2 || !r.Assertions[0].Passed || !r.Assertions[1].Passed {
				t.Fatalf("record %d assertions %+v", i, r.Assertions)
			}
			if r.Usage.CompletionTokens != 16 || *r.FinishReason != "length" || *r.StatusCode != 200 {
				t.Fatalf("record %d: %+v %v", i, r.Usage, *r.FinishReason)
			}
		}
		// Every number of the row is a pure function of its records (telemetry aside).
		var own []contract.Metric
		for _, m := range row.Metrics {
			if !m.Diagnostic {
				own = append(own, m)
			}
		}
		again := Row(rowSpec(plan, row), rr.Records)
		rowCopy := row
		rowCopy.Metrics = own
		if !reflect.DeepEqual(again, rowCopy) {
			t.Fatalf("row %d does not recompute from its records", k)
		}
		// Same seeds and prompts per index: the same outputs in every row.
		if row.OutputSetSHA256 == nil || (outputSet != nil && *outputSet != *row.OutputSetSHA256) {
			t.Fatalf("row %d output set %v, first %v", k, row.OutputSetSHA256, outputSet)
		}
		outputSet = row.OutputSetSHA256
		// The server generated exactly the measured tokens between the scrapes.
		tel := rr.Telemetry
		if tel == nil || len(tel.Warnings) != 0 {
			t.Fatalf("telemetry %+v", tel)
		}
		var gen float64
		for _, m := range row.Metrics {
			if m.Name == "server.qualsim_generation_tokens_total.delta" {
				gen = m.Value
			}
		}
		if gen != 6*16 {
			t.Fatalf("row %d: server generated %v tokens, records say %d", k, gen, 6*16)
		}
		if k >= 2 && !hasName(row.Metrics, "dispatch_spread_ms") {
			t.Fatalf("row %d lacks dispatch_spread_ms", k)
		}
		t.Logf("c=%d r=%d: ttft p50 %.3f ms, lag p99 %.3f ms, achieved %.1f req/s, degraded %v %q", row.Concurrency, row.Repetition,
			value(row.Metrics, "ttft_ms.p50"), row.Fidelity.ScheduleLagP99Ms, row.Fidelity.AchievedRate, row.Fidelity.Degraded, row.Fidelity.Reasons)
	}
}

func hasName(ms []contract.Metric, name string) bool {
	for _, m := range ms {
		if m.Name == name {
			return true
		}
	}
	return false
}

func value(ms []contract.Metric, name string) float64 {
	for _, m := range ms {
		if m.Name == name {
			return m.Value
		}
	}
	return -1
}

// TestRunOpenLoop: arrivals follow the declared schedule exactly in t_sched; the achieved rate
// tracks the offered one.
func TestRunOpenLoop(t *testing.T) {
	url := startSim(t, fastSim())
	for _, mode := range []string{"constant", "poisson", "gamma"} {
		t.Run(mode, func(t *testing.T) {
			c := servingCase([]int64{4}, 1, 0, 4)
			c.Rate = &contract.Rate{Mode: contract.RateMode(mode), RequestsPerSecond: 200}
			if mode == "gamma" {
				k := 0.5
				c.Rate.Burstiness = &k
			}
			plan := Plan{CaseID: "open", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: SyntheticWords(5, 40, 2, 6), Seed: 9, Epoch: time.Now()}
			res, err := Run(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			row := res.Rows[0]
			if row.Row.Loop != "open" || *row.Row.Fidelity.OfferedRate != 200 || row.Row.Successes != 40 {
				t.Fatalf("%+v", row.Row)
			}
			offsets := arrivals(c.Rate, 40, 9, 4, 0)
			t0 := row.Records[0].TSchedNs
			for i, r := range row.Records {
				if d := r.TSchedNs - t0 - int64(offsets[i]); d < -1 || d > 1 {
					t.Fatalf("arrival %d scheduled at +%d ns, want +%d", i, r.TSchedNs-t0, offsets[i])
				}
				checkRecordDoc(t, r)
			}
			f := row.Row.Fidelity
			if mode == "constant" && (f.AchievedRate < 150 || f.AchievedRate > 250) {
				t.Errorf("achieved %.1f req/s for 200 offered", f.AchievedRate)
			}
			t.Logf("%s: achieved %.1f req/s, lag p50 %.3f p99 %.3f max %.3f ms, degraded %v", mode, f.AchievedRate, f.ScheduleLagP50Ms, f.ScheduleLagP99Ms, f.ScheduleLagMaxMs, f.Degraded)
		})
	}
}

// TestRunCancel: cancelling stops traffic promptly; in-flight requests are recorded as
// cancelled and the partial row is returned with the context's error.
func TestRunCancel(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "1ms", "--token-interval", "50ms", "--slots", "8")
	plan := Plan{CaseID: "cancel", Case: servingCase([]int64{2, 4}, 1, 0, 100), BaseURL: q.url, ModelID: "qualsim-tiny",
		Prompts: SyntheticWords(1, 10, 1, 3), Seed: 1, Epoch: time.Now()}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	res, err := Run(ctx, plan)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	if res == nil || len(res.Rows) != 1 {
		t.Fatalf("rows %v", res)
	}
	row := res.Rows[0]
	if len(row.Records) != 2 || row.Row.Failures != 2 {
		t.Fatalf("%d records, %d failures", len(row.Records), row.Row.Failures)
	}
	for _, r := range row.Records {
		if r.Error == nil || r.Error.Class != ClassCancelled {
			t.Fatalf("record %d: %v", r.Index, r.Error)
		}
		checkRecordDoc(t, r)
	}
}

func TestRunAssertions(t *testing.T) {
	url := startSim(t, fastSim())
	c := servingCase([]int64{2}, 1, 0, 3)
	// qualsim's tokens are five digits and a space: this text never matches, and the regex
	// forbids a pattern only one prompt's output can match.
	wrong := "nope"
	c.OutputAssertions = append(c.OutputAssertions,
		contract.OutputAssertion{Kind: "exact_text", PromptID: "count-to-ten", Text: &wrong},
		contract.OutputAssertion{Kind: "regex", Match: "required", Pattern: `^(\d{5} ){3}$`},
	)
	plan := Plan{CaseID: "asserts", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	if row.Row.Failures != 1 || value(row.Row.Metrics, "request_failures.assertion") != 1 || row.Row.OutputSetSHA256 != nil {
		t.Fatalf("failures %d", row.Row.Failures)
	}
	for _, r := range row.Records {
		checkRecordDoc(t, r)
		if r.PromptID == "count-to-ten" {
			if r.Error == nil || r.Error.Class != ClassAssertion || !strings.Contains(r.Error.Message, "exact_text: text differs at byte 0") || len(r.Assertions) != 4 {
				t.Fatalf("%+v %+v", r.Error, r.Assertions)
			}
			continue
		}
		if r.Error != nil || len(r.Assertions) != 3 {
			t.Fatalf("%s: %+v %d assertions", r.PromptID, r.Error, len(r.Assertions))
		}
	}
}

// TestRunNeverGuesses: a server whose usage is inconsistent fails every request; the row
// reports the failures and no latency or throughput number.
func TestRunNeverGuesses(t *testing.T) {
	cfg := fastSim()
	cfg.Faults.InconsistentUsage = true
	url := startSim(t, cfg)
	plan := Plan{CaseID: "bad-usage", Case: servingCase([]int64{2}, 1, 1, 4), BaseURL: url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0].Row
	if row.Successes != 0 || row.Failures != 6 || value(row.Metrics, "request_failures.inconsistent_usage") != 6 {
		t.Fatalf("%+v", row)
	}
	for _, m := range row.Metrics {
		if strings.HasPrefix(m.Name, "ttft") || strings.HasPrefix(m.Name, "tpot") || strings.HasPrefix(m.Name, "e2e") || strings.HasPrefix(m.Name, "icl") {
			t.Fatalf("%s emitted from failed requests", m.Name)
		}
		if strings.Contains(m.Name, "throughput") && m.Value != 0 {
			t.Fatalf("%s = %v from failed requests", m.Name, m.Value)
		}
	}
	for _, r := range res.Rows[0].Records {
		if r.Usage != nil {
			t.Fatalf("record %d keeps an inconsistent usage %+v", r.Index, r.Usage)
		}
		checkRecordDoc(t, r)
	}
}

func TestRunPlanErrors(t *testing.T) {
	good := Plan{CaseID: "x", Case: servingCase([]int64{1}, 1, 0, 4), BaseURL: "http://127.0.0.1:1", ModelID: "m", Prompts: inlinePrompts(), Epoch: time.Now()}
	mut := []func(*Plan){
		func(p *Plan) { p.Case.Kind = "command" },
		func(p *Plan) { p.Case.Concurrency = nil },
		func(p *Plan) { p.Prompts = nil },
		func(p *Plan) { p.Epoch = time.Time{} },
		func(p *Plan) { p.Epoch = time.Now().Add(time.Hour) },
		func(p *Plan) { p.Epoch = time.Now().Add(-time.Second).Round(0) },
		func(p *Plan) { p.BaseURL = "http://192.0.2.1:80" },
		func(p *Plan) { p.TokenEnv = "QUALKIT_TEST_TOKEN_THAT_IS_UNSET" },
		func(p *Plan) { p.Case.Rate = &contract.Rate{Mode: "burst", RequestsPerSecond: 1} },
		func(p *Plan) {
			p.Case.OutputAssertions = []contract.OutputAssertion{{Kind: "regex", Match: "required", Pattern: "("}}
		},
	}
	for i, m := range mut {
		p := good
		p.Case.Concurrency = append([]int64(nil), good.Case.Concurrency...)
		m(&p)
		if _, err := Run(context.Background(), p); !errors.Is(err, ErrPlan) {
			t.Errorf("mutation %d: %v", i, err)
		}
	}
}

// TestRunTokenEnv: the bearer token comes from the named variable, reaches the server and
// appears in no record.
func TestRunTokenEnv(t *testing.T) {
	const token = "sk-test-5e3b"
	t.Setenv("QUALKIT_TEST_TOKEN", token)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: %s\n\ndata: %s\n\ndata: [DONE]\n\n", evA, `{"choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":1,"total_tokens":5}}`)
	}))
	defer srv.Close()
	c := servingCase([]int64{1}, 1, 0, 1)
	plan := Plan{CaseID: "tok", Case: c, BaseURL: srv.URL, ModelID: "m", Prompts: inlinePrompts()[:2], Epoch: time.Now(), TokenEnv: "QUALKIT_TEST_TOKEN"}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0].Row.Successes != 2 {
		t.Fatalf("%+v", res.Rows[0].Records[0].Error)
	}
	b, _ := json.Marshal(res)
	if strings.Contains(string(b), token) {
		t.Fatal("token recorded")
	}
}
