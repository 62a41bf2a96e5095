package report

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify"
)

// TestAcrossReceipts: a report of the three frozen receipts states, for each row two or more of
// them have, the median of each across-receipt metric over the receipts, and says that three
// values are too few for a distribution-free 95% interval (six are needed).
func TestAcrossReceipts(t *testing.T) {
	v := frozenView(t, frozenReceipts...)
	if len(v.across) == 0 {
		t.Fatal("no intervals across receipts")
	}
	for _, a := range v.across {
		if a.OK || len(a.Values) < 2 || len(a.Values) > 3 {
			t.Errorf("%s %s %s: ok %v over %d values", a.Case, a.Row, a.Metric, a.OK, len(a.Values))
		}
	}
	_, text, js := render(t, v)
	// The JSON view carries the same items, for dashboards; the CSV a line each.
	var doc contract.ReportViewDoc
	if err := json.Unmarshal([]byte(js), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Across) != len(v.across) {
		t.Fatalf("JSON view has %d across items, the page %d", len(doc.Across), len(v.across))
	}
	for i, a := range doc.Across {
		if a.Metric != v.across[i].Metric || a.Median != v.across[i].Interval.Estimate || !a.TooFewReceipts || a.Low != nil || len(a.Values) != len(v.across[i].Values) {
			t.Errorf("JSON across %d = %+v, page %+v", i, a, v.across[i])
		}
	}
	var csvOut strings.Builder
	if err := v.CSV(&csvOut); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(csvOut.String(), ",median_across_receipts,"); n != len(v.across) {
		t.Errorf("CSV has %d median_across_receipts lines, want %d", n, len(v.across))
	}
	if !regexp.MustCompile(`(?m)^  chat-stream c1-r0 +ttft_ms.p50 median \S+ over 3 receipts: too few for an interval at 0.95 \(need 6\)$`).MatchString(text) &&
		!strings.Contains(text, "over 3 receipts: too few for an interval at 0.95 (need 6)") {
		t.Errorf("text lacks the across-receipts line:\n%s", text)
	}
}

// TestFigureCharts draws the corpus's capacity search case result: the capacity curve with its
// SLO line and capacity mark, the Pareto front through its rows and the intervals as whiskers
// (an interval over too few samples is drawn as its estimate and says so).
func TestFigureCharts(t *testing.T) {
	b, err := os.ReadFile("../../schemas/testdata/case-result.v1/valid/serving-capacity-search.json")
	if err != nil {
		t.Fatal(err)
	}
	var cr contract.CaseResultDoc
	if err := json.Unmarshal(b, &cr); err != nil {
		t.Fatal(err)
	}
	f := figuresOf(verify.CaseEvidence{CaseResult: &cr})
	if f == nil || f.capacity == nil || f.pareto == nil || len(f.points) != len(cr.Rows) {
		t.Fatalf("figures %+v", f)
	}
	page := string(pageData{View: &View{figures: map[[2]int]*caseFigures{{0, 0}: f}}}.Figures(0, 0))
	for _, want := range []string{`data-chart="capacity"`, "SLO: good fraction ≥ 0.95", "capacity 8 (first failing 9), ended: resolution",
		`data-chart="pareto"`, "4 of 7 rows on the front", `data-chart="intervals"`, "c4 ttft_ms.p99 24.10: too few samples (90) for an interval", "[21.20, 21.90] n 90"} {
		if !strings.Contains(page, want) {
			t.Errorf("charts lack %q", want)
		}
	}
	if n := strings.Count(page, "<circle"); n < len(cr.Capacity.Probes)+len(f.points) {
		t.Errorf("%d points drawn", n)
	}
	if strings.Contains(page, "style=") || strings.Contains(page, "<script") {
		t.Error("a chart carries a style attribute or a script")
	}
	var sb strings.Builder
	for _, iv := range cr.Intervals {
		sb.WriteString(intervalText(iv) + "\n")
	}
	if want := "c4 ttft_ms.p99 over 3 repetitions: 24.10, too few samples for an interval (90 < 1000)"; !strings.Contains(sb.String(), want) {
		t.Errorf("interval text lacks %q:\n%s", want, sb.String())
	}
}

// TestAcrossSixReceipts: with six receipts of a row the median of each metric gets its
// distribution-free interval [x_(1), x_(6)] (coverage 1 - 2/64 = 0.96875); a metric only five
// receipts have gets none.
func TestAcrossSixReceipts(t *testing.T) {
	v := &View{}
	var states []receiptState
	k := rowKey{"chat", 0, "c1-r0"}
	for i := range 6 {
		v.Receipts = append(v.Receipts, Receipt{Cases: []Case{{ID: "chat", Rows: []Row{{Name: "c1-r0"}}}}})
		ms := []contract.Metric{{Name: "ttft_ms.p50", Value: float64(20 + (i*5)%6)}}
		if i < 5 {
			ms = append(ms, contract.Metric{Name: "request_throughput", Value: float64(10 + i)})
		}
		states = append(states, receiptState{metricsByRow: map[rowKey][]contract.Metric{k: ms}})
	}
	as := acrossOf(v, states)
	if len(as) != 2 {
		t.Fatalf("%d intervals: %+v", len(as), as)
	}
	if a := as[0]; a.Metric != "ttft_ms.p50" || !a.OK || a.Interval.Low != 20 || a.Interval.High != 25 || a.Interval.Estimate != 22.5 {
		t.Errorf("ttft: %+v", a)
	}
	if a := as[1]; a.Metric != "request_throughput" || a.OK || a.Interval.Estimate != 12 {
		t.Errorf("throughput: %+v", a)
	}
}
