package load

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TestRunImpossibleResponses: a response no conforming server can send fails the request with a
// named class, with and without declared output assertions (qualsim produces each).
func TestRunImpossibleResponses(t *testing.T) {
	tests := []struct {
		name  string
		fault func(*sim.Faults)
		class contract.ErrorClass
		msg   string
	}{
		{"usage-exceeds-max-tokens", func(f *sim.Faults) { f.UsageExceedsMaxTokens = true }, ClassUsageExceedsMaxTokens, "completion_tokens 4000000 exceeds the request's max_tokens 4"},
		{"content-after-finish", func(f *sim.Faults) { f.ContentAfterFinish = true }, ClassContentAfterFinish, "content after finish_reason \"length\""},
		{"duplicate-finish-reason", func(f *sim.Faults) { f.DuplicateFinishReason = true }, ClassDuplicateFinishReason, "after an earlier event carried \"length\""},
		{"usage-zero-completion", func(f *sim.Faults) { f.UsageZeroCompletion = true }, ClassInconsistentUsage, "usage completion_tokens is 0 but the response carried content"},
		{"usage-absurd-prompt", func(f *sim.Faults) { f.UsageAbsurdPrompt = true }, ClassInconsistentUsage, "usage prompt_tokens 4611686018427387904 exceeds"},
		{"usage-before-content", func(f *sim.Faults) { f.UsageBeforeContent = true }, ClassInconsistentUsage, "precedes content event"},
	}
	for _, tt := range tests {
		for _, asserts := range []bool{false, true} {
			name := tt.name + "/no-assertions"
			if asserts {
				name = tt.name + "/assertions"
			}
			t.Run(name, func(t *testing.T) {
				cfg := fastSim()
				tt.fault(&cfg.Faults)
				url := startSim(t, cfg)
				c := servingCase([]int64{2}, 1, 1, 4)
				if !asserts {
					c.OutputAssertions = nil
				}
				plan := Plan{CaseID: "impossible", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()}
				res, err := Run(context.Background(), plan)
				if err != nil {
					t.Fatal(err)
				}
				row := res.Rows[0]
				if row.Row.Successes != 0 || row.Row.Failures != 6 || value(row.Row.Metrics, "request_failures."+string(tt.class)) != 6 {
					t.Fatalf("successes %d failures %d; metrics %+v", row.Row.Successes, row.Row.Failures, row.Row.Metrics)
				}
				for _, r := range row.Records {
					checkRecordDoc(t, r)
					if r.Error == nil || r.Error.Class != tt.class || !strings.Contains(r.Error.Message, tt.msg) {
						t.Fatalf("record %d (warmup %v): error %+v, want %s containing %q", r.Index, r.Warmup, r.Error, tt.class, tt.msg)
					}
				}
				for _, m := range row.Row.Metrics {
					if strings.Contains(m.Name, "throughput") && m.Value != 0 {
						t.Fatalf("%s = %v from impossible responses", m.Name, m.Value)
					}
				}
			})
		}
	}
}

// TestRunRequestsCycleCorpus: a row's request count is independent of the corpus: three prompts
// at concurrency 4 with requests 10 send ten measured requests cycling the corpus in declared
// order, each record placing itself (corpus_index, cycle); the achieved peak in flight is the
// declared concurrency.
func TestRunRequestsCycleCorpus(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "20ms", "--token-interval", "2ms", "--slots", "16")
	c := servingCase([]int64{4}, 1, 2, 8)
	n := int64(10)
	c.Requests = &n
	prompts := inlinePrompts()[:3]
	plan := Plan{CaseID: "cycled", Case: c, BaseURL: q.url, ModelID: "qualsim-tiny", Prompts: prompts, Seed: 3, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	if row.Row.Requests != 10 || row.Row.Successes != 10 || len(row.Records) != 12 {
		t.Fatalf("%d/%d ok, %d records", row.Row.Successes, row.Row.Requests, len(row.Records))
	}
	for i, r := range row.Records {
		checkRecordDoc(t, r)
		if r.Warmup {
			if r.CorpusIndex != nil || r.Cycle != nil {
				t.Fatalf("warmup %d places itself in the corpus: %v %v", i, *r.CorpusIndex, *r.Cycle)
			}
			continue
		}
		k := int64(i - 2)
		if r.CorpusIndex == nil || *r.CorpusIndex != k%3 || *r.Cycle != k/3 || r.PromptID != prompts[k%3].ID {
			t.Fatalf("measured request %d: prompt %s corpus_index %v cycle %v", k, r.PromptID, r.CorpusIndex, r.Cycle)
		}
	}
	f := row.Row.Fidelity
	if f.InFlightPeak == nil || *f.InFlightPeak != 4 || f.InFlightMean == nil || *f.InFlightMean > 4 || *f.InFlightMean < 2 {
		t.Fatalf("in flight peak %v mean %v, want peak 4", f.InFlightPeak, f.InFlightMean)
	}
	t.Logf("in flight peak %d mean %.3f", *f.InFlightPeak, *f.InFlightMean)
}

// TestRunInFlightReachesConcurrency: on a long enough closed-loop row the achieved in-flight
// count equals the declared concurrency (peak) and stays close to it on average.
func TestRunInFlightReachesConcurrency(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "10ms", "--token-interval", "2ms", "--slots", "16")
	c := servingCase([]int64{8}, 1, 0, 16)
	n := int64(80)
	c.Requests = &n
	plan := Plan{CaseID: "inflight", Case: c, BaseURL: q.url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 3, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Rows[0].Row.Fidelity
	if f.InFlightPeak == nil || *f.InFlightPeak != 8 || f.InFlightMean == nil || *f.InFlightMean < 6 || *f.InFlightMean > 8 {
		t.Fatalf("in flight peak %v mean %v, want 8 and close to 8", f.InFlightPeak, f.InFlightMean)
	}
	t.Logf("in flight peak %d mean %.3f", *f.InFlightPeak, *f.InFlightMean)
}

// TestRunRequestsBelowConcurrency: a row with fewer measured requests than its concurrency can
// never reach it, and Run refuses the plan (the corpus size counts when requests is absent).
func TestRunRequestsBelowConcurrency(t *testing.T) {
	c := servingCase([]int64{1, 8}, 1, 0, 4)
	plan := Plan{CaseID: "small", Case: c, BaseURL: "http://127.0.0.1:1", ModelID: "m", Prompts: inlinePrompts(), Epoch: time.Now()}
	if _, err := Run(context.Background(), plan); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "6 requests per row cannot reach concurrency 8") {
		t.Fatalf("corpus of 6 at concurrency 8: %v", err)
	}
	n := int64(7)
	plan.Case.Requests = &n
	if _, err := Run(context.Background(), plan); !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), "set requests to at least 8") {
		t.Fatalf("requests 7 at concurrency 8: %v", err)
	}
}

// TestRunOpenLoopOverCapacity: an open-loop row offered far more than the server sustains
// (every slot busy, arrivals queue behind the cap) is degraded, with the achieved rate and the
// reason recorded.
func TestRunOpenLoopOverCapacity(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "20ms", "--token-interval", "5ms", "--slots", "2")
	c := servingCase([]int64{2}, 1, 0, 8)
	c.Rate = &contract.Rate{Mode: "constant", RequestsPerSecond: 2000}
	n := int64(16)
	c.Requests = &n
	plan := Plan{CaseID: "over", Case: c, BaseURL: q.url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 3, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Rows[0].Row.Fidelity
	if !f.Degraded || f.OfferedRate == nil || *f.OfferedRate != 2000 || f.AchievedRate <= 0 || f.AchievedRate > 200 {
		t.Fatalf("fidelity %+v: want degraded, offered 2000, achieved well below", f)
	}
	if !strings.Contains(strings.Join(f.Reasons, "; "), "did not sustain its offered load") {
		t.Fatalf("reasons %q", f.Reasons)
	}
	if *f.InFlightPeak != 2 {
		t.Fatalf("in flight peak %d, want the cap 2", *f.InFlightPeak)
	}
	t.Logf("achieved %.1f/s, lag p99 %.1f ms, reasons %q", f.AchievedRate, f.ScheduleLagP99Ms, f.Reasons)
}

// TestRunSeededPromptOrder: with prompt_order seeded, each cycle of a row's measured requests asks
// every prompt once in metric.CorpusOrder's permutation (not the declared order), each record
// says which (corpus_index, cycle, prompt_id), and both rows ask the same sequence.
func TestRunSeededPromptOrder(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "5ms", "--token-interval", "1ms", "--slots", "16")
	c := servingCase([]int64{2, 4}, 1, 1, 4)
	n := int64(14)
	c.Requests = &n
	c.PromptOrder = contract.ServingCasePromptOrderSeeded
	prompts := inlinePrompts()
	plan := Plan{CaseID: "seeded-order", Case: c, BaseURL: q.url, ModelID: "qualsim-tiny", Prompts: prompts, Seed: 11, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	want := metric.CorpusOrder(contract.ServingCasePromptOrderSeeded, 11, int64(len(prompts)), n)
	if slices.Equal(want, metric.CorpusOrder(contract.ServingCasePromptOrderSequential, 11, int64(len(prompts)), n)) {
		t.Fatal("seed 11 draws the declared order: pick another seed")
	}
	for _, row := range res.Rows {
		var got []int64
		for _, r := range row.Records {
			checkRecordDoc(t, r)
			if r.Warmup {
				continue
			}
			k := int64(len(got))
			if r.CorpusIndex == nil || r.Cycle == nil || *r.Cycle != k/int64(len(prompts)) || r.PromptID != prompts[*r.CorpusIndex].ID {
				t.Fatalf("row c%d request %d: prompt %s corpus_index %v cycle %v", row.Row.Concurrency, k, r.PromptID, r.CorpusIndex, r.Cycle)
			}
			got = append(got, *r.CorpusIndex)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("row c%d asks %v, want %v", row.Row.Concurrency, got, want)
		}
	}
}
