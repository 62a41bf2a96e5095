package verify

import (
	"math"
	"sort"
	"strconv"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// The metric formulas of docs/metrics.md are those of package schemas/metric, the one catalogue
// the runner computes with; verify recomputes every number from the request records with it
// (never trusting a number it can recompute) and compares the two within the policy's recompute
// tolerance. This file turns verify's records and the receipt's rows into the catalogue's inputs
// and its values back into metrics.

// percentile is metric.Percentile (Hyndman and Fan's type 7) over sorted, non-empty xs.
func percentile(sorted []float64, q float64) float64 { return metric.Percentile(sorted, q) }

// rowSpec is what a row's numbers depend on besides its records.
type rowSpec struct {
	concurrency int64
	loop        string
	offered     *float64
	slo         contract.SLO
	// sloKnown is false when the workload (and so the SLO) is not available: the SLO metrics are
	// then not recomputed.
	sloKnown bool
	// bound is the case's fidelity bound (the defaults without a workload) and cal the row's
	// recorded send calibration (empty in evidence written before it existed).
	bound  metric.FidelityBound
	cal    metric.Calibration
	legacy bool // the row has no recorded judgement: judged by the rule it was written with
}

// rowFacts is a recomputed row: its counts, window, output set and metrics.
type rowFacts struct {
	requests, successes, failures int64
	windowSeconds                 float64
	outputSet                     *string
	metrics                       []contract.Metric
	lagP50, lagP99, lagMax        float64
	achieved                      float64
	degraded                      bool
	judgement                     metric.Judgement
	reasons                       []string
}

// request is the record as the catalogue's formulas read it.
func (r *record) request() metric.Request {
	var session string
	var turn int64
	if r.session != nil {
		session, turn = r.session.ID, r.session.Turn
	}
	return metric.Request{Session: session, Turn: turn, Failed: r.failed, ErrorClass: r.errClass, Sched: r.sched, Send: r.send, Hdr: r.hdr, End: r.end, Close: r.cls,
		HasSend: r.hasSend, HasHdr: r.hasHdr, HasEnd: r.hasEnd, HasClose: r.hasClose, Content: r.tok.Content,
		Reasoned: r.tok.Reasoned, FirstContent: r.tok.FirstContent, HasFirstContent: r.tok.HasFirstContent, HasReasoning: r.hasReasoning, Reasoning: r.reasoning,
		HasUsage: r.hasUsage, Completion: r.n, Prompt: r.p, HasCached: r.hasCached, Cached: r.cached,
		HasClient: r.hasClient, ClientPrompt: r.client.PromptTokens, ClientPromptPartial: r.client.ImagesNotCounted != nil, HasClientCompletion: r.hasClientN, ClientCompletion: r.clientN}
}

// measuredRequests are the measured (not warmup) records in index order, as the catalogue's
// inputs, and the records themselves in that order.
func measuredRequests(records []*record) ([]metric.Request, []*record) {
	var measured []*record
	for _, r := range records {
		if !r.warmup {
			measured = append(measured, r)
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].index < measured[b].index })
	reqs := make([]metric.Request, len(measured))
	for i, r := range measured {
		reqs[i] = r.request()
	}
	return reqs, measured
}

// recomputeRow applies the row formulas to a row's records (any order; warmups are ignored).
func recomputeRow(spec rowSpec, records []*record) rowFacts {
	reqs, measured := measuredRequests(records)
	ms := metric.RowSpec{Concurrency: spec.concurrency, Loop: contract.RowLoop(spec.loop), OfferedRate: spec.offered, Bound: spec.bound, Calibration: spec.cal, Legacy: spec.legacy}
	if spec.sloKnown {
		ms.SLO = &metric.SLO{TTFTMs: spec.slo.TTFTMs, ICLMs: spec.slo.ICLMs, E2EMs: spec.slo.E2EMs}
	}
	res := metric.Row(ms, reqs)
	f := res.Fidelity
	return rowFacts{
		requests: res.Requests, successes: res.Successes, failures: res.Failures,
		windowSeconds: res.WindowSeconds, outputSet: outputSet(measured), metrics: metric.MetricsOf(res.Values),
		lagP50: f.ScheduleLagP50Ms, lagP99: f.ScheduleLagP99Ms, lagMax: f.ScheduleLagMaxMs,
		achieved: f.AchievedRate, degraded: f.Degraded, judgement: f.Judgement, reasons: f.Reasons,
	}
}

// samplesOf applies the per-request formulas to the measured requests of a row (in index order).
func samplesOf(measured []*record) metric.Samples {
	reqs := make([]metric.Request, len(measured))
	for i, r := range measured {
		reqs[i] = r.request()
	}
	return metric.SamplesOf(reqs)
}

// metricsUnsetWithoutSLO are the row metrics that need the workload's SLO.
var metricsUnsetWithoutSLO = metric.SLOMetrics

// recomputeCase applies the case formulas to a serving case's rows (as recorded): the request and
// row counts, the worst row of each latency and SLO metric, the best row of each throughput,
// the failure total and the degraded rows.
func recomputeCase(rows []contract.Row) []contract.Metric {
	cr := metric.CaseRowsOf(rows)
	return metric.MetricsOf(append(metric.CaseCounts(cr), metric.CaseSummary(cr)...))
}

// outputSet is the output set hash of the measured records (evidence.OutputSetDigest); nil when
// a measured request failed or has no output digest.
func outputSet(rs []*record) *string {
	digests := make([]string, len(rs))
	for i, r := range rs {
		if r.failed {
			return nil
		}
		digests[i] = r.output
	}
	d, ok := evidence.OutputSetDigest(digests)
	if !ok {
		return nil
	}
	return &d
}

// promptSet is the prompt set hash of prompts in measured order (evidence.PromptSetDigest).
func promptSet(prompts []contract.Prompt) (string, error) { return evidence.PromptSetDigest(prompts) }

// within reports whether got is within tol of want: |got - want| <= max(abs, |want| x rel).
func within(got, want float64, tol Tolerance) bool {
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return false
	}
	return math.Abs(got-want) <= max(tol.Absolute, math.Abs(want)*tol.Relative)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
