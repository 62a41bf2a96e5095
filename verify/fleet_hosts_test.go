package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// syntheticReceipt is a verified, passed receipt of host for row of plan synthetic.
func syntheticReceipt(row int, host string, seq int) FleetReceipt {
	return FleetReceipt{Path: fmt.Sprintf("%s-%d", host, row), Digest: fmt.Sprintf("sha256:%064d", seq), Verified: true, Doc: &FleetReceiptDoc{
		ReceiptID: fmt.Sprintf("r-%s-%d", host, row), Host: host, Commit: frozenCommit, WorkloadPath: "workloads/frozen.json", WorkloadDigest: "sha256:" + strings.Repeat("a", 64),
		Variant: "cpu-a", Command: []string{"qualrun", "run", "--output", fmt.Sprintf("qualification/receipts/fleet/synthetic/row-%d/%s.json", row, host)},
		Qualification: contract.QualificationVerdictPassed,
		Metrics:       []FleetValue{{Name: "c/r0/ttft_ms.p50", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Value: 10 + float64(row)}},
	}}
}

// TestFleetHostBinding: one host fills one row unless the plan pins the rows to it, and a row
// pinned to a node is filled only by that node's receipt. On 4822f1d three rows bound to receipts
// of one host gave "3 passed, hosts 3".
func TestFleetHostBinding(t *testing.T) {
	t.Run("one host, three rows", func(t *testing.T) {
		plan := writePlan(t, "synthetic", 3)
		rs := []FleetReceipt{syntheticReceipt(0, "node-a", 0), syntheticReceipt(1, "node-a", 1), syntheticReceipt(2, "node-a", 2)}
		m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
		if m.Counts.Passed != 1 || m.Counts.Missing != 2 || m.Counts.NotBelonging != 2 {
			t.Fatalf("counts %+v, want 1 passed, 2 missing, 2 not belonging", m.Counts)
		}
		for _, st := range m.Metrics {
			if st.Hosts != 1 {
				t.Errorf("%s over %d hosts, want 1", st.Name, st.Hosts)
			}
		}
		found := false
		for _, e := range m.Entries {
			found = found || e.Status == contract.FleetManifestStatusNotBelonging && strings.Contains(e.Why, "host node-a already fills row 0")
		}
		if !found {
			t.Fatalf("no entry says node-a already fills row 0: %+v", m.Entries)
		}
	})
	t.Run("three hosts", func(t *testing.T) {
		plan := writePlan(t, "synthetic", 3)
		rs := []FleetReceipt{syntheticReceipt(0, "node-a", 0), syntheticReceipt(1, "node-b", 1), syntheticReceipt(2, "node-c", 2)}
		m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
		if m.Counts.Passed != 3 || m.Metrics[0].Hosts != 3 {
			t.Fatalf("counts %+v, hosts %d", m.Counts, m.Metrics[0].Hosts)
		}
	})
	pinned := func(t *testing.T, nodes ...string) *FleetPlan {
		plan := writePlan(t, "synthetic", len(nodes))
		for i, n := range nodes {
			plan.Doc.Rows[i].Host = &contract.FleetHostSelector{Slurm: &contract.SlurmSelector{Nodelist: n}}
		}
		return plan
	}
	t.Run("rows pinned to one node", func(t *testing.T) {
		plan := pinned(t, "Node-A", "Node-A")
		rs := []FleetReceipt{syntheticReceipt(0, "node-a", 0), syntheticReceipt(1, "node-a", 1)}
		m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
		if m.Counts.Passed != 2 {
			t.Fatalf("counts %+v: the plan pins both rows to node-a", m.Counts)
		}
	})
	t.Run("a pinned row filled by another host", func(t *testing.T) {
		plan := pinned(t, "node-a", "node-b")
		rs := []FleetReceipt{syntheticReceipt(0, "node-a", 0), syntheticReceipt(1, "node-c", 1)}
		m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
		if m.Counts.Passed != 1 || m.Counts.Missing != 1 || m.Counts.NotBelonging != 1 {
			t.Fatalf("counts %+v", m.Counts)
		}
		e := m.Entries[len(m.Entries)-1]
		if !strings.Contains(e.Why, "row 1 is pinned to host node-b; the receipt's host is node-c") {
			t.Fatalf("why %q", e.Why)
		}
	})
	t.Run("kubernetes hostname selector", func(t *testing.T) {
		plan := writePlan(t, "synthetic", 1)
		plan.Doc.Rows[0].Host = &contract.FleetHostSelector{Kubernetes: &contract.KubernetesSelector{NodeSelector: map[string]string{"kubernetes.io/hostname": "gpu-7"}}}
		m := BuildFleetManifest(plan, []FleetReceipt{syntheticReceipt(0, "gpu-8", 0)}, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
		if m.Counts.Passed != 0 || m.Counts.NotBelonging != 1 {
			t.Fatalf("counts %+v", m.Counts)
		}
	})
}
