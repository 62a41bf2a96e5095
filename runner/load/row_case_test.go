package load

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

func TestCase(t *testing.T) {
	m := func(name string, v float64, dir string) contract.Metric {
		return contract.Metric{Name: name, Value: v, Unit: "u", Aggregation: "p99", Direction: contract.Direction(dir), Formula: "f.v1"}
	}
	rows := []contract.Row{
		{Failures: 1, Metrics: []contract.Metric{m("ttft_ms.p99", 10, "lower_is_better"), m("request_throughput", 5, "higher_is_better"), m("slo_good_fraction", 0.9, "higher_is_better"),
			{Name: "ttft_ms.p50", Value: 999, Direction: "lower_is_better", Diagnostic: true}}},
		{Failures: 2, Fidelity: contract.Fidelity{Degraded: true}, Metrics: []contract.Metric{m("ttft_ms.p99", 30, "lower_is_better"), m("request_throughput", 7, "higher_is_better"), m("slo_good_fraction", 0.5, "higher_is_better")}},
		{Metrics: []contract.Metric{m("ttft_ms.p99", 20, "lower_is_better")}},
	}
	got := map[string]contract.Metric{}
	for _, x := range metric.CaseMetrics(rows) {
		got[x.Name] = x
	}
	for _, w := range []struct {
		name    string
		v       float64
		agg     string
		samples int64
	}{
		{"ttft_ms.p99.worst_row", 30, "max", 3},
		{"request_throughput.best_row", 7, "max", 2},
		{"slo_good_fraction.worst_row", 0.5, "min", 2},
		{"request_failures.sum", 3, "sum", 3},
		{"degraded_rows", 1, "count", 3},
	} {
		x, ok := got[w.name]
		if !ok || x.Value != w.v || string(x.Aggregation) != w.agg || *x.Samples != w.samples {
			t.Errorf("%s = %+v, want %v %s %d", w.name, x, w.v, w.agg, w.samples)
		}
	}
	if _, ok := got["ttft_ms.p50.worst_row"]; ok {
		t.Error("a diagnostic metric was summarized")
	}
	if len(got) != 5 {
		t.Errorf("%d metrics: %v", len(got), got)
	}
}
