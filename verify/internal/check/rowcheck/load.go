package rowcheck

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// The newly recorded load facts of a serving case, checked against its records and its
// workload case: the achieved concurrency (in_flight_peak, in_flight_mean) recomputed; a
// closed-loop row reached its declared concurrency; an open-loop row ran the declared rate; the
// case's records fit its timeout_seconds; a stopped case is failed. Each is checked only where
// the evidence carries the field (evidence that predates it is not, and the check's note says so).

// timeoutGraceSeconds is how far past a serving case's timeout_seconds its last record may end:
// the requests in flight when the timeout fired are cancelled, not awaited.
const timeoutGraceSeconds = 1.0

// inFlightOf is the achieved concurrency of a row's measured requests (metric.InFlight,
// docs/metrics.md); ok is false when no request was in flight or the window is empty.
func inFlightOf(recs []*record.Record) (peak int64, mean float64, ok bool) {
	reqs, _ := record.MeasuredRequests(recs)
	return metric.InFlight(reqs)
}

// Load checks one row's load facts. It reports false when the row records no achieved
// concurrency (evidence before in_flight_peak existed), which the caller notes.
func Load(c *finding.Collector, path string, j int, row contract.Row, wc *contract.Case, recs []*record.Record, tol policy.Tolerance) bool {
	checked := true
	base := finding.Pointer("rows", j, "fidelity")
	fid := row.Fidelity
	peak, mean, ok := inFlightOf(recs)
	switch {
	case fid.InFlightPeak == nil && fid.InFlightMean == nil:
		checked = false
	case !ok:
		c.Add(path, base+"/in_flight_peak", reason.ErrRowMismatch, "in_flight_peak and in_flight_mean are recorded, but no measured request of the records has both ends")
	default:
		if fid.InFlightPeak == nil || *fid.InFlightPeak != peak {
			c.Add(path, base+"/in_flight_peak", reason.ErrRowMismatch, "in_flight_peak %s, the records say %d", fmtIntPtr(fid.InFlightPeak), peak)
		}
		if fid.InFlightMean == nil || !record.Within(*fid.InFlightMean, mean, tol) {
			c.Add(path, base+"/in_flight_mean", reason.ErrRowMismatch, "in_flight_mean %s, the records say %s", fmtFloatPtr(fid.InFlightMean), record.FmtFloat(mean))
		}
		if row.Loop == contract.RowLoopClosed && row.Requests >= row.Concurrency && peak < row.Concurrency {
			c.Add(path, base+"/in_flight_peak", reason.ErrLoadNotReached, "closed-loop row c%d-r%d never had %d requests in flight (at most %d): it did not measure its declared concurrency", row.Concurrency, row.Repetition, row.Concurrency, peak)
		}
	}
	if wc != nil && wc.Rate != nil && row.Loop == contract.RowLoopOpen {
		if fid.OfferedRate == nil || *fid.OfferedRate != wc.Rate.RequestsPerSecond {
			c.Add(path, base+"/offered_rate", reason.ErrLoadNotReached, "open-loop row c%d-r%d records offered rate %s, the workload's case declares %s requests/s", row.Concurrency, row.Repetition, fmtFloatPtr(fid.OfferedRate), record.FmtFloat(wc.Rate.RequestsPerSecond))
		}
	}
	return checked
}

// scheduleToleranceNs is how far a recorded open-loop t_sched may lie from the schedule
// recomputed from the seed: the offsets are float sums truncated to whole nanoseconds, and a
// platform's math.Log may differ from the runner's in the last bit.
const scheduleToleranceNs = 1000

// Schedule recomputes an open-loop row's schedule (metric.Arrivals, from the workload's
// seed, the row's concurrency and repetition) and checks every measured record's t_sched against
// it: measured request k (index minus the row's unmeasured requests) is scheduled offset k after
// the row's first arrival, whose moment is taken from the first measured record. Records the
// runner never sent (a cancelled row) are absent and not asked for.
func Schedule(c *finding.Collector, path string, row contract.Row, wc *contract.Case, seed int64, recs []*record.Record) {
	if wc == nil || wc.Rate == nil || row.Loop != contract.RowLoopOpen {
		return
	}
	// The unmeasured requests (warmups and a warm row's priming pass) come first and all ran
	// before any measured one was sent, so measured request k has index offset + k.
	offset := int64(0)
	for _, r := range recs {
		if r.Warmup {
			offset++
		}
	}
	var measured []*record.Record
	maxK := int64(-1)
	for _, r := range recs {
		if k := r.Index - offset; !r.Warmup && k >= 0 {
			measured = append(measured, r)
			maxK = max(maxK, k)
		}
	}
	if len(measured) == 0 || maxK >= 1<<24 {
		return
	}
	offs := metric.Arrivals(wc.Rate, int(maxK)+1, seed, row.Concurrency, row.Repetition)
	first := measured[0]
	for _, r := range measured {
		if r.Index < first.Index {
			first = r
		}
	}
	t0 := first.Sched - offs[first.Index-offset]
	for _, r := range measured {
		want := t0 + offs[r.Index-offset]
		if d := r.Sched - want; d < -scheduleToleranceNs || d > scheduleToleranceNs {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "t_sched_ns"), reason.ErrLoadNotReached, "open-loop row c%d-r%d: request %d is scheduled at %d ns, the %s schedule of seed %d puts it at %d ns (%+d ns): the row did not run the declared arrival process", row.Concurrency, row.Repetition, r.Index, r.Sched, wc.Rate.Mode, seed, want, d)
			return
		}
	}
}

// corpusSize is the number of prompts of a workload case's corpus where the workload says it
// (inline prompts, a synthetic count); ok is false for a file corpus.
func corpusSize(wc *contract.Case) (int64, bool) {
	switch {
	case wc == nil || wc.Corpus == nil:
		return 0, false
	case wc.Corpus.Source == contract.CorpusSourceInline:
		return int64(len(wc.Corpus.Prompts)), len(wc.Corpus.Prompts) > 0
	case wc.Corpus.Source == contract.CorpusSourceSynthetic:
		return wc.Corpus.Count, wc.Corpus.Count > 0
	case wc.Corpus.Source == contract.CorpusSourceSharedPrefix:
		n := wc.Corpus.Groups * wc.Corpus.Suffixes
		return n, n > 0
	}
	return 0, false
}

// corpusPromptID is the id the runner gives prompt i of a case's corpus where the workload decides
// it: an inline prompt's own id, and the ids the generators give (runner/load: synthetic-NNNNNN,
// trace-NNNNNN, prefix-gNNNN-sNNNN for group i div suffixes, suffix i mod suffixes).
func corpusPromptID(wc *contract.Case, i int64) (string, bool) {
	if wc == nil || wc.Corpus == nil || i < 0 {
		return "", false
	}
	cp := wc.Corpus
	switch cp.Source {
	case contract.CorpusSourceInline:
		if i < int64(len(cp.Prompts)) {
			return cp.Prompts[i].ID, true
		}
	case contract.CorpusSourceSynthetic:
		return fmt.Sprintf("synthetic-%06d", i), true
	case contract.CorpusSourceTrace:
		return fmt.Sprintf("trace-%06d", i), true
	case contract.CorpusSourceSharedPrefix:
		if cp.Suffixes > 0 {
			return fmt.Sprintf("prefix-g%04d-s%04d", i/cp.Suffixes, i%cp.Suffixes), true
		}
	}
	return "", false
}

// CorpusOrder recomputes the corpus position of every measured record that carries one
// (metric.CorpusOrder, from the case's prompt_order and the workload's seed): measured request k
// (index minus the row's unmeasured requests) asks corpus_index order[k] in cycle k div N. Where
// the workload does not say N (a file corpus), it checks only that one corpus_index always asks
// the same prompt_id.
func CorpusOrder(c *finding.Collector, row contract.Row, wc *contract.Case, seed int64, recs []*record.Record) {
	offset, maxK := int64(0), int64(-1)
	for _, r := range recs {
		if r.Warmup {
			offset++
		}
	}
	var measured []*record.Record
	for _, r := range recs {
		if !r.Warmup && r.HasCorpus {
			measured = append(measured, r)
			maxK = max(maxK, r.Index-offset)
		}
	}
	if len(measured) == 0 || maxK >= 1<<24 {
		return
	}
	asks := map[int64]string{}
	for _, r := range measured {
		if id, ok := asks[r.CorpusIndex]; ok && id != r.PromptID {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "prompt_id"), reason.ErrRowMismatch, "row c%d-r%d: request %d asks %s as corpus_index %d, which another request of the row asks as %s", row.Concurrency, row.Repetition, r.Index, r.PromptID, r.CorpusIndex, id)
			return
		}
		asks[r.CorpusIndex] = r.PromptID
	}
	n, ok := corpusSize(wc)
	if !ok && wc != nil && wc.Corpus != nil && wc.Corpus.Source == contract.CorpusSourceTrace {
		// A trace replays each entry once in its order (the runner refuses more requests than
		// entries and a seeded order): request k asks entry k, whatever the entry count.
		n, ok = maxK+1, true
	}
	if !ok || maxK < 0 {
		return
	}
	order := metric.CorpusOrder(wc.PromptOrder, seed, n, maxK+1)
	for _, r := range measured {
		k := r.Index - offset
		if want, ok := corpusPromptID(wc, r.CorpusIndex); ok && k >= 0 && r.CorpusIndex == order[k] && r.PromptID != want {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "prompt_id"), reason.ErrRowMismatch, "row c%d-r%d: request %d asks corpus_index %d as prompt %s: the case's corpus names it %s", row.Concurrency, row.Repetition, r.Index, r.CorpusIndex, r.PromptID, want)
			return
		}
		if k < 0 || r.CorpusIndex != order[k] || r.Cycle != k/n {
			want := int64(-1)
			if k >= 0 {
				want = order[k]
			}
			c.Add(row.Records.Path, finding.Pointer(r.Line, "corpus_index"), reason.ErrRowMismatch, "row c%d-r%d: measured request %d asks corpus_index %d in cycle %d, the %s order of seed %d over %d prompts asks %d in cycle %d", row.Concurrency, row.Repetition, k, r.CorpusIndex, r.Cycle, orderName(wc.PromptOrder), seed, n, want, k/n)
			return
		}
	}
}

func orderName(o contract.ServingCasePromptOrder) contract.ServingCasePromptOrder {
	if o == "" {
		return contract.ServingCasePromptOrderSequential
	}
	return o
}

// CaseTimeout: a serving case's records fit its timeout_seconds (plus timeoutGraceSeconds),
// and a case that records it stopped is failed and says after how long.
func CaseTimeout(c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case, all []*record.Record) {
	if st := cr.Stopped; st != nil && cr.Status == contract.StatusPassed {
		c.Add(path, "/stopped", reason.ErrVerdictMismatch, "the case stopped (%s after %s s) and is recorded passed", st.Reason, record.FmtFloat(st.AfterSeconds))
	}
	if wc == nil || wc.TimeoutSeconds <= 0 || len(all) == 0 {
		return
	}
	first, last := all[0].Sched, int64(0)
	for _, r := range all {
		first = min(first, r.Sched)
		for _, t := range []struct {
			v   int64
			has bool
		}{{r.Send, r.HasSend}, {r.Sent, r.HasSent}, {r.Header, r.HasHdr}, {r.End, r.HasEnd}, {r.Close, r.HasClose}} {
			if t.has {
				last = max(last, t.v)
			}
		}
	}
	span := float64(last-first) / 1e9
	if limit := float64(wc.TimeoutSeconds) + timeoutGraceSeconds; span > limit {
		c.Add(path, "", reason.ErrTimeoutExceeded, "the case's records span %s s (first schedule to last close), beyond its timeout_seconds %d (+%g s for cancelled requests)", record.FmtFloat(span), wc.TimeoutSeconds, timeoutGraceSeconds)
	}
	if st := cr.Stopped; st != nil && st.Reason == contract.StoppedReasonTimeout && st.AfterSeconds < float64(wc.TimeoutSeconds) {
		c.Add(path, "/stopped/after_seconds", reason.ErrTimeoutExceeded, "stopped by its timeout after %s s, before its timeout_seconds %d", record.FmtFloat(st.AfterSeconds), wc.TimeoutSeconds)
	}
}

func fmtIntPtr(p *int64) string {
	if p == nil {
		return "absent"
	}
	return fmt.Sprint(*p)
}

func fmtFloatPtr(p *float64) string {
	if p == nil {
		return "null"
	}
	return record.FmtFloat(*p)
}

// Judgement checks a row's fidelity verdict against the one recomputed from its records, its
// recorded send calibration and its workload case's fidelity bound (metric's judgement, the one
// the runner applied): degraded, the calibration's per-send cost (the 0.9-quantile of its
// samples), and the recorded judgement's cause, bound, order statistic and its value.
func Judgement(c *finding.Collector, path, base string, fid contract.Fidelity, rf record.RowFacts, tol policy.Tolerance) {
	jd := rf.Judgement
	if fid.Degraded != rf.Degraded {
		why := "the records show no over-bound lag"
		if len(rf.Reasons) > 0 {
			why = rf.Reasons[0]
		}
		c.Add(path, base+"/fidelity/degraded", reason.ErrRowMismatch, "degraded %v, the records say %v (%s; bound %.3f ms at the %g-quantile)", fid.Degraded, rf.Degraded, why, jd.LagBoundMs, jd.Quantile)
	}
	if cal := fid.Calibration; cal != nil && cal.SendCostNs != metric.SendCostNs(cal.SamplesNs) {
		c.Add(path, base+"/fidelity/calibration/send_cost_ns", reason.ErrRowMismatch, "send cost %d ns, its samples' 0.9-quantile is %d ns", cal.SendCostNs, metric.SendCostNs(cal.SamplesNs))
	}
	rj := fid.Judgement
	if rj == nil {
		return // evidence written before the judgement was recorded
	}
	if string(rj.Cause) != jd.Cause || rj.Samples != int64(jd.Samples) || rj.Order != int64(jd.Order) || rj.Serialised != int64(jd.Serialised) ||
		rj.Quantile != jd.Quantile || rj.LagBoundMs != jd.LagBoundMs || !record.Within(rj.LagMs, jd.LagMs, tol) {
		c.Add(path, base+"/fidelity/judgement", reason.ErrRowMismatch, "judgement cause %s, order %d of %d, lag %s ms (bound %s ms at the %g-quantile, %d serialised); the records say cause %s, order %d of %d, lag %s ms (bound %s ms at the %g-quantile, %d serialised)",
			rj.Cause, rj.Order, rj.Samples, record.FmtFloat(rj.LagMs), record.FmtFloat(rj.LagBoundMs), rj.Quantile, rj.Serialised,
			jd.Cause, jd.Order, jd.Samples, record.FmtFloat(jd.LagMs), record.FmtFloat(jd.LagBoundMs), jd.Quantile, jd.Serialised)
	}
}

// TraceRate checks a trace replay row's offered rate against the one recomputed from its bound
// trace by the runner's rule (metric.TraceRate over the case's measured entries, its requests or
// else every entry, at the corpus's time scale): a replay offers the trace's own rate, so another
// is load_not_reached. Without the bound trace nothing is checked here (RowSchedule notes why).
func TraceRate(s *load.Snapshot, c *finding.Collector, path string, j int, row contract.Row, wc *contract.Case) {
	if wc == nil || wc.Corpus == nil || wc.Corpus.Source != contract.CorpusSourceTrace {
		return
	}
	entries, _ := traceOf(s, wc.Corpus)
	if len(entries) == 0 {
		return
	}
	scale := 1.0
	if wc.Corpus.TimeScale != nil {
		scale = *wc.Corpus.TimeScale
	}
	n := int64(len(entries))
	if wc.Requests != nil && *wc.Requests < n {
		n = *wc.Requests
	}
	var want *float64
	if n >= 2 {
		last, ok := trace.OffsetNs(entries[n-1].TimestampMs, entries[0].TimestampMs, scale)
		if !ok {
			return // Replay reports a schedule that cannot be replayed
		}
		want = metric.TraceRate(n, 0, last)
	}
	if got := row.Fidelity.OfferedRate; (got == nil) != (want == nil) || (got != nil && *got != *want) {
		c.Add(path, finding.Pointer("rows", j, "fidelity", "offered_rate"), reason.ErrLoadNotReached, "trace replay row c%d-r%d records offered rate %s, its trace's %d measured entries offer %s requests/s at time scale %s", row.Concurrency, row.Repetition, fmtFloatPtr(got), n, fmtFloatPtr(want), record.FmtFloat(scale))
	}
}

// Calibration bounds a row's send calibration samples (observed: a timed send each, nothing in
// the evidence can recompute one; send_cost_ns and the fidelity judgement are recomputed from
// them by Judgement): the runner times metric.CalibrationSends sends (at most
// metric.MaxCalibrationSends may be recorded), fewer only when the case's context was cancelled
// during the calibration, which a passed case never was; every sample is a send timed by a
// monotonic clock, so above 0 ns. The samples' sum is bounded by the case's duration
// (CalibrationSeconds, checked with the rows' windows). A row of a case that did not pass may
// hold fewer samples.
func Calibration(c *finding.Collector, path string, j int, row contract.Row, passed bool) {
	cal := row.Fidelity.Calibration
	if cal == nil {
		return // a row written before the calibration existed
	}
	base := finding.Pointer("rows", j, "fidelity", "calibration", "samples_ns")
	n := len(cal.SamplesNs)
	switch {
	case n > metric.MaxCalibrationSends:
		c.Add(path, base, reason.ErrRowMismatch, "row c%d-r%d records %d calibration samples, more than the %d a calibration may time", row.Concurrency, row.Repetition, n, metric.MaxCalibrationSends)
	case n < metric.CalibrationSends && passed:
		c.Add(path, base, reason.ErrRowMismatch, "row c%d-r%d of a passed case records %d calibration samples: the runner times %d, fewer only when the case was cancelled during its calibration", row.Concurrency, row.Repetition, n, metric.CalibrationSends)
	}
	for k, v := range cal.SamplesNs {
		if v <= 0 {
			c.Add(path, finding.Pointer("rows", j, "fidelity", "calibration", "samples_ns", k), reason.ErrRowMismatch, "row c%d-r%d calibration sample %d is %d ns: a timed send takes time", row.Concurrency, row.Repetition, k, v)
			return
		}
	}
}

// CalibrationSeconds is the time a row's send calibration took, the sum of its samples in s (0
// without one): the calibration runs inside the case, before the row's window, so a case lasts
// at least its rows' windows and calibrations together.
func CalibrationSeconds(row contract.Row) float64 {
	var ns int64
	if cal := row.Fidelity.Calibration; cal != nil {
		for _, v := range cal.SamplesNs {
			ns += max(v, 0)
		}
	}
	return float64(ns) / 1e9
}
