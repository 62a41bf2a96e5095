package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestCheckStages: a scheduled row whose records follow the schedule recomputed from the seed,
// and whose stages and series are those of its records, passes; a moved t_sched, an edited
// stage count or achieved rate, an edited series bin, a missing series, a wrong offered rate and
// stages in a case without a schedule are each found.
func TestCheckStages(t *testing.T) {
	const seed = 3
	from, to := 20.0, 60.0
	sc := &contract.Schedule{Arrival: contract.ScheduleArrivalPoisson, Stages: []contract.Stage{
		{Kind: contract.StageKindHold, RequestsPerSecond: 20, Seconds: 1},
		{Kind: contract.StageKindRamp, RateFrom: &from, RateTo: &to, Seconds: 2},
	}}
	wc := &contract.Case{Kind: contract.CaseKindServing, Schedule: sc, SLO: &contract.SLO{}}
	offs, stages, err := metric.ScheduleArrivals(sc, seed, 4, 0, metric.MaxScheduleArrivals)
	if err != nil {
		t.Fatal(err)
	}
	const origin = int64(5e9)
	build := func() ([]*record.Record, contract.Row) {
		recs := []*record.Record{{Index: 0, Warmup: true, Sched: 1e9, Send: 1e9, HasSend: true}}
		reqs := make([]metric.Request, len(offs))
		stageOf := make([]int, len(offs))
		for k, o := range offs {
			s := origin + o
			r := &record.Record{Line: k + 1, Index: int64(k + 1), Sched: s, Send: s + 50e3, HasSend: true, End: s + 30e6, HasEnd: true, Close: s + 31e6, HasClose: true,
				Content: []int64{s + 10e6, s + 30e6}, HasUsage: true, CompletionTokens: 2, PromptTokens: 5}
			if k%7 == 3 {
				r.End, r.HasEnd, r.Content, r.HasUsage, r.Failed, r.ErrClass = 0, false, nil, false, true, "http_status"
			}
			recs = append(recs, r)
			reqs[k], stageOf[k] = r.Request(), stages[k]
		}
		offered := metric.ExpectedArrivals(sc) / metric.Horizon(sc)
		row := contract.Row{Concurrency: 4, Loop: contract.RowLoopOpen, Fidelity: contract.Fidelity{OfferedRate: &offered}}
		spec := metric.RowSpec{Concurrency: 4, Loop: contract.RowLoopOpen, OfferedRate: &offered, SLO: &metric.SLO{}}
		row.Stages = metric.RowStages(sc, spec, stages, reqs, stageOf, origin)
		series, _ := metric.Series(reqs, origin, 3e9)
		row.Series = &series
		return recs, row
	}
	cases := []struct {
		name   string
		wc     *contract.Case
		tamper func([]*record.Record, *contract.Row)
		want   string
	}{
		{"honest", wc, func([]*record.Record, *contract.Row) {}, ""},
		{"moved t_sched", wc, func(r []*record.Record, _ *contract.Row) { r[5].Sched += 2e6 }, "did not run its declared stages"},
		{"stage count", wc, func(_ []*record.Record, row *contract.Row) { row.Stages[1].Scheduled++ }, "stage 1:"},
		{"stage achieved", wc, func(_ []*record.Record, row *contract.Row) { row.Stages[0].AchievedRate *= 1.1 }, "achieved_rate"},
		{"stage metric", wc, func(_ []*record.Record, row *contract.Row) { row.Stages[0].Metrics[0].Value *= 1.1 }, "recomputed"},
		{"series bin", wc, func(_ []*record.Record, row *contract.Row) { row.Series.Bins[2].Sent-- }, "second 2:"},
		{"series in flight", wc, func(_ []*record.Record, row *contract.Row) { row.Series.Bins[1].InFlightMean *= 1.2 }, "second 1:"},
		{"series missing", wc, func(_ []*record.Record, row *contract.Row) { row.Series = nil }, "no per-second series"},
		{"offered rate", wc, func(_ []*record.Record, row *contract.Row) { v := 99.0; row.Fidelity.OfferedRate = &v }, "the schedule's mean"},
		{"no schedule declared", &contract.Case{Kind: contract.CaseKindServing}, func([]*record.Record, *contract.Row) {}, "declares no schedule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, row := build()
			tc.tamper(recs, &row)
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.Stages(c, "cr.json", 0, row, tc.wc, seed, recs, Tolerance{Absolute: 1e-9, Relative: 1e-9})
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if (errors.Is(f, ErrRowMismatch) || errors.Is(f, ErrLoadNotReached) || errors.Is(f, ErrMetricMismatch)) && strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
}

// TestCheckTraceSchedule: a trace row whose records are scheduled at the trace's scaled offsets
// passes; a moved t_sched, a request beyond the trace and a success with more completion tokens
// than its entry's output_length are found.
func TestCheckTraceSchedule(t *testing.T) {
	entries := []trace.Entry{{TimestampMs: 10, InputLength: 5, OutputLength: 3}, {TimestampMs: 30, InputLength: 5, OutputLength: 2}, {TimestampMs: 31, InputLength: 5, OutputLength: 4}}
	offs, err := trace.Offsets(entries, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	build := func() []*record.Record {
		var out []*record.Record
		for k, o := range offs {
			out = append(out, &record.Record{Line: k + 1, Index: int64(k + 1), Sched: 7e9 + o, HasUsage: true, CompletionTokens: entries[k].OutputLength, Client: contract.ClientTokens{PromptTokens: entries[k].InputLength}, HasClient: true})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		tamper func([]*record.Record) []*record.Record
		want   string
		exact  bool
	}{
		{"honest", func(r []*record.Record) []*record.Record { return r }, "", false},
		{"honest in tokens", func(r []*record.Record) []*record.Record { return r }, "", true},
		{"prompt tokens", func(r []*record.Record) []*record.Record { r[1].Client.PromptTokens = 6; return r }, "input_length is 5", true},
		{"prompt tokens in words", func(r []*record.Record) []*record.Record { r[1].Client.PromptTokens = 6; return r }, "", false},
		{"moved", func(r []*record.Record) []*record.Record { r[2].Sched += 1e6; return r }, "did not replay its trace's timestamps", false},
		{"beyond", func(r []*record.Record) []*record.Record {
			return append(r, &record.Record{Line: 9, Index: 4, Sched: 8e9})
		}, "not an entry of its trace", false},
		{"tokens", func(r []*record.Record) []*record.Record { r[1].CompletionTokens = 3; return r }, "output_length is 2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.TraceSchedule(c, contract.Row{Concurrency: 4}, entries, offs, tc.tamper(build()), 1, tc.exact)
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
}

// TestCheckClosedStages: a closed schedule's row whose stages and series are its records' passes;
// an edited stage count, a request taken past the horizon, an open-loop row and a recorded
// offered rate are found.
func TestCheckClosedStages(t *testing.T) {
	sc := &contract.Schedule{Arrival: contract.ScheduleArrivalClosed, Stages: []contract.Stage{
		{Kind: contract.StageKindWorkers, Concurrency: 2, Seconds: 1}, {Kind: contract.StageKindWorkers, Concurrency: 4, Seconds: 1}}}
	n := int64(100)
	wc := &contract.Case{Kind: contract.CaseKindServing, Schedule: sc, Requests: &n, SLO: &contract.SLO{}}
	build := func() ([]*record.Record, contract.Row) {
		var recs []*record.Record
		for k := range 30 {
			s := int64(3e9) + int64(k)*60e6
			recs = append(recs, &record.Record{Line: k, Index: int64(k), Sched: s, Send: s + 1e5, HasSend: true, End: s + 40e6, HasEnd: true, Close: s + 41e6, HasClose: true, Content: []int64{s + 5e6, s + 40e6}, HasUsage: true, CompletionTokens: 2, PromptTokens: 3})
		}
		reqs, _ := record.MeasuredRequests(recs)
		spans := metric.Spans(sc)
		stageOf := make([]int, len(reqs))
		for i := range reqs {
			stageOf[i] = metric.StageAt(spans, 3e9, reqs[i].Sched)
		}
		row := contract.Row{Concurrency: 4, Loop: contract.RowLoopClosed}
		row.Stages = metric.RowStages(sc, metric.RowSpec{Concurrency: 4, Loop: contract.RowLoopClosed, SLO: &metric.SLO{}}, stageOf, reqs, stageOf, 3e9)
		series, _ := metric.Series(reqs, 3e9, 2e9)
		row.Series = &series
		return recs, row
	}
	for _, tc := range []struct {
		name   string
		tamper func([]*record.Record, *contract.Row)
		want   string
	}{
		{"honest", func([]*record.Record, *contract.Row) {}, ""},
		{"stage count", func(_ []*record.Record, r *contract.Row) { r.Stages[0].Requests-- }, "stage 0:"},
		{"past the horizon", func(recs []*record.Record, _ *contract.Row) { recs[29].Sched = 5.5e9 }, "past its schedule's 2 s"},
		{"open loop", func(_ []*record.Record, r *contract.Row) { r.Loop = contract.RowLoopOpen }, "runs workers, not a rate"},
		{"offered rate", func(_ []*record.Record, r *contract.Row) { v := 3.0; r.Fidelity.OfferedRate = &v }, "runs workers, not a rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, row := build()
			tc.tamper(recs, &row)
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.Stages(c, "cr.json", 0, row, wc, 1, recs, Tolerance{Absolute: 1e-9, Relative: 1e-9})
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
}

// TestCheckReplayUnit: a trace row's replay unit follows the case: tokens (no words_per_token)
// where it binds a tokenizer, words_per_token with the workload's words_per_token otherwise; a
// row that claims the other unit, and a workload whose declared unit disagrees with its
// tokenizer, are found.
func TestCheckReplayUnit(t *testing.T) {
	build := func() []*record.Record {
		var recs []*record.Record
		for k := range 5 {
			s := int64(2e9) + int64(k)*10e6
			recs = append(recs, &record.Record{Line: k + 1, Index: int64(k), Sched: s, Send: s + 2e5, HasSend: true, End: s + 5e6, HasEnd: true, Close: s + 6e6, HasClose: true, Content: []int64{s + 1e6, s + 5e6}, HasUsage: true, CompletionTokens: 2, PromptTokens: 3})
		}
		return recs
	}
	wpt, scale := 0.75, 0.5
	digest := "sha256:" + strings.Repeat("a", 64)
	words := &contract.Corpus{Source: contract.CorpusSourceTrace, Digest: digest, TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt}
	tokens := &contract.Corpus{Source: contract.CorpusSourceTrace, Digest: digest, TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitTokens}
	row := func(unit contract.RowReplayLengthUnit, w float64) contract.Row {
		reqs, _ := record.MeasuredRequests(build())
		rp := metric.ReplayOf(reqs, digest, scale, unit, w)
		return contract.Row{Concurrency: 4, Loop: contract.RowLoopOpen, Replay: &rp}
	}
	for _, tc := range []struct {
		name      string
		row       contract.Row
		cp        *contract.Corpus
		tokenized bool
		want      string
	}{
		{"words honest", row(contract.RowReplayLengthUnitWordsPerToken, wpt), words, false, ""},
		{"tokens honest", row(contract.RowReplayLengthUnitTokens, 0), tokens, true, ""},
		{"row claims tokens", row(contract.RowReplayLengthUnitTokens, 0), words, false, "length unit tokens"},
		{"row claims words", row(contract.RowReplayLengthUnitWordsPerToken, wpt), tokens, true, "length unit words_per_token"},
		{"tokens without tokenizer", row(contract.RowReplayLengthUnitWordsPerToken, 0), tokens, false, "the case binds no tokenizer"},
		{"words with tokenizer", row(contract.RowReplayLengthUnitTokens, 0), words, true, "the case binds a tokenizer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.Replay(c, "cr.json", 0, tc.row, tc.cp, tc.tokenized, true, nil, build(), Tolerance{Absolute: 1e-9, Relative: 1e-9})
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if errors.Is(f, ErrRowMismatch) && strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
}

// TestCheckTraceParents: in a trace whose entries name parents, a waiting entry's t_sched is
// metric.AfterParents of its offset and its parents' ends, and each record's trace_entry is its
// entry's; an entry scheduled at its offset although its parent ended later, a parent missing
// from the row, and an edited, missing or extra trace_entry are found.
func TestCheckTraceParents(t *testing.T) {
	// Entry 1 waits for entry 0, which ends 40 ms after its own offset; entry 2 waits for 1.
	entries := []trace.Entry{{TimestampMs: 0, InputLength: 5, OutputLength: 3}, {TimestampMs: 10, InputLength: 9, OutputLength: 2, After: 1}, {TimestampMs: 12, InputLength: 12, OutputLength: 2, After: 2}}
	offs, err := trace.Offsets(entries, 1)
	if err != nil {
		t.Fatal(err)
	}
	one, zero := int64(1), int64(0)
	build := func() []*record.Record {
		origin := int64(5e9)
		r0 := &record.Record{Line: 0, Index: 0, Sched: origin, Send: origin + 1e5, HasSend: true, Close: origin + 40e6, HasClose: true, HasUsage: true, CompletionTokens: 3,
			Trace: &contract.TraceEntry{Entry: 0, Turn: 1}}
		r1 := &record.Record{Line: 1, Index: 1, Sched: origin + 40e6, Send: origin + 40e6 + 1e5, HasSend: true, Close: origin + 60e6, HasClose: true, HasUsage: true, CompletionTokens: 2,
			Trace: &contract.TraceEntry{Entry: 1, Parent: &zero, Turn: 2}}
		r2 := &record.Record{Line: 2, Index: 2, Sched: origin + 60e6, Send: origin + 60e6 + 1e5, HasSend: true, Close: origin + 70e6, HasClose: true, HasUsage: true, CompletionTokens: 2,
			Trace: &contract.TraceEntry{Entry: 2, Parent: &one, Turn: 3}}
		return []*record.Record{r0, r1, r2}
	}
	for _, tc := range []struct {
		name   string
		tamper func([]*record.Record) []*record.Record
		want   string
	}{
		{"honest", func(r []*record.Record) []*record.Record { return r }, ""},
		{"at its offset", func(r []*record.Record) []*record.Record { r[1].Sched = 5e9 + offs[1]; return r }, "when its parent ended"},
		{"parent's end moved", func(r []*record.Record) []*record.Record { r[0].Close += 1e6; return r }, "when its parent ended"},
		{"parent missing", func(r []*record.Record) []*record.Record { return []*record.Record{r[0], r[2]} }, "which the row did not record"},
		{"turn edited", func(r []*record.Record) []*record.Record { r[2].Trace.Turn = 2; return r }, "records trace_entry {entry 2, parent 1, turn 2}"},
		{"parent edited", func(r []*record.Record) []*record.Record { r[2].Trace.Parent = &zero; return r }, "the bound trace says {entry 2, parent 1, turn 3}"},
		{"missing", func(r []*record.Record) []*record.Record { r[1].Trace = nil; return r }, "records trace_entry absent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.TraceSchedule(c, contract.Row{Concurrency: 4}, entries, offs, tc.tamper(build()), 0, false)
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
	// A trace without parents: a record that claims a trace_entry is found.
	plain := []trace.Entry{{TimestampMs: 0, InputLength: 5, OutputLength: 3}}
	c := &finding.Collector{Check: CheckTolerances}
	rowcheck.TraceSchedule(c, contract.Row{Concurrency: 1}, plain, []int64{0}, []*record.Record{{Index: 0, Sched: 1, Trace: &contract.TraceEntry{Entry: 0, Turn: 1}}}, 0, false)
	if res := c.Result(); len(res.Findings) != 1 || !strings.Contains(res.Findings[0].Error(), "the bound trace says absent") {
		t.Fatalf("extra trace_entry: %v", res.Findings)
	}
}
