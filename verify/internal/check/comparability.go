package check

import (
	"fmt"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// identityFrom is a catalogue identity.
func identityFrom(id metric.Identity) rowcheck.Identity {
	return rowcheck.Identity{Unit: string(id.Unit), Aggregation: id.Aggregation, Direction: id.Direction, Formula: id.Formula}
}

// rowDefinition returns the identity the catalogue (schemas/metric, docs/metrics.md) defines for
// a row metric name.
func RowDefinition(name string) (rowcheck.Identity, bool) {
	id, ok := metric.RowIdentity(name)
	return identityFrom(id), ok
}

// caseDefinition returns the identity the catalogue defines for a serving case metric name.
func CaseDefinition(name string) (rowcheck.Identity, bool) {
	id, ok := metric.CaseIdentity(name)
	return identityFrom(id), ok
}

// Comparability: the evidence is labelled so that only like-for-like rows can ever be
// compared. The workload binding (id, variant, kind, seed, the cases and rows it declares), the
// effective configuration, the prompt set (recomputed from the corpus), every metric's identity
// (unit, aggregation, direction and formula id as docs/metrics.md defines them) and the identity
// the workload's metric rules expect of it: a request-window throughput is never labelled, or
// compared, as a decode rate.
func Comparability(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckComparability}
	rc := s.RC
	file := s.Receipt.Path
	// Metric identities against their definitions.
	for _, p := range SortedCaseResults(s) {
		cr := s.CaseResults[p]
		if len(cr.Rows) == 0 {
			continue
		}
		for j, row := range cr.Rows {
			for k, m := range row.Metrics {
				if def, ok := RowDefinition(m.Name); ok && !m.Diagnostic && rowcheck.IdentityOf(m) != def {
					c.Add(p, finding.Pointer("rows", j, "metrics", k), reason.ErrFormulaMismatch, "%s carries %s; docs/metrics.md defines %s", m.Name, rowcheck.IdentityOf(m), def)
				}
			}
		}
		for k, m := range cr.Metrics {
			if def, ok := CaseDefinition(m.Name); ok && !m.Diagnostic && rowcheck.IdentityOf(m) != def {
				c.Add(p, finding.Pointer("metrics", k), reason.ErrFormulaMismatch, "%s carries %s; docs/metrics.md defines %s", m.Name, rowcheck.IdentityOf(m), def)
			}
		}
	}
	w := s.Workload
	if w == nil {
		return c.SkippedIfEmpty("the workload is not available: its binding, corpus and rules were not checked")
	}
	wpath := rc.Workload.Path
	if w.ID != rc.Workload.ID {
		c.Add(file, "/workload/id", reason.ErrWorkloadMismatch, "the receipt names workload %q, %s declares %q", rc.Workload.ID, wpath, w.ID)
	}
	if w.Kind != rc.Qualification.Kind {
		c.Add(file, "/qualification/kind", reason.ErrWorkloadMismatch, "kind %s, the workload's kind is %s", rc.Qualification.Kind, w.Kind)
	}
	if !rowcheck.EqualInt(w.Determinism.Seed, rc.Workload.Seed) {
		c.Add(file, "/workload/seed", reason.ErrWorkloadMismatch, "seed %s, the workload's seed is %s", derefInt(rc.Workload.Seed), derefInt(w.Determinism.Seed))
	}
	v := s.Variant()
	if v == nil {
		c.Add(file, "/workload/variant", reason.ErrWorkloadMismatch, "variant %q is not declared by %s", rc.Workload.Variant, wpath)
		return c.Result()
	}
	// Results: every declared case once per repetition, nothing else.
	count := map[string]int{}
	for i, r := range rc.Results {
		count[r.ID]++
		if s.Case(r.ID) == nil {
			c.Add(file, finding.Pointer("results", i, "id"), reason.ErrWorkloadMismatch, "result %q is not a case of variant %s", r.ID, v.ID)
		}
	}
	for _, cs := range v.Cases {
		if n := count[cs.ID]; n != int(w.Determinism.Repetitions) {
			c.Add(file, "/results", reason.ErrWorkloadMismatch, "case %s has %d results, the workload declares %d repetitions", cs.ID, n, w.Determinism.Repetitions)
		}
	}
	checkResultIdentity(s, c, v)
	checkRunConfig(s, c, v)
	checkLaunch(s, c, v)
	for i, r := range rc.Results {
		if r.CaseResult == nil {
			continue
		}
		cr := s.CaseResults[r.CaseResult.Path]
		wc := s.Case(r.ID)
		if cr == nil || wc == nil {
			continue
		}
		p := r.CaseResult.Path
		if !finding.CanonicalEqual(map[string]any(cr.EffectiveConfig), map[string]any(v.EffectiveConfig)) {
			c.Add(p, "/effective_config", reason.ErrConfigMismatch, "the effective configuration differs from variant %s's", v.ID)
		}
		if wc.Kind == contract.CaseKindServing {
			comparableRows(s, c, i, p, cr, wc)
			checkRowIdentity(c, p, cr, wc)
		}
	}
	// The comparison policy's rules expect the identity the evidence carries.
	if cp := w.ComparisonPolicy; cp != nil {
		for k, rule := range cp.MetricRules {
			want := rowcheck.Identity{Unit: rule.Unit, Aggregation: rule.Aggregation, Direction: rule.Direction, Formula: rule.Formula}
			for _, occ := range metricOccurrences(s, rule.Scope, rule.ResultID, rule.Metric) {
				if got := rowcheck.IdentityOf(occ.m); got != want {
					c.Add(occ.file, occ.ptr, reason.ErrFormulaMismatch, "%s carries %s; rule %s of %s compares %s%s", rule.Metric, got, finding.Pointer("comparison_policy", "metric_rules", k), wpath, want, rowcheck.RateWarning(got, want))
				}
			}
		}
	}
	return c.Result()
}

type occurrence struct {
	file, ptr string
	m         contract.Metric
}

// metricOccurrences finds a metric at a rule's scope: each row of result id's case results
// (scope row) or each of its results (scope result).
func metricOccurrences(s *load.Snapshot, scope contract.MetricRuleScope, resultID, metric string) []occurrence {
	var out []occurrence
	for i, r := range s.RC.Results {
		if r.ID != resultID {
			continue
		}
		if scope == contract.MetricRuleScopeResult {
			for k, m := range r.Metrics {
				if m.Name == metric {
					out = append(out, occurrence{s.Receipt.Path, finding.Pointer("results", i, "metrics", k), m})
				}
			}
			continue
		}
		if r.CaseResult == nil || s.CaseResults[r.CaseResult.Path] == nil {
			continue
		}
		for j, row := range s.CaseResults[r.CaseResult.Path].Rows {
			for k, m := range row.Metrics {
				if m.Name == metric {
					out = append(out, occurrence{r.CaseResult.Path, finding.Pointer("rows", j, "metrics", k), m})
				}
			}
		}
	}
	return out
}

// comparableRows: a serving case's rows are exactly the declared concurrency x repetition grid,
// and each row's prompt set is the corpus's, in the corpus's order.
func comparableRows(s *load.Snapshot, c *finding.Collector, _ int, p string, cr *contract.CaseResultDoc, wc *contract.Case) {
	type key struct{ c, r int64 }
	have := map[key]bool{}
	// A capacity search's rows are its probes (checkCapacity replays them), not the grid.
	search := wc.CapacitySearch != nil
	for j, row := range cr.Rows {
		k := key{row.Concurrency, row.Repetition}
		if !search && (have[k] || !slices.Contains(wc.Concurrency, row.Concurrency) || row.Repetition >= wc.Repetitions) {
			c.Add(p, finding.Pointer("rows", j), reason.ErrUnlikeRows, "row c%d r%d is not declared (concurrency %v, %d repetitions) or repeats", row.Concurrency, row.Repetition, wc.Concurrency, wc.Repetitions)
		}
		have[k] = true
		wantLoop := contract.RowLoopClosed
		if wc.Rate != nil || (wc.Schedule != nil && !metric.Closed(wc.Schedule)) || (wc.Corpus != nil && wc.Corpus.Source == contract.CorpusSourceTrace) {
			wantLoop = contract.RowLoopOpen
		}
		if row.Loop != wantLoop {
			c.Add(p, finding.Pointer("rows", j, "loop"), reason.ErrUnlikeRows, "loop %s, the case declares %s", row.Loop, wantLoop)
		}
	}
	if !search && len(have) != len(wc.Concurrency)*int(wc.Repetitions) {
		c.Add(p, "/rows", reason.ErrUnlikeRows, "%d rows, the case declares %d × %d", len(cr.Rows), len(wc.Concurrency), wc.Repetitions)
	}
	checkToolCalls(s, c, cr, wc)
	gen, note := regenCorpus(s, c, wc)
	if gen != nil && gen.n == 0 {
		gen, note = nil, "an empty corpus"
	}
	if gen == nil {
		c.Note("case %s: %s", wc.ID, note)
		return
	}
	want, err := regenerate(s, c, cr, wc, gen)
	if err != nil {
		c.Note("case %s: prompt set: %v", wc.ID, err)
		return
	}
	// Measured request k asks prompt metric.CorpusOrder's k-th (k mod N in the declared order; the
	// corpus cycles when the case declares requests). A scheduled row's size is its schedule's
	// (checkStages checks it), so its prompts are checked as a prefix.
	n := int64(gen.n)
	if wc.Requests != nil {
		n = *wc.Requests
	}
	if wc.Schedule != nil {
		n = 1
		for _, row := range cr.Rows {
			n = max(n, min(row.Requests, metric.MaxScheduleArrivals))
		}
	}
	order := metric.CorpusOrder(wc.PromptOrder, seed(s), int64(gen.n), n)
	ids := make([]string, n)
	for k := range ids {
		ids[k] = gen.id(int(order[k]))
	}
	for j, row := range cr.Rows {
		if row.PromptSetSHA256 != want {
			c.Add(p, finding.Pointer("rows", j, "prompt_set_sha256"), reason.ErrCorpusMismatch, "prompt set %s, the corpus hashes to %s", row.PromptSetSHA256, want)
		}
		f := s.Files[row.Records.Path]
		if f == nil || f.Records == nil {
			continue
		}
		got := measuredPromptIDs(RowRecords(nil, cr, row, f.Records))
		want := ids
		if e := row.Ended; (wc.Schedule != nil || (e != nil && e.Reason != contract.RowEndReasonRequests)) && len(got) <= len(ids) {
			want = ids[:len(got)] // a row its duration or a stop rule ended sent a prefix of its requests
		}
		if !slices.Equal(got, want) {
			c.Add(row.Records.Path, "", reason.ErrCorpusMismatch, "the measured requests ask prompts %s, the corpus is %s", clipList(got), clipList(ids))
		}
	}
}

func clipList(s []string) string {
	if len(s) > 6 {
		return fmt.Sprintf("%v… (%d)", s[:6], len(s))
	}
	return fmt.Sprint(s)
}

// measuredPromptIDs lists the prompt ids of the measured requests in index order.
func measuredPromptIDs(recs []*record.Record) []string {
	var measured []*record.Record
	for _, r := range recs {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	slices.SortStableFunc(measured, func(a, b *record.Record) int { return rowcheck.CmpInt(a.Index, b.Index) })
	out := make([]string, len(measured))
	for i, r := range measured {
		out[i] = r.PromptID
	}
	return out
}
