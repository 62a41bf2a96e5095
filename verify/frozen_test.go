package verify

import (
	"context"
	"crypto"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestFrozenEvidenceVerifies: evidence frozen from a real campaign (qualrun run --key, see
// testdata/frozen/README.md) keeps verifying, with every check passing, on every run. A change
// of the verifier that breaks old evidence fails here. a-2's closed-loop row c2-r0 is degraded
// (its client's own lag): diagnostic for publication, so a-2 verifies like the others.
func TestFrozenEvidenceVerifies(t *testing.T) {
	pub, err := LoadPublicKey(filepath.Join(frozenRoot, "frozen.pub"))
	if err != nil {
		t.Fatal(err)
	}
	p := DefaultPolicy()
	p.Keys = []crypto.PublicKey{pub}
	for _, r := range frozenReceipts {
		t.Run(filepath.Base(r), func(t *testing.T) {
			res := verifyAt(t, frozenRoot, r, p)
			if res.Verdict != Verified {
				t.Fatalf("frozen evidence rejected:%s", findingsOf(res))
			}
			for _, c := range res.Checks {
				if c.Status != StatusPassed {
					t.Errorf("check %s: %s (%s), want passed", c.Check, c.Status, c.Note)
				}
			}
			if len(res.Checks) != len(CheckOrder) {
				t.Fatalf("%d checks, want %d", len(res.Checks), len(CheckOrder))
			}
			for i, c := range res.Checks {
				if c.Check != CheckOrder[i] || string(c.Check) != rules.CheckOrder[i] {
					t.Errorf("check %d is %s, want %s", i, c.Check, CheckOrder[i])
				}
			}
			if res.Signer != KeyFingerprint(pub) {
				t.Errorf("signer %s, want %s", res.Signer, KeyFingerprint(pub))
			}
			want := "host frozen-host, backend cpu, device AMD EPYC (amd64, driver none): the result describes this host, backend and device only"
			if res.Scope != want {
				t.Errorf("scope %q, want %q", res.Scope, want)
			}
			// The server binary is not part of the frozen evidence: it is bound, not present.
			// Nor is a git checkout: the tree hash is not recomputed, and a warning says so.
			if len(res.Warnings) != 2 || !strings.Contains(res.Warnings[0], "bin/qualsim is not present locally") ||
				res.Warnings[1] != "source tree hash not recomputed: the evidence root is not a git checkout" {
				t.Errorf("warnings %q", res.Warnings)
			}
			// The report fills the contract.
			b, err := json.Marshal(res.Report("test", time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			out, err := schemas.CheckDocument(b)
			if err != nil || !out.Valid() || out.Contract.Name != contract.VerificationReport {
				t.Fatalf("report does not validate: %v %v", err, out.Violations)
			}
		})
	}
}

// TestRecomputeMatchesFrozenCampaign: verify's recomputation (the catalogue of schemas/metric
// over verify's own reading of the records) reproduces every row and case number a real campaign
// wrote when the evidence was frozen (within 1e-9), and defines exactly the metrics it emitted.
// The runner and verify share one implementation now, so this is a regression test against
// frozen outputs, not a cross-check of two copies; the catalogue's independent check is
// schemas/metric's TestGolden (Python's statistics) and TestDocsExample (docs/metrics.md).
func TestRecomputeMatchesFrozenCampaign(t *testing.T) {
	ev, err := LocateIn(frozenRoot, filepath.Join(frozenRoot, frozenReceipts[0]))
	if err != nil {
		t.Fatal(err)
	}
	cfg := newConfig([]Option{AllowUnsignedUnsafe()})
	s, err := load.Load(context.Background(), ev, DefaultPolicy(), cfg.loadOptions())
	if err != nil {
		t.Fatal(err)
	}
	compared := 0
	formulas := map[string]bool{}
	for _, p := range check.SortedCaseResults(s) {
		cr := s.CaseResults[p]
		wc := s.Case(cr.CaseID)
		for j, row := range cr.Rows {
			recs := check.RowRecords(nil, cr, row, s.Files[row.Records.Path].Records)
			rf := record.RecomputeRow(check.RowSpecOf(row, wc), recs)
			if len(rf.Metrics) != len(row.Metrics) {
				t.Errorf("row %d: recomputed %d metrics, the runner wrote %d", j, len(rf.Metrics), len(row.Metrics))
			}
			for k, m := range row.Metrics {
				got := rf.Metrics[k]
				if got.Name != m.Name || rowcheck.IdentityOf(got) != rowcheck.IdentityOf(m) || !rowcheck.EqualSamples(got.Samples, m.Samples) {
					t.Errorf("row %d metric %d: recomputed %+v, runner %+v", j, k, got, m)
					continue
				}
				if !record.Within(m.Value, got.Value, Tolerance{Absolute: 1e-9, Relative: 1e-9}) {
					t.Errorf("row %d %s: recomputed %v, runner %v", j, m.Name, got.Value, m.Value)
				}
				formulas[m.Formula] = true
				compared++
			}
			if rf.WindowSeconds != row.WindowSeconds || !check.EqualPtr(rf.OutputSet, row.OutputSetSHA256) {
				t.Errorf("row %d: window %v / %v, output set %v / %v", j, rf.WindowSeconds, row.WindowSeconds, rowcheck.Deref(rf.OutputSet), rowcheck.Deref(row.OutputSetSHA256))
			}
		}
		if len(cr.Rows) > 0 {
			want := record.RecomputeCase(cr.Rows)
			if !finding.CanonicalEqual(want, cr.Metrics) {
				t.Errorf("%s: case metrics differ from their recomputation", p)
			}
			compared += len(want)
		}
	}
	if compared < 150 || len(formulas) < 15 {
		t.Fatalf("compared only %d numbers over %d formulas", compared, len(formulas))
	}
	t.Logf("%d numbers over %d formula ids recomputed exactly", compared, len(formulas))
}
