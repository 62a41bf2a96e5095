package check

import (
	"math"
	"slices"
	"sort"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/driver"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Tolerances: correctness and numerical tolerances. A passed verdict; every result's summary
// equal to its case result (or driver result); every driver result's tolerance outcomes and
// verdict recomputed from its numbers against the workload's declared tolerances, and each failed
// tolerance reported with its numbers; in a passed result no failed request or failed assertion; every row's
// counts, window, output set, fidelity and metrics recomputed from its request records within the
// policy's recompute tolerance; every case metric recomputed from its rows; command cases carry
// exactly their declared metrics and runner metrics that agree with the status and expected exit
// codes; declared tolerances name metrics of their result.
func Tolerances(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckTolerances}
	rc := s.RC
	file := s.Receipt.Path
	tol := s.Policy.Recompute
	if in := rc.Qualification.Interruption; rc.Qualification.Verdict == contract.QualificationVerdictInterrupted && in != nil {
		c.Add(file, "/qualification/interruption", reason.ErrInterrupted, "qualrun was interrupted by %s during %s: the receipt binds a partial campaign, never a result", in.Signal, in.Phase)
	} else if rc.Qualification.Verdict != contract.QualificationVerdictPassed {
		c.Add(file, "/qualification/verdict", reason.ErrVerdictFailed, "the campaign's verdict is %s (%d notes)", rc.Qualification.Verdict, len(rc.Notes))
	}
	checkDurations(s, c)
	passed, failed := 0, 0
	for i, r := range rc.Results {
		if r.Status == contract.StatusPassed {
			passed++
		} else {
			failed++
		}
		if r.CaseResult == nil {
			continue
		}
		path := r.CaseResult.Path
		if dr := s.DriverResults[path]; dr != nil {
			driver.Check(s, c, i, r, path, dr)
			continue
		}
		cr := s.CaseResults[path]
		if cr == nil {
			c.Note("case result %s unreadable: result %d not recomputed", path, i)
			continue
		}
		base := finding.Pointer("results", i)
		if cr.CaseID != r.ID {
			c.Add(file, base+"/id", reason.ErrResultMismatch, "result %q binds the case result of %q", r.ID, cr.CaseID)
		}
		if r.Status == contract.StatusPassed && cr.Status != contract.StatusPassed {
			c.Add(file, base+"/status", reason.ErrResultMismatch, "result %q is passed, its case result says %s", r.ID, cr.Status)
		}
		if !finding.CanonicalEqual(r.Metrics, cr.Metrics) {
			c.Add(file, base+"/metrics", reason.ErrResultMismatch, "result %q's metrics differ from its case result's", r.ID)
		}
		names := map[string]bool{}
		for _, m := range cr.Metrics {
			names[m.Name] = true
		}
		for j, t := range cr.Tolerances {
			if !names[t.Metric] {
				c.Add(path, finding.Pointer("tolerances", j, "metric"), reason.ErrUnknownTolerance, "tolerance for %q, which is not a metric of this result", t.Metric)
			}
		}
		wc := s.Case(r.ID)
		if len(cr.Rows) > 0 || (wc != nil && wc.Kind == contract.CaseKindServing) {
			checkServing(s, c, path, cr, wc, tol)
		} else {
			Command(c, path, cr, wc)
		}
	}
	checkDerived(s, c)
	degradedNotPublishable(s, c)
	rowcheck.MetricList(c, file, "/metrics", rc.Metrics, metric.MetricsOf(metric.ReceiptCounts(int64(passed), int64(failed), len(rc.Results))), tol, nil)
	return c.Result()
}

// rowRecords returns the records of a row (those whose case and row match) and reports the others.
func RowRecords(c *finding.Collector, cr *contract.CaseResultDoc, row contract.Row, set *record.Set) []*record.Record {
	var out []*record.Record
	for i := range set.Records {
		r := &set.Records[i]
		if r.CaseID != cr.CaseID || r.Concurrency != row.Concurrency || r.Repetition != row.Repetition {
			if c != nil {
				c.Add(row.Records.Path, finding.Pointer(r.Line), reason.ErrRowMismatch, "record of case %s row c%d r%d in the records of case %s row c%d r%d", r.CaseID, r.Concurrency, r.Repetition, cr.CaseID, row.Concurrency, row.Repetition)
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// rowSpecOf is the specification of a recorded row.
func RowSpecOf(row contract.Row, wc *contract.Case) record.RowSpec {
	spec := record.RowSpec{Concurrency: row.Concurrency, Loop: string(row.Loop), Offered: row.Fidelity.OfferedRate, Bound: metric.BoundOf(nil), Legacy: row.Fidelity.Judgement == nil}
	if cal := row.Fidelity.Calibration; cal != nil {
		spec.Cal = metric.Calibration{SamplesNs: cal.SamplesNs}
		if cal.Connections != nil {
			spec.Cal.Connections = *cal.Connections
		}
	}
	if wc != nil {
		spec.Bound = metric.BoundOf(wc.Fidelity)
		spec.SLOKnown = true
		if wc.SLO != nil {
			spec.SLO = *wc.SLO
		}
	}
	return spec
}

func checkServing(s *load.Snapshot, c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case, tol policy.Tolerance) {
	var all []*record.Record // every row's records, for the case's timeout
	unchecked := 0           // rows without in_flight_peak
	defer func() {
		rowcheck.CaseTimeout(c, path, cr, wc, all)
		if unchecked > 0 {
			c.Note("%d of %d rows of %s record no in_flight_peak (evidence before it existed): their achieved concurrency was not checked", unchecked, len(cr.Rows), path)
		}
	}()
	fig := rowcheck.NewFigures(len(cr.Rows))
	sc, note := rowcheck.SessionCorpusOf(s, c, cr, wc)
	if note != "" {
		c.Note("case %s: %s", cr.CaseID, note)
	}
	for j, row := range cr.Rows {
		base := finding.Pointer("rows", j)
		f := s.Files[row.Records.Path]
		if f == nil || f.Records == nil {
			c.Note("records %s unreadable: row %d of %s not recomputed", row.Records.Path, j, path)
			continue
		}
		if f.Records.InvalidLines > 0 {
			c.Note("%d invalid records in %s: row %d of %s recomputed from the valid ones", f.Records.InvalidLines, row.Records.Path, j, path)
		}
		recs := RowRecords(c, cr, row, f.Records)
		rf := record.RecomputeRow(RowSpecOf(row, wc), recs)
		fig.Add(j, rf.Metrics, recs)
		checkUsagePlausible(c, row.Records.Path, wc, recs)
		if cr.Status == contract.StatusPassed {
			for _, r := range recs {
				if r.Warmup {
					continue
				}
				if r.Failed && !rowcheck.ExcusedFailure(row, wc, r) {
					c.Add(row.Records.Path, finding.Pointer(r.Line, "error"), reason.ErrRequestFailed, "request %d failed (%s) in a passed result", r.Index, r.ErrClass)
				} else if r.AssertFail > 0 {
					c.Add(row.Records.Path, finding.Pointer(r.Line, "assertions"), reason.ErrRequestFailed, "request %d failed %d assertions in a passed result", r.Index, r.AssertFail)
				}
			}
		}
		for _, x := range []struct {
			field     string
			got, want int64
		}{{"requests", row.Requests, rf.Requests}, {"successes", row.Successes, rf.Successes}, {"failures", row.Failures, rf.Failures}} {
			if x.got != x.want {
				c.Add(path, base+"/"+x.field, reason.ErrRowMismatch, "%s %d, the records say %d", x.field, x.got, x.want)
			}
		}
		if !record.Within(row.WindowSeconds, rf.WindowSeconds, tol) {
			c.Add(path, base+"/window_seconds", reason.ErrRowMismatch, "window %s s, the records say %s s", record.FmtFloat(row.WindowSeconds), record.FmtFloat(rf.WindowSeconds))
		}
		if !EqualPtr(row.OutputSetSHA256, rf.OutputSet) {
			c.Add(path, base+"/output_set_sha256", reason.ErrRowMismatch, "output set %s, the records hash to %s", rowcheck.Deref(row.OutputSetSHA256), rowcheck.Deref(rf.OutputSet))
		}
		fid := row.Fidelity
		for _, x := range []struct {
			field     string
			got, want float64
		}{{"schedule_lag_p50_ms", fid.ScheduleLagP50Ms, rf.LagP50}, {"schedule_lag_p99_ms", fid.ScheduleLagP99Ms, rf.LagP99}, {"schedule_lag_max_ms", fid.ScheduleLagMaxMs, rf.LagMax}, {"achieved_rate", fid.AchievedRate, rf.Achieved}} {
			if !record.Within(x.got, x.want, tol) {
				c.Add(path, base+"/fidelity/"+x.field, reason.ErrRowMismatch, "%s %s, the records say %s", x.field, record.FmtFloat(x.got), record.FmtFloat(x.want))
			}
		}
		rowcheck.Judgement(c, path, base, fid, rf, tol)
		rowcheck.Calibration(c, path, j, row, cr.Status == contract.StatusPassed)
		rowcheck.RowIdentity(c, row, wc, recs)
		sc.Check(c, path, j, row, recs)
		if !rowcheck.Sessions(c, row, wc, seed(s), recs) {
			rowcheck.Schedule(c, path, row, wc, seed(s), recs)
			rowcheck.CorpusOrder(c, row, wc, seed(s), recs)
			rowcheck.RowSchedule(s, c, path, j, row, wc, seed(s), recs, tol)
		}
		rowcheck.RowEnd(c, path, j, row, wc, recs, cr.Status == contract.StatusPassed)
		if !rowcheck.Load(c, path, j, row, wc, recs, tol) {
			unchecked++
		}
		rowcheck.TraceRate(s, c, path, j, row, wc)
		all = append(all, recs...)
		var skip func(string) bool
		if wc == nil {
			skip = func(n string) bool { return slices.Contains(record.MetricsUnsetWithoutSLO, n) }
		}
		rowcheck.MetricList(c, path, base+"/metrics", row.Metrics, rf.Metrics, tol, skip)
		rowcheck.RowTelemetry(s, c, path, base, row, recs, tol)
		if !rowcheck.ServerScrapes(s, c, path, base, row, tol) {
			rowcheck.ServerRatios(c, path, base, row, tol)
		}
		rowcheck.RowCache(c, path, base, row, wc, cr.Status, recs)
		if wc != nil {
			rowcheck.RowReset(c, path, base, row, wc, s.Recipes[wc.Launch], recs)
		}
		rowcheck.RowLedger(c, path, base, row, wc, cr.Status, recs)
	}
	if len(cr.Rows) > 0 {
		rowcheck.MetricList(c, path, "/metrics", cr.Metrics, record.RecomputeCase(cr.Rows), tol, nil)
	}
	rowcheck.CapacityFigures(s, c, path, cr, wc, fig, tol)
}

func EqualPtr(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// runnerMetrics are the metrics the runner writes for a command case it produced.
var runnerMetrics = []string{"case_pass", "exit_code", "output_assertion_failures"}

// Command checks a command case's result against its declaration.
func Command(c *finding.Collector, path string, cr *contract.CaseResultDoc, wc *contract.Case) {
	byName := map[string]contract.Metric{}
	idx := map[string]int{}
	var names []string
	for k, m := range cr.Metrics {
		byName[m.Name] = m
		idx[m.Name] = k
		names = append(names, m.Name)
	}
	sort.Strings(names)
	producer := contract.ResultProtocolProducerRunner
	if wc != nil && wc.ResultProtocol != nil {
		producer = wc.ResultProtocol.Producer
	}
	if producer == contract.ResultProtocolProducerCommand {
		declared := slices.Clone(wc.ResultProtocol.DeclaredMetrics)
		sort.Strings(declared)
		if !slices.Equal(names, declared) {
			c.Add(path, "/metrics", reason.ErrDeclaredMetrics, "metrics %v, the workload declares %v", names, declared)
		}
		return
	}
	if wc != nil && wc.ResultProtocol != nil {
		for _, d := range wc.ResultProtocol.DeclaredMetrics {
			if _, ok := byName[d]; !ok {
				c.Add(path, "/metrics", reason.ErrDeclaredMetrics, "declared metric %s is missing", d)
			}
		}
	}
	for _, n := range names {
		if !slices.Contains(runnerMetrics, n) {
			c.Add(path, finding.Pointer("metrics", idx[n], "name"), reason.ErrDeclaredMetrics, "%s is not a runner metric %v", n, runnerMetrics)
		}
	}
	pass, ok := byName["case_pass"]
	if !ok {
		if wc != nil {
			c.Add(path, "/metrics", reason.ErrDeclaredMetrics, "a runner-produced case result has no case_pass")
		}
		return
	}
	want := 0.0
	if cr.Status == contract.StatusPassed {
		want = 1
	}
	if pass.Value != want {
		c.Add(path, finding.Pointer("metrics", idx["case_pass"], "value"), reason.ErrDeclaredMetrics, "case_pass %s with status %s", record.FmtFloat(pass.Value), cr.Status)
	}
	if cr.Status != contract.StatusPassed {
		return
	}
	if m, ok := byName["output_assertion_failures"]; ok && m.Value != 0 {
		c.Add(path, finding.Pointer("metrics", idx["output_assertion_failures"], "value"), reason.ErrDeclaredMetrics, "%s output assertion failures in a passed result", record.FmtFloat(m.Value))
	}
	if m, ok := byName["exit_code"]; ok && wc != nil && len(wc.ExpectedExitCodes) > 0 {
		if m.Value != math.Trunc(m.Value) || !slices.Contains(wc.ExpectedExitCodes, int64(m.Value)) {
			c.Add(path, finding.Pointer("metrics", idx["exit_code"], "value"), reason.ErrDeclaredMetrics, "exit code %s is not expected %v in a passed result", record.FmtFloat(m.Value), wc.ExpectedExitCodes)
		}
	}
}

// checkUsagePlausible: a record the runner kept as a success must not carry usage that no
// server can have produced for its request: more completion tokens than the case's max_tokens
// (usage_exceeds_max_tokens), or no completion token beside streamed content (inconsistent_usage)
// — failure classes the runner assigns (docs/metrics.md), recomputed here from the record and the
// workload, so a re-signed record relabelled as a success is a finding (request_failed).
func checkUsagePlausible(c *finding.Collector, path string, wc *contract.Case, recs []*record.Record) {
	if wc == nil {
		return
	}
	for _, r := range recs {
		if r.Failed || !r.HasUsage {
			continue
		}
		switch {
		case wc.MaxTokens > 0 && r.CompletionTokens > wc.MaxTokens:
			c.Add(path, finding.Pointer(r.Line, "usage", "completion_tokens"), reason.ErrRequestFailed, "request %d is recorded as a success with %d completion tokens for max_tokens %d (usage_exceeds_max_tokens)", r.Index, r.CompletionTokens, wc.MaxTokens) // not a contract value: the record's member name
		case r.CompletionTokens == 0 && len(r.Content) > 0:
			c.Add(path, finding.Pointer(r.Line, "usage", "completion_tokens"), reason.ErrRequestFailed, "request %d is recorded as a success with 0 completion tokens beside %d token events (inconsistent_usage)", r.Index, len(r.Content)) // not a contract value: the record's member name
		}
	}
}

// seed is the workload's determinism seed (0 when it declares none, as the runner takes it).
func seed(s *load.Snapshot) int64 {
	if s.Workload != nil && s.Workload.Determinism.Seed != nil {
		return *s.Workload.Determinism.Seed
	}
	return 0
}

// degradedNotPublishable: when the policy requires publication, a degraded open-loop row (the
// row did not run its offered rate: the client fidelity of docs/metrics.md) is a finding of this
// check, the one that recomputes the row's fidelity, whatever its case declares (measures_saturation
// lets the case pass, never the row stand as a rate claim). It was filed under source before.
func degradedNotPublishable(s *load.Snapshot, c *finding.Collector) {
	if !s.Policy.RequirePublishable || s.Relax[policy.RelaxUnpublished] {
		return
	}
	for _, r := range degradedRows(s) {
		why := "its case does not declare measures_saturation: true, so the case should have failed"
		if r.saturation {
			why = "its case declares measures_saturation: true, which lets the case pass but never makes the row a measurement of its offered rate"
		}
		c.Add(r.file, finding.Pointer("rows", r.index, "fidelity", "degraded"), reason.ErrDegradedRow, "%s is degraded (it did not run its offered rate): a degraded open-loop row is never publishable as a rate claim (%s)", r, why)
	}
}
