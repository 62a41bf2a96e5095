package qualrun

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/verify"
)

// signChecked signs a receipt qualrun run just wrote, once checkBeforeSign accepts it; a refused
// receipt is left unsigned (no envelope, bundle or link) and the error exits 3.
func signChecked(ctx context.Context, root, receiptRel, runDir string, passed bool, s attest.Signer, stderr io.Writer) (envelope, bundle, link string, err error) {
	if err := checkBeforeSign(ctx, root, receiptRel, runDir, passed, stderr); err != nil {
		return "", "", "", err
	}
	return signCampaign(ctx, root, receiptRel, s, stderr)
}

// checkBeforeSign verifies the receipt qualrun just wrote (receiptRel, below root) as qualverify
// would, before any key signs it: a receipt that says passed must verify, and any receipt's
// documents, digests and source must hold. A receipt its own contract rejects (a record or row that does
// not recompute, a schedule that cannot be replayed, a document that does not validate) is never
// signed. Only what a fresh run cannot have yet is relaxed: the attestation (it is what comes
// next), publication (the receipt states its own publishable flag and reasons) and fixture
// devices (--device-fixture, which the receipt marks). The error names the run directory, and
// wraps no exit-code sentinel: qualrun exits 3 (internal: a qualkit bug, nothing signed).
func checkBeforeSign(ctx context.Context, root, receiptRel, runDir string, passed bool, stderr io.Writer) error {
	refuse := func(why string) error {
		return fmt.Errorf("the receipt %s does not pass its own contract (%s); it was not signed (a qualkit bug: keep the evidence in %s and report it)", receiptRel, why, runDir)
	}
	path := receiptRel
	if !filepath.IsAbs(path) {
		path = filepath.Join(root, filepath.FromSlash(receiptRel))
	}
	ev, err := verify.LocateIn(root, path)
	if err != nil {
		return refuse(err.Error())
	}
	res, err := verify.Verify(ctx, ev, verify.Policy{},
		verify.AllowUnsignedUnsafe(), verify.AllowUnpublishedUnsafe(), verify.WithRelaxations(verify.RelaxFixtureDevices))
	if err != nil {
		return refuse(err.Error())
	}
	findings := res.Findings
	if !passed {
		// A failed or interrupted receipt is rejected for its verdict by design (cleanup,
		// tolerances, a partial row): only its documents, digests and source must hold.
		findings = slices.DeleteFunc(slices.Clone(findings), func(f verify.Finding) bool {
			return f.Check != verify.CheckSchemas && f.Check != verify.CheckHashes && f.Check != verify.CheckSource
		})
	}
	if len(findings) > 0 {
		for i, f := range findings {
			if i == 8 {
				cliapp.Fprintf(stderr, "qualrun: ... and %d more findings\n", len(findings)-i)
				break
			}
			cliapp.Fprintf(stderr, "qualrun: %s: %s%s: %v\n", f.Check, f.File, f.Pointer, f.Err)
		}
		return refuse(fmt.Sprintf("%d findings, the first of %s", len(findings), findings[0].Check))
	}
	return nil
}
