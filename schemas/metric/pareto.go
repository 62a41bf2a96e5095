package metric

import (
	"cmp"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// ParetoFront is the Pareto front of a case's rows (docs/metrics.md "Pareto front"): the rows
// that carry both declared metrics and that no other such row dominates, where a row dominates
// another when its throughput is at least as high and its latency at least as low, one of them
// strictly. Rows with equal points are all on the front. The front is sorted by throughput
// ascending, then latency, concurrency and repetition. It reads the rows' recorded metrics (a
// verifier recomputes those from the records first).
func ParetoFront(spec contract.ParetoSpec, rows []contract.Row) contract.Pareto {
	out := contract.Pareto{Throughput: contract.ParetoThroughput(spec.Throughput), Latency: spec.Latency, Front: []contract.ParetoPoint{}}
	var pts []contract.ParetoPoint
	for _, r := range rows {
		t, okT := metricValue(r.Metrics, string(spec.Throughput))
		l, okL := metricValue(r.Metrics, spec.Latency)
		if okT && okL {
			pts = append(pts, contract.ParetoPoint{Concurrency: r.Concurrency, Repetition: r.Repetition, Throughput: t, Latency: l})
		}
	}
	for i, p := range pts {
		dominated := false
		for j, q := range pts {
			if i != j && q.Throughput >= p.Throughput && q.Latency <= p.Latency && (q.Throughput > p.Throughput || q.Latency < p.Latency) {
				dominated = true
				break
			}
		}
		if !dominated {
			out.Front = append(out.Front, p)
		}
	}
	slices.SortFunc(out.Front, func(a, b contract.ParetoPoint) int {
		return cmp.Or(cmp.Compare(a.Throughput, b.Throughput), cmp.Compare(a.Latency, b.Latency),
			cmp.Compare(a.Concurrency, b.Concurrency), cmp.Compare(a.Repetition, b.Repetition))
	})
	return out
}

// ParetoLatencyOK reports whether a metric name can be a Pareto front's latency: a percentile
// (p50 ... p99.9) of a lower-is-better row distribution, such as "ttft_ms.p99".
func ParetoLatencyOK(name string) bool {
	for _, f := range Catalogue {
		if f.Scope != RowScope || !f.Distribution || f.Direction != contract.DirectionLowerIsBetter {
			continue
		}
		for _, a := range DistributionAggregations {
			if _, ok := QuantileOf(a); ok && name == f.Name+"."+string(a) {
				return true
			}
		}
	}
	return false
}

func metricValue(ms []contract.Metric, name string) (float64, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m.Value, true
		}
	}
	return 0, false
}
