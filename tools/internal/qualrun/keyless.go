package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/signflags"
	"github.com/urfave/cli/v2"
)

// keylessFlags choose how a receipt is signed: with --key, or keylessly (Sigstore: an OIDC
// identity token, a Fulcio certificate, a Rekor entry, an optional RFC 3161 timestamp).
func keylessFlags() []cli.Flag {
	return append(signflags.Flags("key (with --key)"),
		&cli.StringFlag{Name: "trusted-root", Usage: "keyless: check the new bundle offline against this trusted_root.json `FILE` before writing it"})
}

// keylessOptions returns the keyless options when --sign keyless, nil otherwise.
func keylessOptions(c *cli.Context) (*keyless.Options, error) {
	return signflags.Keyless(c, []string{"identity-token", "tsa-url", "trusted-root"}, []string{"key"})
}

type keylessSummary struct {
	Receipt     string           `json:"receipt"`
	Attestation string           `json:"attestation"`
	Bundle      string           `json:"bundle"`
	Identity    keyless.Identity `json:"identity"`
}

func attestKeyless(ctx context.Context, receipt, root string, o *keyless.Options, asJSON bool, stdout, stderr io.Writer) error {
	root, rel, err := receiptIn(receipt, root)
	if err != nil {
		return err
	}
	envelope, bundle, id, err := keyless.AttestReceipt(ctx, root, rel, *o)
	if err != nil {
		if errors.Is(err, keyless.ErrSign) {
			return fmt.Errorf("%w: nothing was written", err)
		}
		return attestError(err, stderr)
	}
	if asJSON {
		b, _ := json.MarshalIndent(keylessSummary{Receipt: rel, Attestation: envelope, Bundle: bundle, Identity: id}, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	cliapp.Fprintf(stdout, "attestation %s\nbundle %s\nidentity %s\n", envelope, bundle, id)
	return nil
}

// receiptSigner is how run signs the receipt it writes: with a key, keylessly, or not at all.
type receiptSigner struct {
	key     attest.Signer
	keyless *keyless.Options
}

// signKeylessChecked is signChecked for --sign keyless: the receipt is checked against its own
// contract first, then signed keylessly (no in-toto link: in-toto-golang checks a certificate functionary at verification time and for server authentication, so a Fulcio certificate never verifies there; docs/signing.md).
func signKeylessChecked(ctx context.Context, root, receiptRel, runDir string, passed bool, o *keyless.Options, stderr io.Writer) (envelope, bundle string, id *keyless.Identity, err error) {
	if err := checkBeforeSign(ctx, root, receiptRel, runDir, passed, stderr); err != nil {
		return "", "", nil, err
	}
	rel := receiptRel
	if filepath.IsAbs(rel) {
		if rel, err = filepath.Rel(root, rel); err != nil {
			return "", "", nil, err
		}
	}
	envelope, bundle, ident, err := keyless.AttestReceipt(context.WithoutCancel(ctx), root, filepath.ToSlash(rel), *o)
	if err != nil {
		hint := fmt.Sprintf("the receipt %s was written but not signed (sign it later with: qualrun attest %s --sign keyless)", receiptRel, receiptRel)
		if errors.Is(err, keyless.ErrSign) {
			return "", "", nil, fmt.Errorf("%s: %w", hint, err)
		}
		mapped := attestError(err, stderr)
		if errors.Is(mapped, exitcode.ErrRejected) {
			cliapp.Fprintln(stderr, "qualrun:", hint)
			return "", "", nil, mapped
		}
		return "", "", nil, fmt.Errorf("%s: %w", hint, mapped)
	}
	return envelope, bundle, &ident, nil
}
