package qualverify

import (
	"context"
	"crypto"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/verify"
)

// frozen is the frozen evidence of the verify module (three receipts of a real campaign).
const frozen = "../../../verify/testdata/frozen/v1"

func TestFindReceipts(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{
		"qualification/receipts/cpu/h/a.json",
		"qualification/receipts/cpu/h/a.intoto.dsse.json",
		"qualification/receipts/cpu/h/a.sigstore.json",
		".qualification/receipts/b.json",
		".qualification/runs/b/cases/000-x-r000/case-result.json",
		"workloads/w.json",
	} {
		os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755)
		os.WriteFile(filepath.Join(dir, p), []byte("{}"), 0o644)
	}
	got, err := findReceipts(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, ".qualification/receipts/b.json"), filepath.Join(dir, "qualification/receipts/cpu/h/a.json")}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("found %v, want %v", got, want)
	}
	if _, err := findReceipts(filepath.Join(dir, "workloads")); err == nil {
		t.Fatal("no receipt, no error")
	}
}

// linkTrees makes n evidence roots under dir, each the frozen a-1 evidence as hard links (no
// copy): n receipts that each verify with the frozen key.
func linkTrees(tb testing.TB, dir string, n int) {
	tb.Helper()
	src, err := filepath.Abs(frozen)
	if err != nil {
		tb.Fatal(err)
	}
	var files []string
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if strings.HasPrefix(rel, ".qualification/receipts/") && !strings.HasPrefix(filepath.Base(rel), "a-1.") {
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		root := filepath.Join(dir, fmt.Sprintf("host-%04d", i))
		for _, rel := range files {
			dst := filepath.Join(root, rel)
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				tb.Fatal(err)
			}
			if err := os.Link(filepath.Join(src, rel), dst); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

func frozenKeyPolicy(tb testing.TB) verify.Policy {
	pub, err := verify.LoadPublicKey(filepath.Join(frozen, "frozen.pub"))
	if err != nil {
		tb.Fatal(err)
	}
	p := verify.DefaultPolicy()
	p.Keys = []crypto.PublicKey{pub}
	return p
}

func TestVerifyMany(t *testing.T) {
	dir := t.TempDir()
	linkTrees(t, dir, 8)
	receipts, err := findReceipts(dir)
	if err != nil || len(receipts) != 8 {
		t.Fatalf("%d receipts, %v", len(receipts), err)
	}
	receipts = append(receipts, filepath.Join(dir, "missing/qualification/receipts/x.json"))
	out := verifyMany(context.Background(), receipts, frozenKeyPolicy(t), nil, 3)
	for i, o := range out[:8] {
		if o.err != nil || o.res.Verdict != verify.Verified {
			t.Fatalf("receipt %d: %v %v", i, o.err, o.res)
		}
	}
	if out[8].err == nil {
		t.Fatal("a missing receipt verified")
	}
}

// BenchmarkBatch1000 verifies 1,000 receipts (each the frozen a-1 campaign: 2 rows, a command
// case, lifecycle, envelope and bundle) with GOMAXPROCS workers, as `qualverify batch` does. Each
// iteration first times the baseline, 20 of the receipts verified one after the other, and
// reports x_sequential: the batch's time over 1,000 x that per-receipt time (below 1 is the gain
// of verifying receipts in parallel).
func BenchmarkBatch1000(b *testing.B) {
	dir := b.TempDir()
	linkTrees(b, dir, 1000)
	receipts, err := findReceipts(dir)
	if err != nil || len(receipts) != 1000 {
		b.Fatalf("%d receipts, %v", len(receipts), err)
	}
	p := frozenKeyPolicy(b)
	var ratios []float64
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		t0 := time.Now()
		for _, r := range receipts[:20] {
			ev, err := verify.Locate(r)
			if err != nil {
				b.Fatal(err)
			}
			if res, err := verify.Verify(context.Background(), ev, p); err != nil || res.Verdict != verify.Verified {
				b.Fatal(err)
			}
		}
		one := time.Since(t0).Seconds() / 20
		b.StartTimer()
		t1 := time.Now()
		for _, o := range verifyMany(context.Background(), receipts, p, nil, 0) {
			if o.err != nil || o.res.Verdict != verify.Verified {
				b.Fatalf("%s: %v", o.path, o.err)
			}
		}
		ratios = append(ratios, time.Since(t1).Seconds()/(1000*one))
	}
	sort.Float64s(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "x_sequential")
	b.ReportMetric(1000*float64(b.N)/b.Elapsed().Seconds(), "receipts/s")
}
