package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// Schema is the contract of a View's JSON form (qualkit.report-view.v1, docs/contracts/report-view.v1.md).
const Schema = "qualkit." + contract.ReportView

// The parts of a View are the contract's types.
type (
	Receipt      = contract.ViewReceipt
	Verification = contract.ViewVerification
	Check        = contract.ViewCheck
	Finding      = contract.ViewFinding
	Source       = contract.ViewSource
	Workload     = contract.ViewWorkload
	Run          = contract.ViewRun
	Environment  = contract.ViewEnvironment
	Artifact     = contract.Artifact
	Case         = contract.ViewCase
	Row          = contract.ViewRow
	Distribution = contract.ViewDistribution
	Throughput   = contract.ViewThroughput
	Fidelity     = contract.ViewFidelity
	Lifecycle    = contract.ViewLifecycle
	Event        = contract.ViewEvent
	Comparison   = contract.ViewComparison
	Difference   = contract.ViewDifference
	RowDelta     = contract.ViewRowDelta
	Delta        = contract.ViewDelta
	Rule         = contract.ViewRule
)

// View is everything a report shows: each receipt with its verification and its rows as the
// request records recompute them, and the comparison of each later receipt with the first. Its
// JSON form is the embedded ReportViewDoc:
//   - Schema is always Schema;
//   - Verifier is the qualverify version that built the view;
//   - Verified is true when every receipt verified. A view that is not must only be shown
//     stamped UNVERIFIED (Unverified);
//   - Unverified is set by the caller that renders a view of evidence that did not verify
//     (qualverify report --unverified-unsafe); every rendering then stamps every section.
//
// Besides the document, a View holds what only the page draws: each distribution's samples.
type View struct {
	contract.ReportViewDoc
	// samples are each distribution's per-request samples, sorted (the CDF), by where the
	// distribution is in the view.
	samples map[distKey][]float64
	// telemetry are each row's device telemetry samples (distKey metric ""), for the page only.
	telemetry map[distKey][]contract.TelemetrySampleDoc
	// figures are each case's capacity, Pareto front and intervals ([receipt, case]), and
	// across the intervals across receipts (figures.go), for the page and the text only.
	figures map[[2]int]*caseFigures
	across  []Across
	// load are each row's load shape as recorded (ended, stages, series, replay; distKey metric
	// "") and each case's stop (kase's row -1), for the page only (load.go).
	load    map[distKey]contract.Row
	stopped map[distKey]*contract.Stopped
}

// distKey is where a distribution is: Receipts[receipt].Cases[kase].Rows[row], its metric.
type distKey struct {
	receipt, kase, row int
	metric             string
}

// samplesOf returns the sorted samples of Receipts[receipt].Cases[kase].Rows[row]'s distribution
// of metric (nil when it has none).
func (v *View) samplesOf(receipt, kase, row int, metric string) []float64 {
	return v.samples[distKey{receipt, kase, row, metric}]
}

// title names a receipt for people: its id, or its path when it could not be read.
func title(r Receipt) string {
	if r.ReceiptID != "" {
		return r.ReceiptID
	}
	return r.Path + " (unreadable receipt)"
}

// receiptState is what Build keeps of a receipt beside its page, to compare it: its rows and
// their recomputed metrics by case and row, and the samples of each row's distributions.
type receiptState struct {
	rowsByKey    map[rowKey]*Row
	metricsByRow map[rowKey][]contract.Metric
	// samples[case][row][metric] are the sorted per-request samples.
	samples [][]map[string][]float64
}

type rowKey struct {
	caseID  string
	caseRep int64
	row     string
}

// distributions are the row distributions a report shows, in order.
var distributions = []struct {
	metric contract.DistributionMetric
	label  contract.DistributionLabel
}{
	{contract.DistributionMetricTTFTMs, contract.DistributionLabelTTFT},
	{contract.DistributionMetricTPOTMs, contract.DistributionLabelTPOT},
	{contract.DistributionMetricE2EMs, contract.DistributionLabelE2E},
	{contract.DistributionMetricICLMs, contract.DistributionLabelInterEventICL},
	{contract.DistributionMetricScheduleLagMs, contract.DistributionLabelScheduleLag},
}

// ErrTooManyReceipts: a report shows at most MaxReceipts receipts.
var ErrTooManyReceipts = errors.New("too many receipts")

// Build verifies each receipt (verify.Inspect with policy and opts) and compares every later
// receipt with the first (verify.Compare). The error is non-nil only when a verification could not
// be carried out; a rejected receipt is a view with Verified false. version names the verifier.
func Build(ctx context.Context, evidence []verify.Evidence, policy verify.Policy, version string, opts ...verify.Option) (*View, error) {
	if len(evidence) == 0 {
		return nil, fmt.Errorf("report: no receipt")
	}
	if len(evidence) > MaxReceipts {
		return nil, fmt.Errorf("%w: %d receipts, a report shows at most %d", ErrTooManyReceipts, len(evidence), MaxReceipts)
	}
	v := &View{ReportViewDoc: contract.ReportViewDoc{Schema: Schema, Verifier: nonEmpty(version, "dev"), Verified: true, Receipts: []Receipt{},
		Comparisons: []Comparison{}}, samples: map[distKey][]float64{}, telemetry: map[distKey][]contract.TelemetrySampleDoc{},
		figures: map[[2]int]*caseFigures{}, load: map[distKey]contract.Row{}, stopped: map[distKey]*contract.Stopped{}}
	var states []receiptState
	for i, ev := range evidence {
		in, err := verify.Inspect(ctx, ev, policy, opts...)
		if err != nil {
			return nil, fmt.Errorf("verify %s: %w", ev.Receipt, err)
		}
		r, st := receiptOf(in)
		if string(r.Verification.Verdict) != string(verify.Verified) {
			v.Verified = false
		}
		v.Receipts = append(v.Receipts, r)
		states = append(states, st)
		if in.Receipt != nil {
			for k, ce := range in.Cases {
				if f := figuresOf(ce); f != nil {
					v.figures[[2]int{i, k}] = f
					f.into(&v.Receipts[i].Cases[k])
				}
				v.keepLoad(i, k, ce)
				for j, re := range ce.Rows {
					if len(re.Telemetry) > 0 {
						v.telemetry[distKey{i, k, j, ""}] = re.Telemetry
					}
				}
			}
		}
		for k, rows := range st.samples {
			for j, byMetric := range rows {
				for metric, samples := range byMetric {
					v.samples[distKey{i, k, j, metric}] = samples
				}
			}
		}
	}
	v.across = acrossOf(v, states)
	for _, a := range v.across {
		v.Across = append(v.Across, a.view())
	}
	for i := 1; i < len(evidence); i++ {
		v.Comparisons = append(v.Comparisons, compare(ctx, evidence[0], evidence[i], &v.Receipts[0], &states[0], &states[i], policy, opts))
	}
	return v, nil
}

func receiptOf(in *verify.Inspection) (Receipt, receiptState) {
	res := in.Result
	r := Receipt{Path: clip(in.Evidence.Receipt, maxPath), ReceiptID: res.ReceiptID, Scope: clip(res.Scope, maxProse), Artifacts: []Artifact{}, Cases: []Case{},
		Notes: []string{}, Unsupported: []string{}}
	st := receiptState{rowsByKey: map[rowKey]*Row{}}
	if len(res.Subjects) > 0 && res.Subjects[0].Path == in.Evidence.Receipt {
		r.Digest = res.Subjects[0].Digest
	}
	vf := Verification{Verdict: contract.VerificationVerdict(string(res.Verdict)), Summary: res.Summary(), Signer: res.Signer, Weakened: nonNil(res.Weakened),
		Checks: []Check{}, Findings: []Finding{}, Warnings: messages(res.Warnings)}
	for _, c := range res.Checks {
		vf.Checks = append(vf.Checks, Check{Check: c.Check, Status: c.Status, Note: clip(c.Note, maxProse)})
	}
	for _, f := range res.Findings {
		vf.Findings = append(vf.Findings, Finding{Check: contract.CheckName(string(f.Check)), File: clip(nonEmpty(f.File, "-"), maxPath),
			Pointer: pointerWithin(f.Pointer, maxPointer), Code: nonEmpty(f.Code(), "finding"), Message: message(f.Err.Error())})
	}
	r.Verification = vf
	rc := in.Receipt
	if rc == nil {
		return r, st
	}
	r.Publishable, r.Notes, r.Unsupported = rc.Publishable, nonNil(rc.Notes), nonNil(rc.Unsupported)
	s := rc.Source
	r.Source = &Source{Repository: s.Repository, Commit: s.Commit, Tree: s.Tree, TreeHashFormat: s.TreeHashFormat, TreeHash: s.TreeHash, Clean: s.Clean}
	if s.OriginMain != nil {
		r.Source.OriginMain = *s.OriginMain
	}
	w := rc.Workload
	r.Workload = &Workload{ID: w.ID, Path: w.Path, Digest: w.Digest, Variant: w.Variant, Seed: w.Seed}
	q := rc.Qualification
	r.Run = &Run{Kind: q.Kind, Backend: q.Backend, Verdict: contract.RunVerdict(q.Verdict), StartedAt: q.StartedAt, FinishedAt: q.FinishedAt,
		DurationSeconds: q.DurationSeconds, QualrunVersion: q.Qualrun.Version, QualrunDigest: q.Qualrun.Digest}
	e := rc.Environment
	r.Environment = &Environment{HostID: e.HostID, OS: nonEmpty(strings.TrimSpace(e.OS.Name+" "+e.OS.Version), "-"), Kernel: e.OS.Kernel,
		Arch: e.OS.Architecture, Device: e.Device.Name, Driver: e.Device.Driver}
	r.Artifacts = append(r.Artifacts, rc.Artifacts...)
	span := spanOf(in)
	for _, ce := range in.Cases {
		c := Case{ID: ce.Result.ID, Repetition: ce.Result.Repetition, Required: ce.Result.Required, Status: contract.CaseStatus(ce.Result.Status), Kind: contract.ViewCaseKind(ce.Kind), Rows: []Row{}}
		if ce.Result.Details != nil {
			c.Details = *ce.Result.Details
		}
		if ce.Driver != nil {
			c.Driver = driverOf(ce.Driver, r.Artifacts)
			if c.Kind == "" {
				c.Kind = contract.ViewCaseKindDriver
			}
		}
		if ce.SLOKnown {
			c.SLO = clip(sloString(ce.SLO), maxSLO)
		}
		rowSamples := []map[string][]float64{}
		for _, re := range ce.Rows {
			row, samples := rowOf(re)
			c.Rows = append(c.Rows, row)
			rowSamples = append(rowSamples, samples)
		}
		r.Cases = append(r.Cases, c)
		st.samples = append(st.samples, rowSamples)
	}
	for i := range r.Cases {
		c := &r.Cases[i]
		for j := range c.Rows {
			st.rowsByKey[rowKey{c.ID, c.Repetition, c.Rows[j].Name}] = &c.Rows[j]
		}
	}
	st.metricsByRow = map[rowKey][]contract.Metric{}
	for _, ce := range in.Cases {
		for _, re := range ce.Rows {
			st.metricsByRow[rowKey{ce.Result.ID, ce.Result.Repetition, rowName(re.Row.Concurrency, re.Row.Repetition)}] = re.Metrics
		}
	}
	r.Lifecycle = lifecycleOf(rc, in.Lifecycle, span)
	return r, st
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return slices.Clone(s)
}

func rowName(c, r int64) string { return fmt.Sprintf("c%d-r%d", c, r) }

func sloString(s *contract.SLO) string {
	if s == nil {
		return "none declared"
	}
	var parts []string
	if s.TTFTMs > 0 {
		parts = append(parts, "TTFT_sched ≤ "+format.Num(s.TTFTMs)+" ms")
	}
	if s.ICLMs > 0 {
		parts = append(parts, "max ICL ≤ "+format.Num(s.ICLMs)+" ms")
	}
	if s.E2EMs > 0 {
		parts = append(parts, "E2E_sched ≤ "+format.Num(s.E2EMs)+" ms")
	}
	if len(parts) == 0 {
		return "none declared"
	}
	return strings.Join(parts, ", ")
}

func metricMap(ms []contract.Metric) map[string]contract.Metric {
	out := make(map[string]contract.Metric, len(ms))
	for _, m := range ms {
		if !m.Diagnostic {
			out[m.Name] = m
		}
	}
	return out
}

// rowOf returns a row and the sorted samples of its distributions, by metric.
func rowOf(re verify.RowEvidence) (Row, map[string][]float64) {
	row := re.Row
	out := Row{Name: rowName(row.Concurrency, row.Repetition), Concurrency: row.Concurrency, Repetition: row.Repetition, Loop: row.Loop,
		Readable: re.Readable, Records: row.Records.Path, RecordsDigest: row.Records.Digest, Distributions: []Distribution{},
		Mismatches: []string{}, Fidelity: Fidelity{Reasons: []string{}}}
	sorted := map[string][]float64{}
	if !re.Readable {
		return out, sorted
	}
	out.RecordsRead, out.InvalidRecords = re.Records, re.InvalidRecords
	got := metricMap(re.Metrics)
	recorded := metricMap(row.Metrics)
	val := func(name string) *float64 {
		if m, ok := got[name]; ok {
			v := m.Value
			return &v
		}
		return nil
	}
	samples := map[contract.DistributionMetric][]float64{contract.DistributionMetricTTFTMs: re.Samples.TTFTMs, contract.DistributionMetricTPOTMs: re.Samples.TPOTMs,
		contract.DistributionMetricE2EMs: re.Samples.E2EMs, contract.DistributionMetricICLMs: re.Samples.ICLMs, contract.DistributionMetricScheduleLagMs: re.Samples.ScheduleLagMs}
	for _, d := range distributions {
		metric := string(d.metric)
		p50, ok := got[metric+".p50"]
		if !ok {
			continue
		}
		v0 := func(name string) float64 { return got[metric+name].Value }
		dist := Distribution{Metric: d.metric, Label: d.label, Formula: p50.Formula, Unit: p50.Unit,
			Min: v0(".min"), Max: v0(".max"), Mean: v0(".mean"), P50: p50.Value, P90: v0(".p90"), P95: v0(".p95"), P99: v0(".p99"),
			P999: val(metric + ".p99.9")}
		sorted[metric] = slices.Sorted(slices.Values(samples[d.metric]))
		if p50.Samples != nil {
			dist.Count = *p50.Samples
		}
		if m, ok := recorded[metric+".p50"]; ok {
			v := m.Value
			dist.ReceiptP50 = &v
		}
		if m, ok := recorded[metric+".p99"]; ok {
			v := m.Value
			dist.ReceiptP99 = &v
		}
		out.Distributions = append(out.Distributions, dist)
	}
	out.Requests, out.Successes, out.Failures = re.Requests, re.Successes, re.Failures
	if w := val("window_s"); w != nil {
		out.WindowSeconds = *w
	}
	out.Throughput = Throughput{RequestsPerSecond: val("request_throughput"), OutputTokensPerSecond: val("output_throughput_window"),
		TotalTokensPerSecond: val("total_throughput_window"), GoodputPerSecond: val("slo_goodput"), GoodputTokens: val("slo_goodput_tokens"),
		GoodFraction: val("slo_good_fraction"), OutputTokens: val("output_tokens.sum")}
	if c := row.Cache; c != nil {
		// The row's cache object, which verification recomputed from the records; the hit
		// fraction is the recomputed metric.
		out.PrefixCache = &contract.ViewRowPrefixCache{Declared: c.Declared, Observed: c.Observed, Reporting: c.Reporting,
			CachedPromptTokens: c.CachedPromptTokens, HitFraction: val("prefix_cache_hit_fraction"), Contradiction: c.Contradiction}
	}
	out.Turns = turnsOf(got)
	// The row's token ledger, which the tolerances check recomputed from the records
	// (verify/internal/check/rowcheck/ledger.go): a verified receipt's is the recomputed one.
	out.Tokens = row.Tokens
	f := re.Fidelity
	out.Fidelity = Fidelity{ScheduleLagP50Ms: f.ScheduleLagP50Ms, ScheduleLagP99Ms: f.ScheduleLagP99Ms, ScheduleLagMaxMs: f.ScheduleLagMaxMs,
		OfferedRate: f.OfferedRate, AchievedRate: f.AchievedRate, Degraded: f.Degraded, Reasons: nonNil(f.Reasons), DispatchSpreadMs: val("dispatch_spread_ms")}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range recorded {
			if !yield(k) {
				return
			}
		}
	}) {
		if g, ok := got[name]; ok && g.Value != recorded[name].Value {
			out.Mismatches = append(out.Mismatches, clip(fmt.Sprintf("%s: receipt %s, records %s", name, format.Num(recorded[name].Value), format.Num(g.Value)), maxMismatch))
		}
	}
	return out, sorted
}

// span is the campaign's first request sent and last response, over every row's records.
type span struct {
	first, last int64
	ok          bool
}

func spanOf(in *verify.Inspection) span {
	var s span
	for _, c := range in.Cases {
		for _, r := range c.Rows {
			if !r.HasSpan {
				continue
			}
			if !s.ok || r.FirstSendNs < s.first {
				s.first = r.FirstSendNs
			}
			if !s.ok || r.LastResponseNs > s.last {
				s.last = r.LastResponseNs
			}
			s.ok = true
		}
	}
	return s
}

func lifecycleOf(rc *contract.ReceiptDoc, lr *contract.LifecycleRecordDoc, sp span) *Lifecycle {
	if rc.Lifecycle == nil {
		return nil
	}
	l := &Lifecycle{Path: rc.Lifecycle.Path, Digest: rc.Lifecycle.Digest, Verdict: contract.LifecycleVerdict(rc.Lifecycle.Verdict), Events: []Event{},
		OwnerPIDs: []int64{}, ResidueProcesses: []string{}, ResidueListeners: []string{}, Unsupported: []string{}, Failures: []string{},
		Ownership: contract.LifecycleOwnershipUnknown, Residue: contract.LifecycleResidueUnknown}
	if lr == nil {
		return l
	}
	l.Verdict = contract.LifecycleVerdict(lr.Verdict)
	l.Port, l.PortFreeBeforeLaunch = lr.Port.Port, lr.Port.FreeBeforeLaunch
	l.Unsupported, l.Failures = nonNil(lr.Unsupported), nonNil(lr.Failures)
	var t0 int64
	hasT0 := false
	add := func(name contract.EventName, t int64) {
		if !hasT0 {
			t0, hasT0 = t, true
		}
		l.Events = append(l.Events, Event{Name: name, TNs: t, OffsetMs: float64(t-t0) / 1e6})
	}
	if lr.Launch != nil {
		add(contract.EventNameLaunch, lr.Launch.TStartNs)
	}
	if rd := lr.Readiness; rd != nil {
		l.Ready, l.Probes, l.ReadyElapsedMs, l.ReadyDeadlineMs = rd.Ready, rd.Probes, rd.ElapsedMs, rd.DeadlineMs
		if rd.TReadyNs != nil {
			add(contract.EventNameReady, *rd.TReadyNs)
		}
	}
	if sp.ok {
		add(contract.EventNameFirstRequest, sp.first)
		add(contract.EventNameLastResponse, sp.last)
	}
	if li := lr.Listener; li != nil {
		owned := li.Owned
		l.ListenerOwned, l.OwnerPIDs = &owned, nonNil(li.OwnerPIDs)
		l.Ownership = contract.LifecycleOwnershipNotOwned
		if owned {
			l.Ownership = contract.LifecycleOwnershipOwned
		}
	}
	if sd := lr.Shutdown; sd != nil {
		l.Signal, l.Forced, l.ExitCode, l.ExitAcceptable = contract.LifecycleSignal(sd.Signal), sd.Forced, sd.ExitCode, sd.Acceptable
		if sd.ExitSignal != nil {
			l.ExitSignal = *sd.ExitSignal
		}
		ms := sd.ElapsedMs
		l.ShutdownMs = &ms
		add(contract.EventName(sd.Signal), sd.TSentNs)
		add(contract.EventNameExit, sd.TSentNs+int64(sd.ElapsedMs*1e6))
	}
	for _, p := range lr.Residue.Processes {
		what := fmt.Sprintf("pid %d (%s)", p.PID, p.Comm)
		if p.Escaped {
			what += ", escaped the group"
		}
		l.ResidueProcesses = append(l.ResidueProcesses, what)
	}
	for _, li := range lr.Residue.Listeners {
		l.ResidueListeners = append(l.ResidueListeners, fmt.Sprintf("port %d (inode %d)", li.Port, li.Inode))
	}
	l.Killed = lr.Residue.Killed
	l.Residue = contract.LifecycleResidueNone
	if len(l.ResidueProcesses)+len(l.ResidueListeners) > 0 {
		l.Residue = contract.LifecycleResidueFound
	}
	return l
}

// headline are the row metrics a comparison puts side by side (besides those a rule names).
var headline = []string{"ttft_ms.p50", "ttft_ms.p99", "tpot_ms.p50", "tpot_ms.p99", "e2e_ms.p50", "e2e_ms.p99", "icl_ms.p99",
	"request_throughput", "output_throughput_window", "slo_goodput", "request_failures", "schedule_lag_ms.p99"}

func compare(ctx context.Context, base, cand verify.Evidence, rb *Receipt, sb, sc *receiptState, policy verify.Policy, opts []verify.Option) (out Comparison) {
	out = Comparison{Baseline: clip(base.Receipt, maxPath), Candidate: clip(cand.Receipt, maxPath), Rejected: []Difference{}, Allowed: []Difference{}, Rows: []RowDelta{},
		Rules: []Rule{}, Warnings: []string{}}
	cmp, err := verify.Compare(ctx, base, cand, policy, opts...)
	if err != nil {
		out.Error = clip(err.Error(), maxProse)
		return out
	}
	out.Mode, out.Compatible, out.OK = string(cmp.Mode), cmp.Compatible, cmp.OK
	warnings := slices.Clone(cmp.Warnings)
	defer func() { out = bounded(out, warnings) }()
	global := cmp.Mode == ""
	var excluded []string
	for _, d := range cmp.Rejected {
		out.Rejected = append(out.Rejected, differenceOf(d))
		if !strings.HasPrefix(d.Path, "results.") {
			global = true
		}
		excluded = append(excluded, d.Path)
	}
	for _, d := range cmp.Allowed {
		out.Allowed = append(out.Allowed, differenceOf(d))
	}
	rules := map[string]verify.Evaluation{}
	for _, e := range cmp.Evaluations {
		out.Rules = append(out.Rules, Rule{Scope: e.Scope, Operator: contract.RuleOperator(e.Operator), Baseline: e.Baseline, Candidate: e.Candidate,
			Tolerance: e.Tolerance, Status: contract.RuleStatus(e.Status), Reason: clip(e.Reason, maxProse)})
		rules[e.Scope] = e
	}
	if global || len(cmp.EvidenceErrors) > 0 {
		return out
	}
	for _, c := range rb.Cases {
		for _, row := range c.Rows {
			k := rowKey{c.ID, c.Repetition, row.Name}
			mb, okb := sb.metricsByRow[k]
			mc, okc := sc.metricsByRow[k]
			if !okb || !okc || !row.Readable || !sc.rowsByKey[k].Readable {
				continue
			}
			scope := fmt.Sprintf("results/%s/r%d/rows/%s", c.ID, c.Repetition, row.Name)
			dot := strings.ReplaceAll(scope, "/", ".")
			resultDot := fmt.Sprintf("results.%s.r%d", c.ID, c.Repetition)
			if slices.ContainsFunc(excluded, func(p string) bool {
				return p == dot || strings.HasPrefix(p, dot+".") || p == resultDot || strings.HasPrefix(p, resultDot+".metrics.")
			}) {
				continue
			}
			bm, cm := metricMap(mb), metricMap(mc)
			names := slices.Clone(headline)
			for s := range rules {
				if m, ok := strings.CutPrefix(s, scope+"/metrics/"); ok && !slices.Contains(names, m) {
					names = append(names, m)
				}
			}
			rd := RowDelta{Case: c.ID, Repetition: c.Repetition, Row: row.Name, Metrics: []Delta{}}
			for _, n := range names {
				b, okb := bm[n]
				cv, okc := cm[n]
				if !okb || !okc {
					continue
				}
				d := Delta{Metric: n, Unit: b.Unit, Direction: b.Direction, Baseline: b.Value, Candidate: cv.Value, Change: cv.Value - b.Value}
				if b.Value != 0 {
					pct := d.Change / abs(b.Value) * 100
					d.ChangePercent = &pct
				}
				if e, ok := rules[scope+"/metrics/"+n]; ok {
					d.Rule = contract.DeltaRule(e.Status)
				}
				rd.Metrics = append(rd.Metrics, d)
			}
			out.Rows = append(out.Rows, rd)
		}
	}
	return out
}

func differenceOf(d verify.Difference) Difference {
	return Difference{Path: clip(nonEmpty(d.Path, "-"), maxProse), Code: nonEmpty(d.Code(), "difference"), Message: message(d.Err.Error())}
}

// bounded keeps a comparison's lists within the contract's bounds; what it leaves out is said in
// a warning.
func bounded(c Comparison, warnings []string) Comparison {
	var n int
	if c.Rejected, n = firstN(c.Rejected, maxEntries); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d more rejected differences are not listed", n))
	}
	if c.Allowed, n = firstN(c.Allowed, maxEntries); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d more allowed differences are not listed", n))
	}
	if c.Rows, n = firstN(c.Rows, maxEntries); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d more like-for-like rows are not shown", n))
	}
	if c.Rules, n = firstN(c.Rules, maxEntries); n > 0 {
		warnings = append(warnings, fmt.Sprintf("%d more rule evaluations are not listed", n))
	}
	c.Warnings = messages(warnings)
	return c
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
