package metrics

import (
	"github.com/qualkit/qualkit/schemas/contract"
	formulas "github.com/qualkit/qualkit/schemas/metric"
)

// Case summarizes a serving case's rows for the receipt (formulas.CaseSummary): the worst row of
// each latency and SLO metric, the best row of each throughput, the total of request_failures
// and the number of degraded rows. It is a pure function of the rows (diagnostic metrics are
// ignored); a metric no row has is not emitted.
func Case(rows []contract.Row) []contract.Metric {
	return formulas.MetricsOf(formulas.CaseSummary(formulas.CaseRowsOf(rows)))
}

// CaseCounts are the case counters request_count and row_count (formulas.CaseCounts).
func CaseCounts(rows []contract.Row) []contract.Metric {
	return formulas.MetricsOf(formulas.CaseCounts(formulas.CaseRowsOf(rows)))
}
