package verify

import (
	"context"
	"crypto"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/metric"
)

// Fleet scale (docs/fleet.md, "Scale"):
//
//	go test ./verify/ -run '^$' -bench BenchmarkFleet -benchtime 1x -fleet-receipts 10000
//
// and, for the command line with its peak RSS,
//
//	go test ./verify/ -run TestWriteFleetEvidence -fleet-evidence DIR -fleet-receipts 10000
//	/usr/bin/time -v qualverify fleet DIR/plan.json DIR/.qualification/receipts --key DIR/fleet.pub \
//	    --allow-unpublished-unsafe --sign-key KEY --output DIR/fleet.json
var (
	fleetReceipts = flag.Int("fleet-receipts", 200, "receipts in the fleet benchmark and TestWriteFleetEvidence")
	fleetEvidence = flag.String("fleet-evidence", "", "write a fleet of -fleet-receipts receipts, its plan and its key to this directory")
)

// writeFleet writes n receipts into one evidence root, each a real frozen cpu-a run (a-1 and
// a-2 alternate) as host host-NNNNN ran row N of plan "scale": the run directory copied under
// the id qualrun derives for that host (request records, logs and the lifecycle record hard
// links, case results copied and rewritten), resealed with k. It returns the plan.
func writeFleet(tb testing.TB, root string, n int, k testKey) *FleetPlan {
	tb.Helper()
	copyInto(tb, frozenRoot, root)
	templates := map[string][]byte{}
	for _, r := range frozenReceipts[:2] {
		b, err := os.ReadFile(filepath.Join(root, r))
		if err != nil {
			tb.Fatal(err)
		}
		templates[r] = b
	}
	var rows []string
	for i := range n {
		src := frozenReceipts[i%2]
		host := fmt.Sprintf("host-%05d", i)
		rel := fmt.Sprintf(".qualification/receipts/fleet/h-%05d.json", i)
		rp := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(rp), 0o755); err != nil {
			tb.Fatal(err)
		}
		mustWriteTB(tb, rp, templates[src])
		rc := readTree(tb, rp)
		oldRun := ".qualification/runs/" + rc["receipt_id"].(string)
		rc["environment"].(map[string]any)["host_id"] = host
		cmd := rc["qualification"].(map[string]any)["command"].([]any)
		for j := 0; j+1 < len(cmd); j++ {
			switch cmd[j] {
			case "--output":
				cmd[j+1] = fmt.Sprintf("qualification/receipts/fleet/scale/row-%d/%s.json", i, host)
			case "--host-id":
				cmd[j+1] = host
			}
		}
		// A fresh id for this host: renameRun moves runs/<old id>, so a linked copy of the
		// template's run directory stands there first.
		staged := oldRun + ".stage"
		linkRunDir(tb, filepath.Join(root, oldRun), filepath.Join(root, staged))
		if err := os.Rename(filepath.Join(root, oldRun), filepath.Join(root, oldRun+".keep")); err != nil {
			tb.Fatal(err)
		}
		if err := os.Rename(filepath.Join(root, staged), filepath.Join(root, oldRun)); err != nil {
			tb.Fatal(err)
		}
		writeTree(tb, rp, rc)
		syncRunConfigCommand(tb, filepath.Join(root, oldRun), cmd)
		renameRun(tb, root, rel)
		if err := os.Rename(filepath.Join(root, oldRun+".keep"), filepath.Join(root, oldRun)); err != nil {
			tb.Fatal(err)
		}
		reseal(tb, root, rel, k)
		rows = append(rows, fmt.Sprintf(`{"index": %d, "workload": "workloads/frozen.json", "variant": "cpu-a", "repetition": 1, "host": {"slurm": {"nodelist": %q}}}`, i, host))
	}
	for _, r := range frozenReceipts {
		base := strings.TrimSuffix(r, ".json")
		for _, suf := range []string{".json", ".intoto.dsse.json", ".sigstore.json"} {
			os.Remove(filepath.Join(root, base+suf))
		}
	}
	doc := fmt.Sprintf(`{"schema": "qualkit.fleet-plan.v1", "id": "scale", "description": "The frozen campaign on %d hosts.",
  "repository": "/tmp/fz.git", "commit": %q, "signing": {"key_file": "/etc/qualkit/host.key"},
  "receipts": {"directory": "/shared/receipts"}, "rows": [%s]}`, n, frozenCommit, strings.Join(rows, ",\n"))
	mustWriteTB(tb, filepath.Join(root, "plan.json"), []byte(doc))
	der, err := x509.MarshalPKIXPublicKey(k.pub)
	if err != nil {
		tb.Fatal(err)
	}
	mustWriteTB(tb, filepath.Join(root, "fleet.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	plan, err := LoadFleetPlan(filepath.Join(root, "plan.json"))
	if err != nil {
		tb.Fatal(err)
	}
	return plan
}

// linkRunDir copies a run directory: case results are copied (renameRun rewrites them), every
// other file is a hard link.
func linkRunDir(tb testing.TB, src, dst string) {
	tb.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o755)
		}
		if d.Name() == "case-result.json" {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(out, b, 0o644)
		}
		return os.Link(p, out)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

func fleetEvidenceOf(tb testing.TB, root string) ([]Evidence, []string) {
	tb.Helper()
	dir := filepath.Join(root, ".qualification/receipts/fleet")
	ents, err := os.ReadDir(dir)
	if err != nil {
		tb.Fatal(err)
	}
	var evs []Evidence
	var labels []string
	for _, e := range ents {
		if !IsReceiptName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		ev, err := LocateIn(root, p)
		if err != nil {
			tb.Fatal(err)
		}
		evs, labels = append(evs, ev), append(labels, p)
	}
	return evs, labels
}

// TestWriteFleetEvidence writes the fleet evidence for measuring the command line (see above);
// without -fleet-evidence it writes a small fleet and checks it verifies and binds.
func TestWriteFleetEvidence(t *testing.T) {
	dir, n := *fleetEvidence, *fleetReceipts
	if dir == "" {
		dir, n = t.TempDir(), 6
	}
	k := newTestKey(t)
	start := time.Now()
	plan := writeFleet(t, dir, n, k)
	t.Logf("wrote %d receipts in %v", n, time.Since(start))
	evs, labels := fleetEvidenceOf(t, dir)
	if len(evs) != n {
		t.Fatalf("%d receipts, want %d", len(evs), n)
	}
	if *fleetEvidence != "" {
		return
	}
	rs, err := VerifyFleetReceipts(context.Background(), evs, labels, k.policy(), 2)
	if err != nil {
		t.Fatal(err)
	}
	m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
	if m.Counts.Passed != int64(n) {
		b, _ := json.MarshalIndent(m.Entries, "", " ")
		t.Fatalf("counts %+v\n%s", m.Counts, b)
	}
}

// BenchmarkFleet verifies and aggregates -fleet-receipts receipts of distinct hosts (written
// once, outside the timer) with GOMAXPROCS workers; it reports receipts/s and the peak Go heap
// seen by a sampler during the run (the command line's RSS is measured with /usr/bin/time, see
// above). The baseline is verifying the same receipts one by one with batch's per-receipt
// Verify: the ratio fleet/serial is the parallel speed-up the machine gives.
func BenchmarkFleet(b *testing.B) {
	root, policy, plan := benchFleet(b)
	evs, labels := fleetEvidenceOf(b, root)
	b.Run("fleet", func(b *testing.B) {
		for b.Loop() {
			stop, peak := heapSampler()
			rs, err := VerifyFleetReceipts(context.Background(), evs, labels, policy, 0)
			if err != nil {
				b.Fatal(err)
			}
			m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "bench")
			stop()
			if m.Counts.Passed != int64(len(evs)) {
				b.Fatalf("counts %+v", m.Counts)
			}
			b.ReportMetric(float64(*peak)/(1<<20), "peak-heap-MiB")
		}
		b.ReportMetric(float64(len(evs)*b.N)/b.Elapsed().Seconds(), "receipts/s")
	})
	b.Run("serial-baseline", func(b *testing.B) {
		for b.Loop() {
			for _, ev := range evs {
				if _, err := Verify(context.Background(), ev, policy, WithConcurrency(1)); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(evs)*b.N)/b.Elapsed().Seconds(), "receipts/s")
	})
}

// benchFleet writes the benchmark's fleet, or reuses the one TestWriteFleetEvidence wrote to
// -fleet-evidence (its plan.json and fleet.pub).
func benchFleet(b *testing.B) (string, Policy, *FleetPlan) {
	if dir := *fleetEvidence; dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "plan.json")); err == nil {
			pub, err := LoadPublicKey(filepath.Join(dir, "fleet.pub"))
			if err != nil {
				b.Fatal(err)
			}
			plan, err := LoadFleetPlan(filepath.Join(dir, "plan.json"))
			if err != nil {
				b.Fatal(err)
			}
			p := DefaultPolicy()
			p.Keys = []crypto.PublicKey{pub}
			return dir, p, plan
		}
	}
	root := b.TempDir()
	k := newTestKey(b)
	start := time.Now()
	plan := writeFleet(b, root, *fleetReceipts, k)
	b.Logf("wrote %d receipts in %v", *fleetReceipts, time.Since(start))
	return root, k.policy(), plan
}

// heapSampler samples the Go heap every 20 ms until stop is called; *peak is the largest
// HeapInuse seen.
func heapSampler() (stop func(), peak *uint64) {
	peak = new(uint64)
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			*peak = max(*peak, ms.HeapInuse)
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() { close(done); <-finished }, peak
}
