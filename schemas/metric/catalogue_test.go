package metric

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestStdlibOnly: the catalogue imports nothing outside the standard library but the contract
// types (schemas/contract) and the /metrics page parser (schemas/promtext, itself standard library
// only), so the runner and the verifier (whose allow-list is "the schemas module only") can both
// import it.
func TestStdlibOnly(t *testing.T) {
	deps := depcheck.Deps(t, ".")
	if len(deps) == 0 {
		t.Fatal("go list returned no dependencies")
	}
	for _, d := range deps {
		if d == "github.com/qualkit/qualkit/schemas/metric" || d == "github.com/qualkit/qualkit/schemas/contract" || d == "github.com/qualkit/qualkit/schemas/promtext" {
			continue
		}
		if first, _, _ := strings.Cut(d, "/"); strings.Contains(first, ".") {
			t.Errorf("schemas/metric depends on %s: it must import only the standard library, schemas/contract and schemas/promtext", d)
		}
	}
}

func TestCatalogueWellFormed(t *testing.T) {
	ids, names := map[string]bool{}, map[string]bool{}
	for _, f := range Catalogue {
		if ids[f.ID] {
			t.Errorf("formula %s is in the catalogue twice", f.ID)
		}
		ids[f.ID] = true
		key := string(f.Scope) + " " + f.Name
		if names[key] {
			t.Errorf("%s metric %s is defined twice", f.Scope, f.Name)
		}
		names[key] = true
		if !regexp.MustCompile(`^[a-z0-9_.]+\.v[0-9]+$`).MatchString(f.ID) {
			t.Errorf("formula id %q is not <name>.v<N>", f.ID)
		}
		if f.Distribution == (f.Aggregation != "") {
			t.Errorf("%s: a distribution has no aggregation of its own, a scalar has one", f.ID)
		}
		if !f.Direction.Valid() {
			t.Errorf("%s: direction %q", f.ID, f.Direction)
		}
		if f.Unit == "" && f.ID != TelemetryDelta {
			t.Errorf("%s has no unit", f.ID)
		}
	}
	for _, h := range Headline {
		if _, ok := RowIdentity(h.Name); !ok {
			t.Errorf("headline %s is not a row metric", h.Name)
		}
	}
}

// TestIdentities: hand-checked lookups of docs/metrics.md's definitions, and names no formula
// defines.
func TestIdentities(t *testing.T) {
	for name, want := range map[string]Identity{
		"ttft_ms.p99":              {"ms", contract.AggregationP99, contract.DirectionLowerIsBetter, TTFT},
		"decode_rate.p99.9":        {"tokens/s", contract.AggregationP99_9, contract.DirectionHigherIsBetter, DecodeRate},
		"icl_max_ms.mean":          {"ms", contract.AggregationMean, contract.DirectionLowerIsBetter, ICLMax},
		"output_throughput_window": {"tokens/s", contract.AggregationRate, contract.DirectionHigherIsBetter, OutputThroughputWindow},
		"request_failures":         {"requests", contract.AggregationCount, contract.DirectionLowerIsBetter, RequestFailures},
		"request_failures.timeout": {"requests", contract.AggregationCount, contract.DirectionLowerIsBetter, RequestFailuresByClass},
		"chunking_factor.mean":     {"tokens/event", contract.AggregationMean, contract.DirectionNone, ChunkingFactor},
		"window_s":                 {"s", contract.AggregationExact, contract.DirectionNone, RequestWindow},
	} {
		if got, ok := RowIdentity(name); !ok || got != want {
			t.Errorf("RowIdentity(%s) = %+v %v, want %+v", name, got, ok, want)
		}
	}
	for _, name := range []string{"ttft_ms.p42", "ttft_ms", "request_failures.", "server.x.delta", "device_energy_j", "request_count", "nope"} {
		if got, ok := RowIdentity(name); ok {
			t.Errorf("RowIdentity(%s) = %+v: no row formula defines it", name, got)
		}
	}
	for name, want := range map[string]Identity{
		"decode_rate.p50.worst_row":         {"tokens/s", contract.AggregationMin, contract.DirectionHigherIsBetter, DecodeRate},
		"ttft_ms.p99.worst_row":             {"ms", contract.AggregationMax, contract.DirectionLowerIsBetter, TTFT},
		"output_throughput_window.best_row": {"tokens/s", contract.AggregationMax, contract.DirectionHigherIsBetter, OutputThroughputWindow},
		"request_count":                     {"count", contract.AggregationCount, contract.DirectionNone, RequestCount},
		"row_count":                         {"count", contract.AggregationCount, contract.DirectionNone, RowCount},
		"request_failures.sum":              {"requests", contract.AggregationSum, contract.DirectionLowerIsBetter, RequestFailures},
		"degraded_rows":                     {"rows", contract.AggregationCount, contract.DirectionLowerIsBetter, DegradedRows},
	} {
		if got, ok := CaseIdentity(name); !ok || got != want {
			t.Errorf("CaseIdentity(%s) = %+v %v, want %+v", name, got, ok, want)
		}
	}
	for _, name := range []string{"ttft_ms.p90.worst_row", "request_throughput.worst_row", "ttft_ms.p99", "request_failures"} {
		if got, ok := CaseIdentity(name); ok {
			t.Errorf("CaseIdentity(%s) = %+v: no case formula defines it", name, got)
		}
	}
}

// TestPercentileHand: type 7 by hand (numpy's linear): over 1..10, h = 9p.
func TestPercentileHand(t *testing.T) {
	xs := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	for p, want := range map[float64]float64{0: 1, 0.5: 5.5, 0.9: 9.1, 0.95: 9.55, 0.99: 9.91, 1: 10} {
		if got := Percentile(xs, p); math.Abs(got-want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", p, got, want)
		}
	}
	if got := Percentile([]float64{7}, 0.99); got != 7 {
		t.Errorf("one sample: %v", got)
	}
	if !math.IsNaN(Percentile(nil, 0.5)) {
		t.Error("an empty sample has a percentile")
	}
	s := Summarize([]float64{3, 1, 2})
	if s.Count != 3 || s.Min != 1 || s.Max != 3 || s.Mean != 2 || s.P50 != 2 || s.HasP999 {
		t.Errorf("summary %+v", s)
	}
}

// TestCaseHand: the case formulas over three hand-made rows.
func TestCaseHand(t *testing.T) {
	v := func(name string, x float64, dir contract.Direction) Value {
		return Value{Name: name, Value: x, Unit: "u", Aggregation: contract.AggregationP99, Direction: dir, Formula: "f.v1"}
	}
	rows := []CaseRow{
		{Requests: 10, Failures: 1, Metrics: []Value{v("ttft_ms.p99", 10, contract.DirectionLowerIsBetter), v("request_throughput", 5, contract.DirectionHigherIsBetter), v("slo_good_fraction", 0.9, contract.DirectionHigherIsBetter),
			{Name: "ttft_ms.p50", Value: 999, Direction: contract.DirectionLowerIsBetter, Diagnostic: true}}},
		{Requests: 20, Failures: 2, Degraded: true, Metrics: []Value{v("ttft_ms.p99", 30, contract.DirectionLowerIsBetter), v("request_throughput", 7, contract.DirectionHigherIsBetter), v("slo_good_fraction", 0.5, contract.DirectionHigherIsBetter)}},
		{Requests: 5, Metrics: []Value{v("ttft_ms.p99", 20, contract.DirectionLowerIsBetter)}},
	}
	got := map[string]Value{}
	for _, x := range append(CaseCounts(rows), CaseSummary(rows)...) {
		got[x.Name] = x
	}
	for _, w := range []struct {
		name    string
		v       float64
		agg     contract.Aggregation
		samples int
	}{
		{"request_count", 35, contract.AggregationCount, 35},
		{"row_count", 3, contract.AggregationCount, 3},
		{"ttft_ms.p99.worst_row", 30, contract.AggregationMax, 3},
		{"request_throughput.best_row", 7, contract.AggregationMax, 2},
		{"slo_good_fraction.worst_row", 0.5, contract.AggregationMin, 2},
		{"request_failures.sum", 3, contract.AggregationSum, 3},
		{"degraded_rows", 1, contract.AggregationCount, 3},
	} {
		x, ok := got[w.name]
		if !ok || x.Value != w.v || x.Aggregation != w.agg || x.Samples != w.samples {
			t.Errorf("%s = %+v, want %v %s %d", w.name, x, w.v, w.agg, w.samples)
		}
		if id, ok := CaseIdentity(w.name); !strings.HasSuffix(w.name, "_row") && (!ok || id != x.Identity()) {
			t.Errorf("%s carries %+v, the catalogue defines %+v", w.name, x.Identity(), id)
		}
	}
	if len(got) != 7 {
		t.Errorf("%d metrics: %v", len(got), got)
	}
	rc := ReceiptCounts(2, 1, 3)
	if len(rc) != 2 || rc[0] != (Value{Name: "results_passed", Value: 2, Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionHigherIsBetter, Formula: ResultsPassed, Samples: 3}) ||
		rc[1] != (Value{Name: "results_failed", Value: 1, Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionLowerIsBetter, Formula: ResultsFailed, Samples: 3}) {
		t.Errorf("receipt counts %+v", rc)
	}
}

// TestRowValuesHaveTheirIdentity: every value a row emits carries the identity RowIdentity
// defines for its name, in closed and open loop; without an SLO the SLO metrics are left out.
func TestRowValuesHaveTheirIdentity(t *testing.T) {
	reqs := []Request{
		{Sched: 0, Send: 1e6, HasSend: true, Hdr: 2e6, HasHdr: true, End: 20e6, HasEnd: true, Close: 21e6, HasClose: true, Content: []int64{10e6, 14e6, 20e6}, HasUsage: true, Completion: 4, Prompt: 5},
		{Sched: 20e6, Send: 20.5e6, HasSend: true, Close: 21e6, HasClose: true, Failed: true, ErrorClass: "timeout"},
		{Sched: 21e6, Send: 21.2e6, HasSend: true, Hdr: 22e6, HasHdr: true, End: 35e6, HasEnd: true, Content: []int64{30e6, 31e6, 35e6}, HasUsage: true, Completion: 3, Prompt: 2},
	}
	for _, loop := range contract.RowLoopValues() {
		res := Row(RowSpec{Concurrency: 2, Loop: loop, SLO: &SLO{}}, reqs)
		if len(res.Values) < 40 {
			t.Fatalf("%s: only %d values", loop, len(res.Values))
		}
		for _, v := range res.Values {
			if id, ok := RowIdentity(v.Name); !ok || id != v.Identity() {
				t.Errorf("%s carries %+v, RowIdentity says %+v %v", v.Name, v.Identity(), id, ok)
			}
		}
		if without := Row(RowSpec{Concurrency: 2, Loop: loop}, reqs); len(without.Values) != len(res.Values)-len(SLOMetrics) {
			t.Errorf("%s: without an SLO %d values, with one %d", loop, len(without.Values), len(res.Values))
		}
	}
}

// TestCatalogueDocumented: docs/metrics.md defines every formula of the catalogue, and the
// catalogue holds every formula the page's tables define.
func TestCatalogueDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(raw)
	for _, f := range Catalogue {
		if !strings.Contains(page, "`"+f.ID+"`") {
			t.Errorf("formula %s is not in docs/metrics.md", f.ID)
		}
	}
	for _, m := range regexp.MustCompile("(?m)^\\|[^|\\n]*\\| `([a-z0-9_.-]+\\.v[0-9]+)` \\||^\\| `([a-z0-9_.-]+\\.v[0-9]+)` \\|").FindAllStringSubmatch(page, -1) {
		id := m[1] + m[2]
		if _, ok := Lookup(id); !ok {
			t.Errorf("docs/metrics.md defines %s, which the catalogue does not hold", id)
		}
	}
}
