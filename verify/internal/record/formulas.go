package record

import (
	"math"
	"sort"
	"strconv"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/policy"
)

// The metric formulas of docs/metrics.md are those of package schemas/metric, the one catalogue
// the runner computes with; verify recomputes every number from the request records with it
// (never trusting a number it can recompute) and compares the two within the policy's recompute
// tolerance. This file turns verify's records and the receipt's rows into the catalogue's inputs
// and its values back into metrics.

// Percentile is metric.Percentile (Hyndman and Fan's type 7) over sorted, non-empty xs.
func Percentile(sorted []float64, q float64) float64 { return metric.Percentile(sorted, q) }

// RowSpec is what a row's numbers depend on besides its records.
type RowSpec struct {
	Concurrency int64
	Loop        string
	Offered     *float64
	SLO         contract.SLO
	// SLOKnown is false when the workload (and so the SLO) is not available: the SLO metrics are
	// then not recomputed.
	SLOKnown bool
	// Bound is the case's fidelity bound (the defaults without a workload) and Cal the row's
	// recorded send calibration (empty in evidence written before it existed).
	Bound  metric.FidelityBound
	Cal    metric.Calibration
	Legacy bool // the row has no recorded judgement: judged by the rule it was written with
}

// RowFacts is a recomputed row: its counts, window, output set and metrics.
type RowFacts struct {
	Requests, Successes, Failures int64
	WindowSeconds                 float64
	OutputSet                     *string
	Metrics                       []contract.Metric
	LagP50, LagP99, LagMax        float64
	Achieved                      float64
	Degraded                      bool
	Judgement                     metric.Judgement
	Reasons                       []string
}

// Request is the record as the catalogue's formulas read it.
func (r *Record) Request() metric.Request {
	var session string
	var turn, round int64
	if r.Session != nil {
		session, turn, round = r.Session.ID, r.Session.Turn, r.Session.Round
	}
	return metric.Request{Session: session, Turn: turn, Round: round, Failed: r.Failed, ErrorClass: r.ErrClass, Sched: r.Sched, Send: r.Send, Hdr: r.Header, End: r.End, Close: r.Close,
		HasSend: r.HasSend, Sent: r.Sent, HasSent: r.HasSent, HasHdr: r.HasHdr, HasEnd: r.HasEnd, HasClose: r.HasClose, Content: r.Content,
		Reasoned: r.Reasoned, FirstContent: r.FirstContent, HasFirstContent: r.HasFirstContent, HasReasoning: r.HasReasoning, Reasoning: r.Reasoning,
		FirstToolCall: r.FirstToolCall, HasFirstToolCall: r.HasFirstToolCall, ToolCalls: r.ToolCalls, ToolCallsValid: r.ToolCallsValid,
		HasUsage: r.HasUsage, Completion: r.CompletionTokens, Prompt: r.PromptTokens, HasCached: r.hasCached, Cached: r.cached,
		HasClient: r.HasClient, ClientPrompt: r.Client.PromptTokens, ClientPromptPartial: r.Client.ImagesNotCounted != nil, HasClientCompletion: r.hasClientN, ClientCompletion: r.clientN}
}

// MeasuredRequests are the measured (not warmup) records in index order, as the catalogue's
// inputs, and the records themselves in that order.
func MeasuredRequests(records []*Record) ([]metric.Request, []*Record) {
	var measured []*Record
	for _, r := range records {
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	reqs := make([]metric.Request, len(measured))
	for i, r := range measured {
		reqs[i] = r.Request()
	}
	return reqs, measured
}

// RecomputeRow applies the row formulas to a row's records (any order; warmups are ignored).
func RecomputeRow(spec RowSpec, records []*Record) RowFacts {
	reqs, measured := MeasuredRequests(records)
	ms := metric.RowSpec{Concurrency: spec.Concurrency, Loop: contract.RowLoop(spec.Loop), OfferedRate: spec.Offered, Bound: spec.Bound, Calibration: spec.Cal, Legacy: spec.Legacy}
	if spec.SLOKnown {
		ms.SLO = &metric.SLO{TTFTMs: spec.SLO.TTFTMs, ICLMs: spec.SLO.ICLMs, E2EMs: spec.SLO.E2EMs}
	}
	res := metric.Row(ms, reqs)
	f := res.Fidelity
	return RowFacts{
		Requests: res.Requests, Successes: res.Successes, Failures: res.Failures,
		WindowSeconds: res.WindowSeconds, OutputSet: OutputSet(measured), Metrics: metric.MetricsOf(res.Values),
		LagP50: f.ScheduleLagP50Ms, LagP99: f.ScheduleLagP99Ms, LagMax: f.ScheduleLagMaxMs,
		Achieved: f.AchievedRate, Degraded: f.Degraded, Judgement: f.Judgement, Reasons: f.Reasons,
	}
}

// SamplesOf applies the per-request formulas to the measured requests of a row (in index order).
func SamplesOf(measured []*Record) metric.Samples {
	reqs := make([]metric.Request, len(measured))
	for i, r := range measured {
		reqs[i] = r.Request()
	}
	return metric.SamplesOf(reqs)
}

// MetricsUnsetWithoutSLO are the row metrics that need the workload's SLO.
var MetricsUnsetWithoutSLO = metric.SLOMetrics

// RecomputeCase applies the case formulas to a serving case's rows (as recorded): the request and
// row counts, the worst row of each latency and SLO metric, the best row of each throughput,
// the failure total and the degraded rows.
func RecomputeCase(rows []contract.Row) []contract.Metric {
	cr := metric.CaseRowsOf(rows)
	return metric.MetricsOf(append(metric.CaseCounts(cr), metric.CaseSummary(cr)...))
}

// OutputSet is the output set hash of the measured records (evidence.OutputSetDigest); nil when
// a measured request failed or has no output digest.
func OutputSet(rs []*Record) *string {
	digests := make([]string, len(rs))
	for i, r := range rs {
		if r.Failed {
			return nil
		}
		digests[i] = r.Output
	}
	d, ok := evidence.OutputSetDigest(digests)
	if !ok {
		return nil
	}
	return &d
}

// PromptSet is the prompt set hash of prompts in measured order (evidence.PromptSetDigest).
func PromptSet(prompts []contract.Prompt) (string, error) { return evidence.PromptSetDigest(prompts) }

// Within reports whether got is within tol of want: |got - want| <= max(abs, |want| x rel).
func Within(got, want float64, tol policy.Tolerance) bool {
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return false
	}
	return math.Abs(got-want) <= max(tol.Absolute, math.Abs(want)*tol.Relative)
}

func FmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
