package metric

import "github.com/qualkit/qualkit/schemas/contract"

// A request record becomes the catalogue's inputs here, in one place: RequestOf for the
// runner's records (contract.RequestRecordDoc). The verifier's fast record reader fills the same
// Request from its own parse with the same helpers (AddTokenEvent, ClientCompletion,
// AddToolCalls), and a test holds the two equal on real records.

// RequestOf reduces a request record to what the formulas of package metric read.
func RequestOf(r *contract.RequestRecordDoc) Request {
	q := Request{Failed: r.Error != nil, Sched: r.TSchedNs}
	if r.Error != nil {
		q.ErrorClass = string(r.Error.Class)
	}
	if r.TSendNs != nil {
		q.Send, q.HasSend = *r.TSendNs, true
	}
	if r.TSentNs != nil {
		q.Sent, q.HasSent = *r.TSentNs, true
	}
	if r.THdrNs != nil {
		q.Hdr, q.HasHdr = *r.THdrNs, true
	}
	if r.TEndNs != nil {
		q.End, q.HasEnd = *r.TEndNs, true
	}
	if r.TCloseNs != nil {
		q.Close, q.HasClose = *r.TCloseNs, true
	}
	for _, e := range r.Events {
		AddTokenEvent(&q, e.Kind, e.TNs)
	}
	if r.Usage != nil {
		q.HasUsage, q.Completion, q.Prompt = true, r.Usage.CompletionTokens, r.Usage.PromptTokens
		if r.Usage.ReasoningTokens != nil {
			q.HasReasoning, q.Reasoning = true, *r.Usage.ReasoningTokens
		}
	}
	if r.CachedPromptTokens != nil {
		q.HasCached, q.Cached = true, *r.CachedPromptTokens
	}
	if s := r.Session; s != nil {
		q.Session, q.Turn, q.Round = s.ID, s.Turn, s.Round
	}
	if ct := r.ClientTokens; ct != nil {
		q.HasClient, q.ClientPrompt, q.ClientPromptPartial = true, ct.PromptTokens, ct.ImagesNotCounted != nil
		q.ClientCompletion, q.HasClientCompletion = ClientCompletion(*ct)
	}
	if len(r.ToolCalls) > 0 {
		valid := int64(0)
		for _, c := range r.ToolCalls {
			if c.Valid {
				valid++
			}
		}
		AddToolCalls(&q, int64(len(r.ToolCalls)), valid)
	}
	return q
}

// CalibrationOf is the formulas' view of a recorded calibration (nil: empty).
func CalibrationOf(c *contract.SendCalibration) Calibration {
	if c == nil {
		return Calibration{}
	}
	out := Calibration{SamplesNs: c.SamplesNs}
	if c.Connections != nil {
		out.Connections = *c.Connections
	}
	return out
}

// JudgementOf is the recorded form of a row's fidelity judgement.
func JudgementOf(j Judgement) *contract.FidelityJudgement {
	return &contract.FidelityJudgement{Cause: contract.FidelityJudgementCause(j.Cause), Quantile: j.Quantile, LagBoundMs: j.LagBoundMs,
		Samples: int64(j.Samples), Order: int64(j.Order), LagMs: j.LagMs, Serialised: int64(j.Serialised)}
}

// CaseMetrics summarizes a serving case's rows for the receipt (CaseSummary): the worst row of
// each latency and SLO metric, the best row of each throughput, the total of request_failures
// and the number of degraded rows. It is a pure function of the rows (diagnostic metrics are
// ignored); a metric no row has is not emitted.
func CaseMetrics(rows []contract.Row) []contract.Metric {
	return MetricsOf(CaseSummary(CaseRowsOf(rows)))
}

// CaseCountMetrics are the case counters request_count and row_count (CaseCounts).
func CaseCountMetrics(rows []contract.Row) []contract.Metric {
	return MetricsOf(CaseCounts(CaseRowsOf(rows)))
}
