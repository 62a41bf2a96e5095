package metrics

import (
	"github.com/qualkit/qualkit/schemas"
	formulas "github.com/qualkit/qualkit/schemas/metric"
)

// CaseRows reduces a case's rows to what the case formulas of package metric read.
func CaseRows(rows []schemas.Row) []formulas.CaseRow {
	out := make([]formulas.CaseRow, len(rows))
	for i, r := range rows {
		vs := make([]formulas.Value, len(r.Metrics))
		for k, m := range r.Metrics {
			vs[k] = formulas.Value{Name: m.Name, Value: m.Value, Unit: formulas.Unit(m.Unit), Aggregation: formulas.Aggregation(m.Aggregation),
				Direction: formulas.Direction(m.Direction), Formula: m.Formula, Diagnostic: m.Diagnostic}
		}
		out[i] = formulas.CaseRow{Requests: r.Requests, Failures: r.Failures, Degraded: r.Fidelity.Degraded, Metrics: vs}
	}
	return out
}

// Case summarizes a serving case's rows for the receipt (formulas.CaseSummary): the worst row of
// each latency and SLO metric, the best row of each throughput, the total of request_failures
// and the number of degraded rows. It is a pure function of the rows (diagnostic metrics are
// ignored); a metric no row has is not emitted.
func Case(rows []schemas.Row) []schemas.Metric {
	return Metrics(formulas.CaseSummary(CaseRows(rows)))
}

// CaseCounts are the case counters request_count and row_count (formulas.CaseCounts).
func CaseCounts(rows []schemas.Row) []schemas.Metric {
	return Metrics(formulas.CaseCounts(CaseRows(rows)))
}
