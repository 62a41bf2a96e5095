package verify

import (
	"bytes"
	"crypto"
	"encoding/json"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/fleet"
)

// FuzzFleetClaim: the row a receipt's qualrun command claims is parsed without panicking, and a
// claim is only ever a plan id, a row within the plan bound and a host id of their forms.
func FuzzFleetClaim(f *testing.F) {
	f.Add("qualrun\x00run\x00--output\x00qualification/receipts/fleet/demo-plan/row-3/node-a.json")
	f.Add("--output=qualification/receipts/fleet/abc/row-9999/h1.json")
	f.Add("--output\x00qualification/receipts/fleet/abc/row-1/../h1.json")
	f.Fuzz(func(t *testing.T, joined string) {
		plan, row, host, ok := fleet.Claim(strings.Split(joined, "\x00"))
		if !ok {
			return
		}
		if row < 0 || row > 9999 || !fleet.HostIDPattern.MatchString(host) || len(plan) < 3 || strings.Contains(plan, "/") {
			t.Fatalf("claim %q row %d host %q from %q", plan, row, host, joined)
		}
	})
}

// FuzzCheckFleetManifest: whatever bytes are given as a manifest and its envelope, the check does
// not panic, and nothing but the exact signed bytes holds.
func FuzzCheckFleetManifest(f *testing.F) {
	k := newTestKey(f)
	one := int64(0)
	m := &contract.FleetManifestDoc{
		Schema: contract.FleetManifestSchema, CreatedAt: "2026-12-02T01:00:00Z", Qualverify: "fuzz",
		Plan:        contract.FleetManifestPlan{ID: "fuzz", Digest: "sha256:" + strings.Repeat("1", 64), Commit: frozenCommit, Rows: 1},
		Counts:      contract.FleetManifestCounts{Missing: 1},
		Entries:     []contract.FleetManifestEntry{{Row: &one, Status: contract.FleetManifestStatusMissing, Why: "no receipt ran row 0"}},
		OutlierRule: contract.FleetManifestOutlierRule{Rule: contract.OutlierRuleRule, K: 3.5, Scale: 1.4826},
		Metrics:     []contract.FleetManifestMetricStats{}, OutlierHosts: []contract.FleetManifestOutlierHost{},
	}
	raw, _ := json.MarshalIndent(m, "", "  ")
	st, err := FleetStatement("fleet.json", raw, m)
	if err != nil {
		f.Fatal(err)
	}
	env, _ := sealPayload(f, st, k)
	keys := []crypto.PublicKey{k.pub}
	if _, problems, err := CheckFleetManifest(raw, env, "fleet.json", keys, m); err != nil || len(problems) != 0 {
		f.Fatalf("the seed does not hold: %v %v", err, problems)
	}
	f.Add(raw, env)
	f.Add(bytes.Replace(raw, []byte(`"missing": 1`), []byte(`"missing": 2`), 1), env)
	f.Add([]byte(`{}`), []byte(`{}`))
	f.Fuzz(func(t *testing.T, r, e []byte) {
		_, problems, err := CheckFleetManifest(r, e, "fleet.json", keys, m)
		if err == nil && len(problems) == 0 && !bytes.Equal(r, raw) {
			t.Fatalf("other bytes hold:\n%s", r)
		}
	})
}
