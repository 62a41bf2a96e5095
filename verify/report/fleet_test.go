package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify"
)

// TestFleetPage: outlier hosts come first, their outlier cells are marked, worse-than-median
// values are red and better ones blue for each metric's direction, the rows that did not pass
// are listed, and the page loads nothing.
func TestFleetPage(t *testing.T) {
	const commit = "e8aa37b0b94b64a7d082dcb734da7e049953db6c"
	plan := &verify.FleetPlan{Digest: "sha256:" + strings.Repeat("1", 64), Doc: &contract.FleetPlanDoc{ID: "page", Commit: commit}}
	var rs []verify.FleetReceipt
	for i := range 9 {
		plan.Doc.Rows = append(plan.Doc.Rows, contract.FleetRow{Index: int64(i), Workload: "w.json", Variant: "v", Repetition: int64(i + 1)})
		if i == 8 {
			continue // missing
		}
		host := fmt.Sprintf("host-%d", i)
		ttft := 10 + float64(i%3)*0.1
		if i == 5 {
			ttft = 30 // slow host
		}
		rs = append(rs, verify.FleetReceipt{Path: host, Digest: fmt.Sprintf("sha256:%064d", i), Verified: true, Doc: &verify.FleetReceiptDoc{
			Host: host, Commit: commit, WorkloadPath: "w.json", WorkloadDigest: "sha256:" + strings.Repeat("a", 64), Variant: "v",
			ReceiptID: "r-" + host, Qualification: contract.QualificationVerdictPassed,
			Command: []string{"--output", fmt.Sprintf("qualification/receipts/fleet/page/row-%d/%s.json", i, host)},
			Metrics: []verify.FleetValue{
				{Name: "c/r0/ttft_ms.p50", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Value: ttft},
				{Name: "c/r0/tokens_per_s", Unit: "tokens/s", Direction: contract.DirectionHigherIsBetter, Value: 100 + float64(i%3)},
			},
		}})
	}
	m := verify.BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
	if len(m.OutlierHosts) != 1 || m.OutlierHosts[0].Host != "host-5" {
		t.Fatalf("outlier hosts %+v", m.OutlierHosts)
	}
	p := BuildFleetPage(m, "sha256:"+strings.Repeat("f", 64), rs)
	if len(p.Hosts) != 8 || p.Hosts[0].Host != "host-5" || !p.Hosts[0].Outlier || p.Hosts[1].Host != "host-0" {
		t.Fatalf("host order %+v", p.Hosts)
	}
	// ttft is the second column (metrics sorted by name): 30 ms is worse, and an outlier.
	if c := p.Hosts[0].Cells[1]; !c.Outlier || c.Heat != 3 {
		t.Fatalf("slow host ttft cell %+v", c)
	}
	// tokens/s 102 (host-2) is above the median 101 of a higher-is-better metric: better, blue.
	var h2 FleetHostRow
	for _, h := range p.Hosts {
		if h.Host == "host-2" {
			h2 = h
		}
	}
	if c := h2.Cells[0]; c.Heat >= 0 || c.Outlier {
		t.Fatalf("host-2 tokens/s cell %+v (median %v mad %v)", c, m.Metrics[0].Median, m.Metrics[0].Mad)
	}
	if len(p.Problems) != 1 || p.Problems[0].Status != contract.FleetManifestStatusMissing {
		t.Fatalf("problems %+v", p.Problems)
	}
	var b bytes.Buffer
	if err := WriteFleetHTML(&b, p); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	for _, want := range []string{"<b>host-5</b>", `class="h3 o">30</td>`, "missing", "no receipt ran row 8"} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if externalRef.MatchString(html) {
		t.Errorf("the fleet page references something outside itself: %q", externalRef.FindString(html))
	}
	if regexp.MustCompile(`<script`).MatchString(html) {
		t.Error("the fleet page has a script")
	}
}
