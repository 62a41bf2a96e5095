package rowcheck

import (
	"fmt"
	"slices"
	"sort"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// A row of a case that declares a schedule (stages and ramps, docs/metrics.md "Stages and
// ramps"), checked against its records and its workload case: every measured t_sched is the
// schedule recomputed from the seed (metric.ScheduleArrivals), the offered rate is the
// schedule's mean, and the row's stages (metric.RowStages) and per-second series (metric.Series)
// are recomputed from the records. A row of a case without a schedule records neither.

// RowSchedule checks a trace replay row against its trace, any other row against its schedule.
func RowSchedule(s *load.Snapshot, c *finding.Collector, path string, j int, row contract.Row, wc *contract.Case, seed int64, recs []*record.Record, tol policy.Tolerance) {
	if wc != nil && wc.Corpus != nil && wc.Corpus.Source == contract.CorpusSourceTrace {
		entries, note := traceOf(s, wc.Corpus)
		if entries == nil && j == 0 {
			c.Note("case %s: %s", wc.ID, note)
		}
		Replay(c, path, j, row, wc.Corpus, wc.Tokenizer != nil, wc.CacheRegime != contract.CacheRegimeCold, entries, recs, tol)
		return
	}
	Stages(c, path, j, row, wc, seed, recs, tol)
}

// traceOf reads a trace corpus from its bound artifact (nil and why when it is not available).
func traceOf(s *load.Snapshot, cp *contract.Corpus) ([]trace.Entry, string) {
	f := s.Files[cp.Path]
	if f == nil || !f.Present || f.Raw == nil {
		return nil, "trace " + cp.Path + " is not available: its requests' t_sched were not checked against its timestamps"
	}
	if f.Digest != cp.Digest {
		return nil, "trace " + cp.Path + " does not match the workload's digest: its timestamps were not used"
	}
	es, err := trace.Read(f.Raw)
	if err != nil {
		return nil, fmt.Sprintf("trace %s: %v", cp.Path, err)
	}
	return es, ""
}

func Stages(c *finding.Collector, path string, j int, row contract.Row, wc *contract.Case, seed int64, recs []*record.Record, tol policy.Tolerance) {
	base := finding.Pointer("rows", j)
	if wc == nil {
		return
	}
	if row.Replay != nil {
		c.Add(path, base+"/replay", reason.ErrRowMismatch, "row c%d-r%d records a trace replay, and its workload case replays no trace", row.Concurrency, row.Repetition)
	}
	sc := wc.Schedule
	if sc == nil {
		if len(row.Stages) > 0 || row.Series != nil {
			c.Add(path, base+"/stages", reason.ErrRowMismatch, "row c%d-r%d records stages or a series, and its workload case declares no schedule", row.Concurrency, row.Repetition)
		}
		return
	}
	if metric.Closed(sc) {
		checkClosedStages(c, path, j, row, wc, recs, tol)
		return
	}
	if row.Loop != contract.RowLoopOpen {
		c.Add(path, base+"/loop", reason.ErrLoadNotReached, "row c%d-r%d of a scheduled case is %s loop: a schedule is open loop", row.Concurrency, row.Repetition, row.Loop)
		return
	}
	limit := metric.MaxScheduleArrivals
	if wc.Requests != nil {
		limit = int(min(*wc.Requests, int64(limit)))
	}
	offs, stageOfArrival, err := metric.ScheduleArrivals(sc, seed, row.Concurrency, row.Repetition, limit)
	if err != nil {
		c.Add(path, base, reason.ErrLoadNotReached, "row c%d-r%d: the workload's schedule cannot be recomputed: %v", row.Concurrency, row.Repetition, err)
		return
	}
	offered := metric.ExpectedArrivals(sc) / metric.Horizon(sc)
	if o := row.Fidelity.OfferedRate; o == nil || !record.Within(*o, offered, tol) {
		c.Add(path, base+"/fidelity/offered_rate", reason.ErrLoadNotReached, "scheduled row c%d-r%d records offered rate %s, the schedule's mean is %s requests/s", row.Concurrency, row.Repetition, fmtFloatPtr(o), record.FmtFloat(offered))
	}
	unmeasured := int64(0)
	var measured []*record.Record
	for _, r := range recs {
		if r.Warmup {
			unmeasured++
		} else {
			measured = append(measured, r)
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	if len(measured) == 0 {
		if len(row.Stages) > 0 || row.Series != nil {
			c.Add(path, base+"/stages", reason.ErrRowMismatch, "row c%d-r%d records stages or a series, and no measured request", row.Concurrency, row.Repetition)
		}
		return
	}
	if int64(len(measured)) > int64(len(offs)) {
		c.Add(row.Records.Path, "", reason.ErrLoadNotReached, "scheduled row c%d-r%d records %d measured requests, its schedule has %d arrivals", row.Concurrency, row.Repetition, len(measured), len(offs))
		return
	}
	first := measured[0]
	k0 := first.Index - unmeasured
	if k0 < 0 || k0 >= int64(len(offs)) {
		c.Add(row.Records.Path, finding.Pointer(first.Line, "index"), reason.ErrLoadNotReached, "scheduled row c%d-r%d: request %d is not an arrival of its schedule", row.Concurrency, row.Repetition, first.Index)
		return
	}
	origin := first.Sched - offs[k0]
	reqs := make([]metric.Request, len(measured))
	stageOf := make([]int, len(measured))
	for i, r := range measured {
		k := r.Index - unmeasured
		if k < 0 || k >= int64(len(offs)) {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "index"), reason.ErrLoadNotReached, "scheduled row c%d-r%d: request %d is not an arrival of its schedule", row.Concurrency, row.Repetition, r.Index)
			return
		}
		if d := r.Sched - (origin + offs[k]); d < -scheduleToleranceNs || d > scheduleToleranceNs {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrLoadNotReached, "scheduled row c%d-r%d: request %d is scheduled at %d ns, the %s schedule of seed %d puts it at %d ns (%+d ns): the row did not run its declared stages", row.Concurrency, row.Repetition, r.Index, r.Sched, sc.Arrival, seed, origin+offs[k], d)
			return
		}
		reqs[i], stageOf[i] = r.Request(), stageOfArrival[k]
	}
	spec := metric.RowSpec{Concurrency: row.Concurrency, Loop: row.Loop, OfferedRate: row.Fidelity.OfferedRate, SLO: &metric.SLO{}}
	if wc.SLO != nil {
		spec.SLO = &metric.SLO{TTFTMs: wc.SLO.TTFTMs, ICLMs: wc.SLO.ICLMs, E2EMs: wc.SLO.E2EMs}
	}
	checkRowStages(c, path, base+"/stages", row, metric.RowStages(sc, spec, stageOfArrival, reqs, stageOf, origin), tol)
	series, ok := metric.Series(reqs, origin, int64(metric.Horizon(sc)*1e9))
	switch {
	case row.Series == nil && ok:
		c.Add(path, base+"/series", reason.ErrRowMismatch, "scheduled row c%d-r%d records no per-second series", row.Concurrency, row.Repetition)
	case row.Series != nil && !ok:
		c.Add(path, base+"/series", reason.ErrRowMismatch, "scheduled row c%d-r%d records a series, and its records span more than %d seconds", row.Concurrency, row.Repetition, metric.MaxSeriesBins)
	case row.Series != nil:
		checkSeries(c, path, base+"/series", *row.Series, series, tol)
	}
}

// checkClosedStages checks a row of a closed schedule: closed loop, no offered rate, at most its
// requests, no request taken after the schedule's horizon, and its stages (each request in the
// stage holding its t_sched, from the row's first measured t_sched) and series recomputed.
func checkClosedStages(c *finding.Collector, path string, j int, row contract.Row, wc *contract.Case, recs []*record.Record, tol policy.Tolerance) {
	base := finding.Pointer("rows", j)
	sc := wc.Schedule
	if row.Loop != contract.RowLoopClosed || row.Fidelity.OfferedRate != nil {
		c.Add(path, base+"/loop", reason.ErrLoadNotReached, "row c%d-r%d of a closed schedule is %s loop with offered rate %s: a closed schedule runs workers, not a rate", row.Concurrency, row.Repetition, row.Loop, fmtFloatPtr(row.Fidelity.OfferedRate))
		return
	}
	reqs, measured := record.MeasuredRequests(recs)
	if len(measured) == 0 {
		return
	}
	if wc.Requests != nil && int64(len(measured)) > *wc.Requests {
		c.Add(row.Records.Path, "", reason.ErrLoadNotReached, "closed scheduled row c%d-r%d records %d measured requests, above its requests %d", row.Concurrency, row.Repetition, len(measured), *wc.Requests)
	}
	origin := measured[0].Sched
	for _, r := range measured {
		origin = min(origin, r.Sched)
	}
	spans := metric.Spans(sc)
	stageOf := make([]int, len(measured))
	for i, r := range measured {
		stageOf[i] = metric.StageAt(spans, origin, r.Sched)
		if stageOf[i] < 0 {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrLoadNotReached, "closed scheduled row c%d-r%d: request %d was taken %s s after the row's start, past its schedule's %s s", row.Concurrency, row.Repetition, r.Index, record.FmtFloat(float64(r.Sched-origin)/1e9), record.FmtFloat(metric.Horizon(sc)))
			return
		}
	}
	spec := metric.RowSpec{Concurrency: row.Concurrency, Loop: row.Loop, SLO: &metric.SLO{}}
	if wc.SLO != nil {
		spec.SLO = &metric.SLO{TTFTMs: wc.SLO.TTFTMs, ICLMs: wc.SLO.ICLMs, E2EMs: wc.SLO.E2EMs}
	}
	checkRowStages(c, path, base+"/stages", row, metric.RowStages(sc, spec, stageOf, reqs, stageOf, origin), tol)
	series, ok := metric.Series(reqs, origin, int64(metric.Horizon(sc)*1e9))
	switch {
	case row.Series == nil && ok:
		c.Add(path, base+"/series", reason.ErrRowMismatch, "scheduled row c%d-r%d records no per-second series", row.Concurrency, row.Repetition)
	case row.Series != nil && ok:
		checkSeries(c, path, base+"/series", *row.Series, series, tol)
	}
}

func deref0(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// checkRowStages compares a row's recorded stages with their recomputation.
func checkRowStages(c *finding.Collector, path, base string, row contract.Row, want []contract.RowStage, tol policy.Tolerance) {
	if len(row.Stages) != len(want) {
		c.Add(path, base, reason.ErrRowMismatch, "row c%d-r%d records %d stages, its schedule has %d", row.Concurrency, row.Repetition, len(row.Stages), len(want))
		return
	}
	for k, got := range row.Stages {
		w := want[k]
		at := finding.Pointer(k)
		if got.Kind != w.Kind || got.Scheduled != w.Scheduled || got.Requests != w.Requests || got.Successes != w.Successes || got.Failures != w.Failures ||
			fmtIntPtr(got.Concurrency) != fmtIntPtr(w.Concurrency) || (got.OfferedRate == nil) != (w.OfferedRate == nil) {
			c.Add(path, base+at, reason.ErrRowMismatch, "stage %d: %s with %d scheduled, %d requests (%d ok, %d failed); the schedule and records say %s with %d, %d (%d, %d)", k, got.Kind, got.Scheduled, got.Requests, got.Successes, got.Failures, w.Kind, w.Scheduled, w.Requests, w.Successes, w.Failures)
			continue
		}
		for _, x := range []struct {
			field     string
			got, want float64
		}{{"start_seconds", got.StartSeconds, w.StartSeconds}, {"seconds", got.Seconds, w.Seconds}, {"offered_rate", deref0(got.OfferedRate), deref0(w.OfferedRate)}, {"achieved_rate", got.AchievedRate, w.AchievedRate}} {
			if !record.Within(x.got, x.want, tol) {
				c.Add(path, base+at+"/"+x.field, reason.ErrRowMismatch, "stage %d: %s %s, recomputed %s", k, x.field, record.FmtFloat(x.got), record.FmtFloat(x.want))
			}
		}
		MetricList(c, path, base+at+"/metrics", got.Metrics, w.Metrics, tol, nil)
	}
}

// checkSeries compares a recorded per-second series with its recomputation (the first bin that
// differs is reported).
func checkSeries(c *finding.Collector, path, base string, got, want contract.RowSeries, tol policy.Tolerance) {
	if len(got.Bins) != len(want.Bins) {
		c.Add(path, base+"/bins", reason.ErrRowMismatch, "the series has %d bins, the records span %d seconds", len(got.Bins), len(want.Bins))
		return
	}
	optEq := func(a, b *float64) bool {
		return (a == nil && b == nil) || (a != nil && b != nil && record.Within(*a, *b, tol))
	}
	for k, g := range got.Bins {
		w := want.Bins[k]
		if g.Second != w.Second || g.Scheduled != w.Scheduled || g.Sent != w.Sent || g.Completed != w.Completed || g.Failed != w.Failed ||
			!record.Within(g.InFlightMean, w.InFlightMean, tol) || !optEq(g.E2EP50Ms, w.E2EP50Ms) || !optEq(g.E2EP99Ms, w.E2EP99Ms) || !optEq(g.TTFTP50Ms, w.TTFTP50Ms) {
			c.Add(path, base+finding.Pointer("bins", k), reason.ErrRowMismatch, "second %d: scheduled %d sent %d completed %d failed %d in flight %s; the records say %d %d %d %d %s", g.Second, g.Scheduled, g.Sent, g.Completed, g.Failed, record.FmtFloat(g.InFlightMean), w.Scheduled, w.Sent, w.Completed, w.Failed, record.FmtFloat(w.InFlightMean))
			return
		}
	}
}

// Replay checks a trace row: open loop, no stages, its replay block names the workload's
// trace (digest, time scale, length unit: tokens exactly when the case binds a tokenizer, and
// words per token with the words_per_token unit) and its entries and send errors are the records'
// (metric.ReplayOf), and its per-second series is the records' from the row's start (the first
// trace entry's t_sched). With the trace (entries, from its bound artifact), every measured
// t_sched is the row's start plus its entry's scaled offset (trace.Offsets), and no success has
// more completion tokens than its entry's output_length.
func Replay(c *finding.Collector, path string, j int, row contract.Row, cp *contract.Corpus, tokenized, noNonce bool, entries []trace.Entry, recs []*record.Record, tol policy.Tolerance) {
	base := finding.Pointer("rows", j)
	if row.Loop != contract.RowLoopOpen {
		c.Add(path, base+"/loop", reason.ErrLoadNotReached, "row c%d-r%d of a trace replay is %s loop: a replay is open loop", row.Concurrency, row.Repetition, row.Loop)
	}
	if len(row.Stages) > 0 {
		c.Add(path, base+"/stages", reason.ErrRowMismatch, "row c%d-r%d of a trace replay records stages", row.Concurrency, row.Repetition)
	}
	reqs, measured := record.MeasuredRequests(recs)
	rp := row.Replay
	if rp == nil {
		if len(measured) > 0 {
			c.Add(path, base+"/replay", reason.ErrRowMismatch, "row c%d-r%d replays a trace and records no replay", row.Concurrency, row.Repetition)
		}
		return
	}
	scale, wpt := 1.0, 0.0
	if cp.TimeScale != nil {
		scale = *cp.TimeScale
	}
	if cp.WordsPerToken != nil {
		wpt = *cp.WordsPerToken
	}
	// The unit follows the case: tokens exactly when it binds a tokenizer to count them with.
	unit := contract.RowReplayLengthUnitWordsPerToken
	if tokenized {
		unit = contract.RowReplayLengthUnitTokens
	}
	if string(cp.LengthUnit) != string(unit) {
		binds := "the case binds no tokenizer"
		if tokenized {
			binds = "the case binds a tokenizer"
		}
		c.Add(path, base+"/replay/length_unit", reason.ErrRowMismatch, "the workload's trace declares length_unit %q, but %s: want %s", cp.LengthUnit, binds, unit)
	}
	want := metric.ReplayOf(reqs, cp.Digest, scale, unit, wpt)
	if rp.TraceDigest != want.TraceDigest || rp.TimeScale != want.TimeScale || rp.WordsPerToken != want.WordsPerToken || rp.LengthUnit != want.LengthUnit || rp.Entries != want.Entries {
		c.Add(path, base+"/replay", reason.ErrRowMismatch, "replay of %s at time scale %s, length unit %s, %s words per token, %d entries; the workload and records say %s, %s, %s, %s, %d", rp.TraceDigest, record.FmtFloat(rp.TimeScale), rp.LengthUnit, record.FmtFloat(rp.WordsPerToken), rp.Entries, want.TraceDigest, record.FmtFloat(want.TimeScale), want.LengthUnit, record.FmtFloat(want.WordsPerToken), want.Entries)
	}
	for _, x := range []struct {
		field     string
		got, want float64
	}{{"send_error_p50_ms", rp.SendErrorP50Ms, want.SendErrorP50Ms}, {"send_error_p99_ms", rp.SendErrorP99Ms, want.SendErrorP99Ms}, {"send_error_max_ms", rp.SendErrorMaxMs, want.SendErrorMaxMs}} {
		if !record.Within(x.got, x.want, tol) {
			c.Add(path, base+"/replay/"+x.field, reason.ErrRowMismatch, "%s %s, the records say %s", x.field, record.FmtFloat(x.got), record.FmtFloat(x.want))
		}
	}
	unmeasured := int64(len(recs) - len(measured))
	if len(measured) > 0 && entries != nil {
		// In tokens (and without a cold row's nonce on top), the client's prompt count is the
		// entry's input_length.
		exact := tokenized && noNonce && cp.LengthUnit == contract.TraceCorpusLengthUnitTokens
		if offs, err := trace.Offsets(entries, scale); err != nil {
			c.Add(path, base+"/replay", reason.ErrRowMismatch, "row c%d-r%d replays a trace whose schedule cannot be replayed: %v", row.Concurrency, row.Repetition, err)
		} else {
			TraceSchedule(c, row, entries, offs, measured, unmeasured, exact)
		}
	}
	if len(measured) == 0 || row.Series == nil {
		return
	}
	if measured[0].Index != unmeasured {
		return // the first entry was never recorded: the row's start is unknown
	}
	if series, ok := metric.Series(reqs, measured[0].Sched, 0); ok {
		checkSeries(c, path, base+"/series", *row.Series, series, tol)
	}
}

// TraceSchedule: measured request k (index minus the unmeasured) is trace entry k, scheduled
// at the row's start (the first measured record's t_sched minus its offset) plus offs[k], or,
// for an entry with parents, at metric.AfterParents of that and its parents' ends (metric.Ended
// of each parent entry's record, which must be in the row: an entry is sent only after its
// parents), and a success has at most the entry's output_length completion tokens.
func TraceSchedule(c *finding.Collector, row contract.Row, entries []trace.Entry, offs []int64, measured []*record.Record, unmeasured int64, exactTokens bool) {
	k0 := measured[0].Index - unmeasured
	if k0 < 0 || k0 >= int64(len(offs)) {
		c.Add(row.Records.Path, finding.Pointer(measured[0].Line, "index"), reason.ErrLoadNotReached, "trace row c%d-r%d: request %d is not an entry of its trace (%d entries)", row.Concurrency, row.Repetition, measured[0].Index, len(entries))
		return
	}
	if entries[k0].Waits() {
		// The row's start is read from its first record, which then must be an entry at its offset.
		c.Add(row.Records.Path, finding.Pointer(measured[0].Line, "index"), reason.ErrLoadNotReached, "trace row c%d-r%d: the first request %d is entry %d, which waits for a parent: a replay starts with its first entry", row.Concurrency, row.Repetition, measured[0].Index, k0)
		return
	}
	origin := measured[0].Sched - offs[k0]
	turns := trace.Turns(entries)        // nil when no entry names a parent
	var byEntry map[int64]*record.Record // only a trace whose entries name parents looks them up
	var ends []int64                     // the ends of an entry's parents
	if turns != nil {
		byEntry = make(map[int64]*record.Record, len(measured))
		for _, r := range measured {
			byEntry[r.Index-unmeasured] = r
		}
	}
	for _, r := range measured {
		k := r.Index - unmeasured
		if k < 0 || k >= int64(len(offs)) {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "index"), reason.ErrLoadNotReached, "trace row c%d-r%d: request %d is not an entry of its trace (%d entries)", row.Concurrency, row.Repetition, r.Index, len(entries))
			return
		}
		if !traceEntryIs(r.Trace, k, entries, turns) {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "trace_entry"), reason.ErrRowMismatch, "trace row c%d-r%d: request %d records trace_entry %s; the bound trace says %s", row.Concurrency, row.Repetition, r.Index, fmtTraceEntry(r.Trace), fmtTraceEntry(wantTraceEntry(k, entries, turns)))
			return
		}
		want := origin + offs[k]
		if entries[k].Waits() {
			ends = ends[:0]
			for p := range entries[k].Parents() {
				parent := byEntry[int64(p)]
				if parent == nil {
					c.Add(row.Records.Path, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrLoadNotReached, "trace row c%d-r%d: request %d (entry %d) waits for entry %d, which the row did not record: an entry is sent only after its parents' requests ended", row.Concurrency, row.Repetition, r.Index, k, p)
					return
				}
				q := parent.Request()
				ends = append(ends, metric.Ended(&q))
			}
			want = metric.AfterParents(want, ends...)
		}
		if d := r.Sched - want; d < -scheduleToleranceNs || d > scheduleToleranceNs {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrLoadNotReached, "trace row c%d-r%d: request %d is scheduled at %d ns, its trace entry (at its offset, or when its parent ended: a join's last) at %d ns (%+d ns): the row did not replay its trace's timestamps", row.Concurrency, row.Repetition, r.Index, r.Sched, want, d)
			return
		}
		if !r.Failed && r.HasUsage && r.CompletionTokens > entries[k].OutputLength {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "usage", "completion_tokens"), reason.ErrRowMismatch, "trace row c%d-r%d: request %d has %d completion tokens, its trace entry's output_length is %d", row.Concurrency, row.Repetition, r.Index, r.CompletionTokens, entries[k].OutputLength) // not a contract value: the record's member name
			return
		}
		if exactTokens && r.HasClient && r.Client.PromptTokens != entries[k].InputLength {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "client_tokens", "prompt_tokens"), reason.ErrRowMismatch, "trace row c%d-r%d: request %d's prompt counts %d tokens, its trace entry's input_length is %d (length_unit tokens)", row.Concurrency, row.Repetition, r.Index, r.Client.PromptTokens, entries[k].InputLength) // not a contract value: the record's member name
			return
		}
	}
}

// wantTraceEntry is the trace_entry of a request of entry k: nil when the trace names no parents;
// its one parent as parent, a join's parents as parents.
func wantTraceEntry(k int64, entries []trace.Entry, turns []int32) *contract.TraceEntry {
	if turns == nil {
		return nil
	}
	te := &contract.TraceEntry{Entry: k, Turn: int64(turns[k])}
	if e := entries[k]; e.After > 0 {
		p := e.After - 1
		te.Parent = &p
	} else if len(e.Join) > 0 {
		te.Parents = e.Join
	}
	return te
}

// traceEntryIs reports whether a record's trace_entry is entry k's.
func traceEntryIs(got *contract.TraceEntry, k int64, entries []trace.Entry, turns []int32) bool {
	want := wantTraceEntry(k, entries, turns)
	if got == nil || want == nil {
		return got == nil && want == nil
	}
	return got.Entry == want.Entry && got.Turn == want.Turn && (got.Parent == nil) == (want.Parent == nil) && (got.Parent == nil || *got.Parent == *want.Parent) && slices.Equal(got.Parents, want.Parents)
}

// fmtTraceEntry writes a trace_entry as its members ("absent" without one).
func fmtTraceEntry(te *contract.TraceEntry) string {
	if te == nil {
		return "absent"
	}
	parent := "null"
	if te.Parent != nil {
		parent = fmt.Sprint(*te.Parent)
	}
	if te.Parents != nil {
		return fmt.Sprintf("{entry %d, parents %v, turn %d}", te.Entry, te.Parents, te.Turn)
	}
	return fmt.Sprintf("{entry %d, parent %s, turn %d}", te.Entry, parent, te.Turn)
}
