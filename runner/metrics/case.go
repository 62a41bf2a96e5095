package metrics

import (
	"github.com/qualkit/qualkit/schemas/contract"
)

// caseHeadline lists the row metrics summarized across a case's rows: each becomes
// "<name>.worst_row" (the largest value of a lower-is-better metric, the smallest of a
// higher-is-better one) or "<name>.best_row" (the largest throughput), with the row metric's
// formula, unit and direction, aggregation "max" or "min", and samples = the rows that had it.
var caseHeadline = []struct {
	name string
	best bool
}{
	{"ttft_ms.p50", false},
	{"ttft_ms.p99", false},
	{"tpot_ms.p50", false},
	{"tpot_ms.p99", false},
	{"e2e_ms.p99", false},
	{"icl_max_ms.p99", false},
	{"decode_rate.p50", false},
	{"slo_good_fraction", false},
	{"schedule_lag_ms.p99", false},
	{"request_throughput", true},
	{"output_throughput_window", true},
	{"slo_goodput", true},
}

// Case summarizes a serving case's rows for the receipt: the worst row of each latency and SLO
// metric, the best row of each throughput, the total of request_failures and the number of
// degraded rows. It is a pure function of the rows (diagnostic metrics are ignored); a metric no
// row has is not emitted.
func Case(rows []contract.Row) []contract.Metric {
	b := &builder{}
	for _, h := range caseHeadline {
		var pick contract.Metric
		n := 0
		for _, r := range rows {
			for _, m := range r.Metrics {
				if m.Name != h.name || m.Diagnostic {
					continue
				}
				higherBetter := m.Direction == higher
				if n == 0 ||
					(h.best && m.Value > pick.Value) ||
					(!h.best && higherBetter && m.Value < pick.Value) ||
					(!h.best && !higherBetter && m.Value > pick.Value) {
					pick = m
				}
				n++
			}
		}
		if n == 0 {
			continue
		}
		suffix, agg := ".worst_row", "max"
		switch {
		case h.best:
			suffix = ".best_row"
		case pick.Direction == higher:
			agg = "min"
		}
		b.add(h.name+suffix, pick.Value, pick.Unit, agg, pick.Direction, pick.Formula, n)
	}
	failures, degraded := int64(0), 0
	for _, r := range rows {
		failures += r.Failures
		if r.Fidelity.Degraded {
			degraded++
		}
	}
	b.add("request_failures.sum", float64(failures), "requests", "sum", lower, "request_failures.v1", len(rows))
	b.add("degraded_rows", float64(degraded), "rows", "count", lower, "degraded_rows.v1", len(rows))
	return b.ms
}
