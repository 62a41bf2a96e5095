package qualverify

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

// fleetSignFlags choose how fleet signs the manifest it writes: with --sign-key, or keylessly
// (Sigstore: an OIDC identity token, a Fulcio certificate, a Rekor entry, an optional RFC 3161
// timestamp), as qualrun signs a receipt (docs/signing.md).
func fleetSignFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "sign", Usage: "`MODE`: key (with --sign-key, the default) or keyless (Sigstore: OIDC token, Fulcio certificate, Rekor entry; docs/signing.md)"},
		&cli.StringFlag{Name: "identity-token", Usage: "keyless: read the OIDC identity token from `FILE` (default: $SIGSTORE_ID_TOKEN, then GitHub Actions' ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN)"},
		&cli.StringFlag{Name: "fulcio-url", Value: keyless.PublicFulcioURL, Usage: "keyless: the Fulcio certificate authority `URL`"},
		&cli.StringFlag{Name: "rekor-url", Value: keyless.PublicRekorURL, Usage: "keyless: the Rekor transparency log `URL`"},
		&cli.StringFlag{Name: "tsa-url", Usage: "keyless: also get an RFC 3161 timestamp from this `URL` (e.g. " + keyless.PublicTSAURL + ")"},
	}
}

// fleetSigner signs a manifest with a key or keylessly (exactly one is set).
type fleetSigner struct {
	key     attest.Signer
	keyless *keyless.Options
}

// loadFleetSigner reads --sign and its flags; --trusted-root, when given, also checks a new
// keyless bundle offline before anything is written.
func loadFleetSigner(c *cli.Context) (fleetSigner, error) {
	switch c.String("sign") {
	case "", "key":
		for _, f := range []string{"identity-token", "tsa-url"} {
			if c.IsSet(f) {
				return fleetSigner{}, fmt.Errorf("%w: --%s needs --sign keyless", exitcode.ErrUsage, f)
			}
		}
		s, err := attest.LoadSigner(c.String("sign-key"), attest.PasswordFromEnv(c.String("password-file")))
		if err != nil {
			return fleetSigner{}, fmt.Errorf("%w: --sign-key: %v", exitcode.ErrUsage, err)
		}
		return fleetSigner{key: s}, nil
	case "keyless":
	default:
		return fleetSigner{}, fmt.Errorf("%w: --sign %q: key or keyless", exitcode.ErrUsage, c.String("sign"))
	}
	if c.String("sign-key") != "" || c.IsSet("password-file") {
		return fleetSigner{}, fmt.Errorf("%w: --sign keyless signs without --sign-key", exitcode.ErrUsage)
	}
	tok, err := keyless.Token(c.Context, c.String("identity-token"), os.Getenv)
	if err != nil {
		return fleetSigner{}, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	o := &keyless.Options{IDToken: tok, FulcioURL: c.String("fulcio-url"), RekorURL: c.String("rekor-url"), TSAURL: c.String("tsa-url"), Timeout: 30 * time.Second}
	if p := c.String("trusted-root"); p != "" {
		if o.Verify.TrustedRoot, err = keyless.LoadTrustedRoot(p); err != nil {
			return fleetSigner{}, fmt.Errorf("%w: --trusted-root: %v", exitcode.ErrUsage, err)
		}
	}
	return fleetSigner{keyless: o}, nil
}

// sign signs the manifest's statement: the DSSE envelope, the Sigstore bundle (keyless only,
// else nil) and the signer as the fleet page names it (a key's fingerprint or an identity).
func (s fleetSigner) sign(ctx context.Context, statement []byte) (envelope, bundle []byte, signer string, err error) {
	if s.keyless == nil {
		env, err := attest.SignEnvelope(ctx, statement, s.key)
		return env, nil, verify.KeyFingerprint(s.key.PublicKey()), err
	}
	signed, err := keyless.SignStatement(context.WithoutCancel(ctx), statement, *s.keyless)
	if err != nil {
		return nil, nil, "", err // exit 3: the services or the new bundle's check failed
	}
	return signed.Envelope, signed.Bundle, signed.Identity.String(), nil
}

// fleetBundlePath is the keyless bundle of a manifest: MANIFEST.sigstore.json.
func fleetBundlePath(manifest string) string {
	return strings.TrimSuffix(manifest, ".json") + attestfmt.BundleSuffix
}

// checkFleetKeyless is checkFleet for a manifest signed keylessly: its bundle must verify
// offline under the trusted root and identity policy the receipts are verified with.
func checkFleetKeyless(path string, k float64, kl verify.KeylessVerifier, plan *verify.FleetPlan, rs []verify.FleetReceipt, w, ew io.Writer) (*contract.FleetManifestDoc, string, error) {
	if kl == nil {
		return nil, "", fmt.Errorf("%w: %s is signed keylessly (%s): give --trusted-root and the identity policy (--certificate-identity[-regexp], --certificate-oidc-issuer[-regexp]), or --manifest-key for a manifest signed with a key", exitcode.ErrUsage, path, fleetBundlePath(path))
	}
	raw, err := evidence.ReadFileLimited(path, verify.MaxFleetManifestBytes)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	bundle, err := evidence.ReadFileLimited(fleetBundlePath(path), verify.MaxAttestationBytes)
	if err != nil {
		return nil, "", fmt.Errorf("%w: the manifest's bundle: %v", exitcode.ErrRejected, err)
	}
	recomputed := verify.BuildFleetManifest(plan, rs, k, "", "")
	id, problems, err := verify.CheckFleetManifestKeyless(raw, bundle, filepath.Base(path), kl, recomputed)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", exitcode.ErrRejected, err)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			cliapp.Fprintf(ew, "qualverify: %s: %v\n", path, p)
		}
		return nil, "", fmt.Errorf("%w: fleet manifest %s does not hold (%d problems)", exitcode.ErrRejected, path, len(problems))
	}
	cliapp.Fprintf(w, "fleet manifest %s holds: signed by %s; %d rows, %d passed, %d failed, %d missing, %d receipts not belonging, recomputed from the plan and %d receipts\n",
		path, id, recomputed.Plan.Rows, recomputed.Counts.Passed, recomputed.Counts.Failed, recomputed.Counts.Missing, recomputed.Counts.NotBelonging, len(rs))
	return recomputed, id.String(), nil
}
