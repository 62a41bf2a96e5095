package verify

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/verify/internal/fleet"
	"github.com/qualkit/qualkit/verify/internal/limits"
)

// MaxFleetReceipts bounds the receipts one fleet manifest is built from (twice the plan's row
// bound: every row and as many strays).
const MaxFleetReceipts = fleet.MaxFleetReceipts

// MaxFleetPlanBytes bounds a fleet plan file (10,000 rows of a few hundred bytes).
const MaxFleetPlanBytes = fleet.MaxFleetPlanBytes

// FleetPlan is a fleet plan read for checking receipts against it.
type FleetPlan = fleet.FleetPlan

// LoadFleetPlan reads a fleet plan (a regular file, bounded) and checks it fully (schema and
// rules).
func LoadFleetPlan(path string) (*FleetPlan, error) { return fleet.LoadFleetPlan(path) }

// FleetReceipt is one receipt's verification reduced to what a fleet manifest needs, so that
// verifying thousands keeps only this much of each.
type FleetReceipt = fleet.FleetReceipt

// FleetReceiptDoc is what binding and statistics read of a receipt.
type FleetReceiptDoc = fleet.FleetReceiptDoc

// FleetValue is one result metric of a receipt: RESULT-ID/rREPETITION/NAME.
type FleetValue = fleet.FleetValue

// BuildFleetManifest binds receipts to the rows of plan and computes the cross-host statistics
// of the passed rows; created and version fill created_at and qualverify. The result depends on
// the receipts, not on their order: a row claimed by several receipts gets the best one
// (verified and passed, then verified, then by digest) and the others are not_belonging; strays
// are sorted by digest, then path.
func BuildFleetManifest(plan *FleetPlan, receipts []FleetReceipt, k float64, created string, version string) *contract.FleetManifestDoc {
	return fleet.BuildFleetManifest(plan, receipts, k, created, version)
}

// FleetPredicateType is the in-toto predicate type of a fleet manifest's statement: its one
// subject is the manifest file by digest, its predicate the plan digest and commit.
const FleetPredicateType = fleet.FleetPredicateType

// MaxFleetManifestBytes bounds a fleet manifest file (20,000 entries and 10,000 metrics).
const MaxFleetManifestBytes = fleet.MaxFleetManifestBytes

// ErrFleetSignature: the manifest's envelope is malformed, signed by no pinned key, or signs
// other bytes or another predicate.
var ErrFleetSignature = fleet.ErrFleetSignature

// ErrFleetBinding: a member of the manifest differs from what the plan and the receipts give.
var ErrFleetBinding = fleet.ErrFleetBinding

// FleetStatement is the in-toto Statement v1 that signs a fleet manifest: subject name (the
// manifest's file name) with the digest of manifest, predicate {plan_digest, commit}.
func FleetStatement(name string, manifest []byte, m *contract.FleetManifestDoc) ([]byte, error) {
	return fleet.FleetStatement(name, manifest, m)
}

// CheckFleetManifestKeyless is CheckFleetManifest for a manifest signed keylessly: bundle is its
// Sigstore bundle (MANIFEST.sigstore.json), verified offline by kl (the trusted root and identity
// policy of Policy.Keyless, as a receipt's keyless bundle is); its verified payload must be the
// statement FleetStatement gives for exactly these bytes. It returns the verified signer's
// identity and every problem (a refusal wraps ErrFleetSignature and the keyless reason, e.g.
// ErrCertificateIdentity); err means the manifest could not be read as one.
func CheckFleetManifestKeyless(raw, bundle []byte, name string, kl KeylessVerifier, recomputed *contract.FleetManifestDoc) (*SignerIdentity, []error, error) {
	return fleet.CheckFleetManifestKeyless(raw, bundle, name, kl, recomputed)
}

// CheckFleetManifest checks a signed fleet manifest offline: raw is the manifest file named name,
// envelope its DSSE envelope; the envelope must carry a signature by one of keys over the
// statement FleetStatement gives for exactly these bytes, and the manifest (strictly decoded and
// schema-checked) must equal recomputed, a manifest built anew from the plan and the receipts
// (BuildFleetManifest), in every member but created_at, qualverify and the receipts' paths. It
// returns the fingerprint of the key that signed and every problem found (wrapping
// ErrFleetSignature or ErrFleetBinding); err means the manifest could not be read as one.
func CheckFleetManifest(raw []byte, envelope []byte, name string, keys []crypto.PublicKey, recomputed *contract.FleetManifestDoc) (signer string, problems []error, err error) {
	return fleet.CheckFleetManifest(raw, envelope, name, keys, recomputed)
}

// VerifyFleetReceipts verifies every receipt as Verify does, workers at a time (each
// verification single-threaded), and keeps only a FleetReceipt of each: memory grows with the
// number of receipts by that summary, not by their evidence. labels name the receipts (len(evs)).
func VerifyFleetReceipts(ctx context.Context, evs []Evidence, labels []string, policy Policy, workers int, opts ...Option) ([]FleetReceipt, error) {
	if len(labels) != len(evs) {
		return nil, fmt.Errorf("%d labels for %d receipts", len(labels), len(evs))
	}
	if len(evs) > MaxFleetReceipts {
		return nil, fmt.Errorf("%d receipts: a fleet manifest binds at most %d", len(evs), MaxFleetReceipts)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	opts = append(slices.Clone(opts), WithConcurrency(1))
	out := make([]FleetReceipt, len(evs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(evs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i] = verifyFleetReceipt(ctx, evs[i], labels[i], policy, opts)
			}
		}()
	}
	for i := range evs {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func verifyFleetReceipt(ctx context.Context, ev Evidence, label string, policy Policy, opts []Option) FleetReceipt {
	fr := FleetReceipt{Path: label}
	res, err := Verify(ctx, ev, policy, opts...)
	if err != nil {
		fr.Err = err
		return fr
	}
	fr.Verified = res.Verdict == Verified
	fr.Findings = len(res.Findings)
	if len(res.Findings) > 0 {
		fr.First = res.Findings[0].Error()
	}
	if len(res.Subjects) > 0 {
		fr.Digest = res.Subjects[0].Digest
	}
	// The members the binding reads, from the same bytes the verification hashed.
	dir, err := os.Open(ev.Root)
	if err != nil {
		fr.Err = err
		return fr
	}
	defer dir.Close()
	raw, err := evidence.ReadBeneath(dir, ev.Receipt, limits.MaxDocumentBytes)
	if err != nil || evidence.DigestOf(raw) != fr.Digest {
		if fr.Digest != "" {
			fr.Verified = false
			fr.First = "the receipt changed while it was verified"
			fr.Findings++
		}
		return fr
	}
	var rc contract.ReceiptDoc
	if json.Unmarshal(raw, &rc) != nil {
		return fr
	}
	doc := &FleetReceiptDoc{
		ReceiptID: rc.ReceiptID, Host: rc.Environment.HostID, Commit: rc.Source.Commit,
		WorkloadPath: rc.Workload.Path, WorkloadDigest: rc.Workload.Digest, Variant: rc.Workload.Variant,
		Variables: rc.Workload.Variables, Command: rc.Qualification.Command, Qualification: rc.Qualification.Verdict,
	}
	for _, r := range rc.Results {
		for _, m := range r.Metrics {
			if m.Direction == contract.DirectionNone || m.Diagnostic || math.IsNaN(m.Value) || math.IsInf(m.Value, 0) {
				continue
			}
			doc.Metrics = append(doc.Metrics, FleetValue{Name: r.ID + "/r" + strconv.FormatInt(r.Repetition, 10) + "/" + m.Name, Unit: m.Unit, Direction: m.Direction, Value: m.Value})
		}
	}
	fr.Doc = doc
	return fr
}
