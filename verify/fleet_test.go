package verify

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// frozenCommit is the commit the frozen campaign ran from.
const frozenCommit = "e8aa37b0b94b64a7d082dcb734da7e049953db6c"

// fleetRow makes one published fleet row from a frozen receipt (src: a-1 or a-2, two real runs
// of variant cpu-a): the tree of a fresh copy holding only that receipt, whose host id and
// qualrun command are what the fleet job script gives qualrun run on host (--host-id host
// --output qualification/receipts/fleet/PLAN/row-N/HOST.json), its commit set when commit is not
// "", the run directory renamed as qualrun would name it, resealed with k.
func fleetRow(t testing.TB, k testKey, src, plan string, row int, host, commit string) Evidence {
	t.Helper()
	root := copyTree(t, frozenRoot)
	for _, r := range frozenReceipts {
		if r == src {
			continue
		}
		base := strings.TrimSuffix(r, ".json")
		for _, suf := range []string{".json", ".intoto.dsse.json", ".sigstore.json"} {
			os.Remove(filepath.Join(root, base+suf))
		}
	}
	rp := filepath.Join(root, src)
	rc := readTree(t, rp)
	rc["environment"].(map[string]any)["host_id"] = host
	q := rc["qualification"].(map[string]any)
	cmd := q["command"].([]any)
	for i := 0; i+1 < len(cmd); i++ {
		switch cmd[i] {
		case "--output":
			cmd[i+1] = fmt.Sprintf("qualification/receipts/fleet/%s/row-%d/%s.json", plan, row, host)
		case "--host-id":
			cmd[i+1] = host
		}
	}
	if commit != "" {
		s := rc["source"].(map[string]any)
		s["commit"], s["origin_main"] = commit, commit
	}
	writeTree(t, rp, rc)
	syncRunConfigCommand(t, filepath.Join(root, ".qualification/runs", rc["receipt_id"].(string)), cmd)
	renameRun(t, root, src)
	reseal(t, root, src, k)
	ev, err := LocateIn(root, rp)
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

// writePlan writes a plan of n rows of the frozen workload (variant cpu-a, repetitions 1..n).
func writePlan(t testing.TB, id string, n int) *FleetPlan {
	t.Helper()
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf(`{"index": %d, "workload": "workloads/frozen.json", "variant": "cpu-a", "repetition": %d}`, i, i+1))
	}
	doc := fmt.Sprintf(`{"schema": "qualkit.fleet-plan.v1", "id": %q, "description": "The frozen campaign on %d hosts.",
  "repository": "/tmp/fz.git", "commit": %q, "signing": {"key_file": "/etc/qualkit/host.key"},
  "receipts": {"directory": "/shared/receipts"}, "rows": [%s]}`, id, n, frozenCommit, strings.Join(rows, ",\n"))
	p := filepath.Join(t.TempDir(), "plan.json")
	mustWriteTB(t, p, []byte(doc))
	plan, err := LoadFleetPlan(p)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func entryFor(t *testing.T, m *contract.FleetManifestDoc, row int64, status contract.FleetManifestStatus) contract.FleetManifestEntry {
	t.Helper()
	for _, e := range m.Entries {
		if e.Row != nil && *e.Row == row && e.Status == status {
			return e
		}
	}
	b, _ := json.MarshalIndent(m.Entries, "", " ")
	t.Fatalf("no %s entry for row %d in\n%s", status, row, b)
	return contract.FleetManifestEntry{}
}

// TestFleetManifestBindsRows: real resealed receipts of a four-row plan: rows 0 and 1 verify
// and pass; row 2's receipt has a request record changed after signing (verification rejects it:
// failed); row 3 has no receipt of this commit (missing), while a receipt from another commit
// claims it (not belonging); a second receipt for row 0 does not belong either. The statistics
// cover the two passed rows; the manifest is a valid qualkit.fleet-manifest.v1.
func TestFleetManifestBindsRows(t *testing.T) {
	k := newTestKey(t)
	plan := writePlan(t, "fleetdemo", 4)
	const other = "0123456789abcdef0123456789abcdef01234567"
	evs := []Evidence{
		fleetRow(t, k, frozenReceipts[0], "fleetdemo", 0, "node-a", ""),
		fleetRow(t, k, frozenReceipts[1], "fleetdemo", 1, "node-b", ""),
		fleetRow(t, k, frozenReceipts[0], "fleetdemo", 2, "node-c", ""),
		fleetRow(t, k, frozenReceipts[0], "fleetdemo", 3, "node-d", other),
		fleetRow(t, k, frozenReceipts[1], "fleetdemo", 0, "node-e", ""),
		fleetRow(t, k, frozenReceipts[0], "otherplan", 1, "node-f", ""),
	}
	// Row 2: one byte of a request record changed after the receipt was signed.
	rec := filepath.Join(evs[2].Root, runDirOf(t, evs[2].Root, evs[2].Receipt), "cases/000-chat-stream-r000/rows/c0001-r000.jsonl")
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	mustWriteTB(t, rec, []byte(strings.Replace(string(b), `"finish_reason":"length"`, `"finish_reason":"stop"`, 1)))
	labels := make([]string, len(evs))
	for i, ev := range evs {
		labels[i] = filepath.Join(ev.Root, ev.Receipt)
	}
	rs, err := VerifyFleetReceipts(context.Background(), evs, labels, k.policy(), 2)
	if err != nil {
		t.Fatal(err)
	}
	m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
	want := contract.FleetManifestCounts{Passed: 2, Failed: 1, Missing: 1, NotBelonging: 3}
	if m.Counts != want {
		b, _ := json.MarshalIndent(m.Entries, "", " ")
		t.Fatalf("counts %+v, want %+v\n%s", m.Counts, want, b)
	}
	if e := entryFor(t, m, 0, contract.FleetManifestStatusPassed); e.Receipt.Verification != contract.ReceiptRefVerificationVerified {
		t.Fatalf("row 0: %+v", e)
	}
	entryFor(t, m, 1, contract.FleetManifestStatusPassed)
	if e := entryFor(t, m, 2, contract.FleetManifestStatusFailed); e.Host != "node-c" || !strings.Contains(e.Why, "verification rejected") {
		t.Fatalf("row 2: %+v", e)
	}
	if e := entryFor(t, m, 3, contract.FleetManifestStatusMissing); e.Receipt != nil {
		t.Fatalf("row 3: %+v", e)
	}
	if e := entryFor(t, m, 3, contract.FleetManifestStatusNotBelonging); e.Host != "node-d" || !strings.Contains(e.Why, "commit "+other) {
		t.Fatalf("row 3 stray: %+v", e)
	}
	if e := entryFor(t, m, 0, contract.FleetManifestStatusNotBelonging); !strings.Contains(e.Why, "a second receipt for row 0") {
		t.Fatalf("row 0 duplicate: %+v", e)
	}
	var otherPlan bool
	for _, e := range m.Entries {
		otherPlan = otherPlan || (e.Row == nil && e.Host == "node-f" && strings.Contains(e.Why, "plan otherplan"))
	}
	if !otherPlan {
		t.Fatal("the receipt of another plan is not named")
	}
	// Statistics: the two passed rows, a-1 (or a-2 for row 0's duplicate winner) and a-2.
	var ttft *contract.FleetManifestMetricStats
	for i := range m.Metrics {
		if m.Metrics[i].Name == "chat-stream/r0/ttft_ms.p50.worst_row" {
			ttft = &m.Metrics[i]
		}
	}
	if ttft == nil || ttft.Hosts != 2 || ttft.Unit != "ms" {
		t.Fatalf("ttft stats %+v", ttft)
	}
	if math.Abs(ttft.Median-(ttft.Min.Value+ttft.Max.Value)/2) > 1e-12 || math.Abs(ttft.Mad-(ttft.Max.Value-ttft.Min.Value)/2) > 1e-12 {
		t.Fatalf("two hosts: median %v mad %v of min %v max %v", ttft.Median, ttft.Mad, ttft.Min, ttft.Max)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := schemas.Decode[contract.FleetManifestDoc](raw, "manifest", contract.FleetManifest); err != nil {
		t.Fatalf("the manifest is not a valid fleet manifest: %v", err)
	}
	// Order does not matter: the receipts reversed give the same manifest.
	rev := make([]FleetReceipt, len(rs))
	for i := range rs {
		rev[len(rs)-1-i] = rs[i]
	}
	raw2, _ := json.Marshal(BuildFleetManifest(plan, rev, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test"))
	if string(raw) != string(raw2) {
		t.Fatal("the manifest depends on the order of the receipts")
	}

	// The signed manifest checks; a derived member edited and signed again does not.
	signed := func(doc *contract.FleetManifestDoc) ([]byte, []byte) {
		raw, _ := json.MarshalIndent(doc, "", "  ")
		st, err := FleetStatement("fleet.json", raw, doc)
		if err != nil {
			t.Fatal(err)
		}
		env, _ := sealPayload(t, st, k)
		return raw, env
	}
	keys := []crypto.PublicKey{k.pub}
	raw, env := signed(m)
	signer, problems, err := CheckFleetManifest(raw, env, "fleet.json", keys, m)
	if err != nil || len(problems) != 0 || signer != KeyFingerprint(k.pub) {
		t.Fatalf("check of the manifest as written: signer %q, %v, %v", signer, problems, err)
	}
	edits := map[string]func(d *contract.FleetManifestDoc){
		"median": func(d *contract.FleetManifestDoc) { d.Metrics[0].Median += 1 },
		"row-status": func(d *contract.FleetManifestDoc) {
			d.Entries[2].Status = contract.FleetManifestStatusPassed
			d.Entries[2].Why = ""
		},
		"counts":         func(d *contract.FleetManifestDoc) { d.Counts.Failed, d.Counts.Passed = 0, 3 },
		"receipt-digest": func(d *contract.FleetManifestDoc) { d.Entries[0].Receipt.Digest = d.Entries[1].Receipt.Digest },
		"outlier-k":      func(d *contract.FleetManifestDoc) { d.OutlierRule.K = 0.1 },
		"outlier-hosts": func(d *contract.FleetManifestDoc) {
			d.OutlierHosts = append(d.OutlierHosts, contract.FleetManifestOutlierHost{Host: "node-b", Metrics: []string{d.Metrics[0].Name}})
		},
	}
	for name, edit := range edits {
		t.Run("resigned-"+name, func(t *testing.T) {
			var d contract.FleetManifestDoc
			b, _ := json.Marshal(m)
			json.Unmarshal(b, &d)
			edit(&d)
			raw, env := signed(&d)
			_, problems, err := CheckFleetManifest(raw, env, "fleet.json", keys, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 || !errors.Is(problems[0], ErrFleetBinding) {
				t.Fatalf("a re-signed edit of %s: %v, want ErrFleetBinding", name, problems)
			}
		})
	}
	// Edited without signing again: the signature no longer covers the bytes.
	var d contract.FleetManifestDoc
	json.Unmarshal(raw, &d)
	d.CreatedAt = "2030-01-01T00:00:00Z"
	edited, _ := json.MarshalIndent(&d, "", "  ")
	_, problems, _ = CheckFleetManifest(edited, env, "fleet.json", keys, m)
	if len(problems) != 1 || !errors.Is(problems[0], ErrFleetSignature) {
		t.Fatalf("an unsigned edit: %v, want ErrFleetSignature", problems)
	}
	// Another key: no pinned key signed it.
	_, problems, _ = CheckFleetManifest(raw, env, "fleet.json", []crypto.PublicKey{newTestKey(t).pub}, m)
	if len(problems) != 1 || !errors.Is(problems[0], ErrFleetSignature) {
		t.Fatalf("a foreign key: %v, want ErrFleetSignature", problems)
	}
}

// TestFleetStatistics: the aggregation over synthetic receipts: a failed qualification is a
// failed row and stays out of the statistics, the extremes name their host and row, an outlier
// host is named under the rule and listed first.
func TestFleetStatisticsAndOutliers(t *testing.T) {
	plan := writePlan(t, "synthetic", 8)
	vals := []float64{10, 10.05, 9.95, 10, 10.1, 9.9, 10.2, 10.5}
	var rs []FleetReceipt
	for i, v := range vals {
		host := fmt.Sprintf("host-%d", i)
		q := contract.QualificationVerdictPassed
		if i == 7 {
			q = contract.QualificationVerdictFailed
		}
		rs = append(rs, FleetReceipt{Path: host, Digest: fmt.Sprintf("sha256:%064d", i), Verified: true, Doc: &FleetReceiptDoc{
			ReceiptID: "r-" + host, Host: host, Commit: frozenCommit, WorkloadPath: "workloads/frozen.json", WorkloadDigest: "sha256:" + strings.Repeat("a", 64),
			Variant: "cpu-a", Command: []string{"qualrun", "run", "--output", fmt.Sprintf("qualification/receipts/fleet/synthetic/row-%d/%s.json", i, host)},
			Qualification: q,
			Metrics: []FleetValue{
				{Name: "c/r0/ttft_ms.p50", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Value: v},
				{Name: "c/r0/tps", Unit: "tokens/s", Direction: contract.DirectionHigherIsBetter, Value: 100 + float64(i%2)},
			},
		}})
	}
	// host-6 is 3x slower than the rest on a second metric too.
	rs[6].Doc.Metrics[1].Value = 300
	m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
	if m.Counts.Passed != 7 || m.Counts.Failed != 1 {
		t.Fatalf("counts %+v", m.Counts)
	}
	if e := entryFor(t, m, 7, contract.FleetManifestStatusFailed); !strings.Contains(e.Why, "qualification verdict on host host-7 is failed") {
		t.Fatalf("row 7: %+v", e)
	}
	byName := map[string]contract.FleetManifestMetricStats{}
	for _, s := range m.Metrics {
		byName[s.Name] = s
	}
	tt := byName["c/r0/ttft_ms.p50"]
	// Seven passed values 10 10.05 9.95 10 10.1 9.9 10.2: median 10, deviations sorted
	// 0 0 .05 .05 .1 .1 .2: MAD .05; 10.2 scores .2/(1.4826*.05) = 2.70, inside k = 3.5.
	if tt.Hosts != 7 || math.Abs(tt.Median-10) > 1e-12 || math.Abs(tt.Mad-0.05) > 1e-9 || len(tt.Outliers) != 0 {
		t.Fatalf("ttft %+v", tt)
	}
	if tt.Min.Host != "host-5" || tt.Min.Row != 5 || tt.Max.Host != "host-6" || tt.Max.Value != 10.2 {
		t.Fatalf("extremes %+v %+v", tt.Min, tt.Max)
	}
	tps := byName["c/r0/tps"]
	// 100 101 100 101 100 101 300: median 101, deviations 1 0 1 0 1 0 199: MAD 1; 300 scores 134.
	if len(tps.Outliers) != 1 || tps.Outliers[0].Host != "host-6" || math.Abs(tps.Outliers[0].Score-199/1.4826) > 1e-9 {
		t.Fatalf("tps outliers %+v (median %v mad %v)", tps.Outliers, tps.Median, tps.Mad)
	}
	if len(m.OutlierHosts) != 1 || m.OutlierHosts[0].Host != "host-6" || len(m.OutlierHosts[0].Metrics) != 1 {
		t.Fatalf("outlier hosts %+v", m.OutlierHosts)
	}
	// With k = 2, 10.2 (score 2.70) is an outlier of ttft too: host-6 has two.
	m = BuildFleetManifest(plan, rs, 2, "2026-12-02T01:00:00Z", "test")
	if len(m.OutlierHosts) != 1 || len(m.OutlierHosts[0].Metrics) != 2 {
		t.Fatalf("k=2: outlier hosts %+v", m.OutlierHosts)
	}
}
