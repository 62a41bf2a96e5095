package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
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
	build := func() ([]*record, contract.Row) {
		recs := []*record{{index: 0, warmup: true, sched: 1e9, send: 1e9, hasSend: true}}
		reqs := make([]metric.Request, len(offs))
		stageOf := make([]int, len(offs))
		for k, o := range offs {
			s := origin + o
			r := &record{line: k + 1, index: int64(k + 1), sched: s, send: s + 50e3, hasSend: true, end: s + 30e6, hasEnd: true, cls: s + 31e6, hasClose: true,
				tok: metric.Request{Content: []int64{s + 10e6, s + 30e6}}, hasUsage: true, n: 2, p: 5}
			if k%7 == 3 {
				r.end, r.hasEnd, r.tok.Content, r.hasUsage, r.failed, r.errClass = 0, false, nil, false, true, "http_status"
			}
			recs = append(recs, r)
			reqs[k], stageOf[k] = r.request(), stages[k]
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
		tamper func([]*record, *contract.Row)
		want   string
	}{
		{"honest", wc, func([]*record, *contract.Row) {}, ""},
		{"moved t_sched", wc, func(r []*record, _ *contract.Row) { r[5].sched += 2e6 }, "did not run its declared stages"},
		{"stage count", wc, func(_ []*record, row *contract.Row) { row.Stages[1].Scheduled++ }, "stage 1:"},
		{"stage achieved", wc, func(_ []*record, row *contract.Row) { row.Stages[0].AchievedRate *= 1.1 }, "achieved_rate"},
		{"stage metric", wc, func(_ []*record, row *contract.Row) { row.Stages[0].Metrics[0].Value *= 1.1 }, "recomputed"},
		{"series bin", wc, func(_ []*record, row *contract.Row) { row.Series.Bins[2].Sent-- }, "second 2:"},
		{"series in flight", wc, func(_ []*record, row *contract.Row) { row.Series.Bins[1].InFlightMean *= 1.2 }, "second 1:"},
		{"series missing", wc, func(_ []*record, row *contract.Row) { row.Series = nil }, "no per-second series"},
		{"offered rate", wc, func(_ []*record, row *contract.Row) { v := 99.0; row.Fidelity.OfferedRate = &v }, "the schedule's mean"},
		{"no schedule declared", &contract.Case{Kind: contract.CaseKindServing}, func([]*record, *contract.Row) {}, "declares no schedule"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, row := build()
			tc.tamper(recs, &row)
			c := &collector{check: CheckTolerances}
			checkStages(c, "cr.json", 0, row, tc.wc, seed, recs, Tolerance{Absolute: 1e-9, Relative: 1e-9})
			res := c.result()
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
	build := func() []*record {
		var out []*record
		for k, o := range offs {
			out = append(out, &record{line: k + 1, index: int64(k + 1), sched: 7e9 + o, hasUsage: true, n: entries[k].OutputLength, client: contract.ClientTokens{PromptTokens: entries[k].InputLength}, hasClient: true})
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		tamper func([]*record) []*record
		want   string
		exact  bool
	}{
		{"honest", func(r []*record) []*record { return r }, "", false},
		{"honest in tokens", func(r []*record) []*record { return r }, "", true},
		{"prompt tokens", func(r []*record) []*record { r[1].client.PromptTokens = 6; return r }, "input_length is 5", true},
		{"prompt tokens in words", func(r []*record) []*record { r[1].client.PromptTokens = 6; return r }, "", false},
		{"moved", func(r []*record) []*record { r[2].sched += 1e6; return r }, "did not replay its trace's timestamps", false},
		{"beyond", func(r []*record) []*record { return append(r, &record{line: 9, index: 4, sched: 8e9}) }, "not an entry of its trace", false},
		{"tokens", func(r []*record) []*record { r[1].n = 3; return r }, "output_length is 2", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &collector{check: CheckTolerances}
			checkTraceSchedule(c, contract.Row{Concurrency: 4}, entries, offs, tc.tamper(build()), 1, tc.exact)
			res := c.result()
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
	build := func() ([]*record, contract.Row) {
		var recs []*record
		for k := range 30 {
			s := int64(3e9) + int64(k)*60e6
			recs = append(recs, &record{line: k, index: int64(k), sched: s, send: s + 1e5, hasSend: true, end: s + 40e6, hasEnd: true, cls: s + 41e6, hasClose: true, tok: metric.Request{Content: []int64{s + 5e6, s + 40e6}}, hasUsage: true, n: 2, p: 3})
		}
		reqs, _ := measuredRequests(recs)
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
		tamper func([]*record, *contract.Row)
		want   string
	}{
		{"honest", func([]*record, *contract.Row) {}, ""},
		{"stage count", func(_ []*record, r *contract.Row) { r.Stages[0].Requests-- }, "stage 0:"},
		{"past the horizon", func(recs []*record, _ *contract.Row) { recs[29].sched = 5.5e9 }, "past its schedule's 2 s"},
		{"open loop", func(_ []*record, r *contract.Row) { r.Loop = contract.RowLoopOpen }, "runs workers, not a rate"},
		{"offered rate", func(_ []*record, r *contract.Row) { v := 3.0; r.Fidelity.OfferedRate = &v }, "runs workers, not a rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs, row := build()
			tc.tamper(recs, &row)
			c := &collector{check: CheckTolerances}
			checkStages(c, "cr.json", 0, row, wc, 1, recs, Tolerance{Absolute: 1e-9, Relative: 1e-9})
			res := c.result()
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
	build := func() []*record {
		var recs []*record
		for k := range 5 {
			s := int64(2e9) + int64(k)*10e6
			recs = append(recs, &record{line: k + 1, index: int64(k), sched: s, send: s + 2e5, hasSend: true, end: s + 5e6, hasEnd: true, cls: s + 6e6, hasClose: true, tok: metric.Request{Content: []int64{s + 1e6, s + 5e6}}, hasUsage: true, n: 2, p: 3})
		}
		return recs
	}
	wpt, scale := 0.75, 0.5
	digest := "sha256:" + strings.Repeat("a", 64)
	words := &contract.Corpus{Source: contract.CorpusSourceTrace, Digest: digest, TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitWordsPerToken, WordsPerToken: &wpt}
	tokens := &contract.Corpus{Source: contract.CorpusSourceTrace, Digest: digest, TimeScale: &scale, LengthUnit: contract.TraceCorpusLengthUnitTokens}
	row := func(unit contract.RowReplayLengthUnit, w float64) contract.Row {
		reqs, _ := measuredRequests(build())
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
			c := &collector{check: CheckTolerances}
			checkReplay(c, "cr.json", 0, tc.row, tc.cp, tc.tokenized, true, nil, build(), Tolerance{Absolute: 1e-9, Relative: 1e-9})
			res := c.result()
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
