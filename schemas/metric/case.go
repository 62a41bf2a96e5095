package metric

import "github.com/qualkit/qualkit/schemas/contract"

// Headline lists the row metrics summarized across a serving case's rows, in emission order: each
// becomes Name + ".worst_row" (the largest value of a lower-is-better metric, aggregation max; the
// smallest of a higher-is-better one, aggregation min) or, when Best, Name + ".best_row" (the
// largest, max), with the row metric's formula, unit and direction, and samples = the rows that
// had it.
var Headline = []HeadlineMetric{
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

// Suffix is ".best_row" or ".worst_row".
func (h HeadlineMetric) Suffix() string {
	if h.Best {
		return ".best_row"
	}
	return ".worst_row"
}

// Aggregation is the case metric's aggregation for a row metric of direction d.
func (h HeadlineMetric) Aggregation(d contract.Direction) contract.Aggregation {
	if !h.Best && d == contract.DirectionHigherIsBetter {
		return contract.AggregationMin
	}
	return contract.AggregationMax
}

// HeadlineMetric is a row metric a case summarizes: its worst row, or its best when Best.
type HeadlineMetric struct {
	Name string
	Best bool
}

// CaseRow is what the case formulas read of one row: its metrics as recorded, its failures and
// whether it is degraded.
type CaseRow struct {
	Requests int64
	Failures int64
	Degraded bool
	Metrics  []Value
}

// CaseCounts are the case counters: request_count (the rows' requests) and row_count.
func CaseCounts(rows []CaseRow) []Value {
	var requests int64
	for _, r := range rows {
		requests += r.Requests
	}
	b := &builder{}
	b.add(RequestCount, "", float64(requests), int(requests))
	b.add(RowCount, "", float64(len(rows)), len(rows))
	return b.vs
}

// CaseSummary summarizes a serving case's rows: the worst row of each latency and SLO metric of
// Headline, the best row of each throughput, the total of request_failures and the number of
// degraded rows. Diagnostic metrics are ignored; a metric no row has is not emitted.
func CaseSummary(rows []CaseRow) []Value {
	b := &builder{}
	for _, h := range Headline {
		var pick Value
		n := 0
		for _, r := range rows {
			for _, m := range r.Metrics {
				if m.Name != h.Name || m.Diagnostic {
					continue
				}
				hb := m.Direction == contract.DirectionHigherIsBetter
				if n == 0 ||
					(h.Best && m.Value > pick.Value) ||
					(!h.Best && hb && m.Value < pick.Value) ||
					(!h.Best && !hb && m.Value > pick.Value) {
					pick = m
				}
				n++
			}
		}
		if n == 0 {
			continue
		}
		b.vs = append(b.vs, Value{Name: h.Name + h.Suffix(), Value: pick.Value, Unit: pick.Unit, Aggregation: h.Aggregation(pick.Direction),
			Direction: pick.Direction, Formula: pick.Formula, Samples: n})
	}
	failures, degraded := int64(0), 0
	for _, r := range rows {
		failures += r.Failures
		if r.Degraded {
			degraded++
		}
	}
	f := mustLookup(RequestFailures)
	b.vs = append(b.vs, Value{Name: f.CaseName, Value: float64(failures), Unit: f.Unit, Aggregation: f.CaseAggregation, Direction: f.Direction, Formula: f.ID, Samples: len(rows)})
	b.add(DegradedRows, "", float64(degraded), len(rows))
	return b.vs
}

// ReceiptCounts are the receipt's metrics: results_passed and results_failed, the results of
// each status, each with samples = the receipt's results.
func ReceiptCounts(passed, failed int64, results int) []Value {
	b := &builder{}
	b.add(ResultsPassed, "", float64(passed), results)
	b.add(ResultsFailed, "", float64(failed), results)
	return b.vs
}
