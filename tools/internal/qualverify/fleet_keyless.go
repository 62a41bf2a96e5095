package qualverify

import (
	"context"
	"crypto"
	"fmt"
	"os"
	"strings"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/signflags"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

// fleetSignFlags choose how fleet signs the manifest it writes: with --sign-key, or keylessly
// as qualrun signs a receipt (signflags, docs/signing.md).
func fleetSignFlags() []cli.Flag { return signflags.Flags("key (with --sign-key, the default)") }

// fleetSigner signs a manifest with a key or keylessly (exactly one is set).
type fleetSigner struct {
	key     attest.Signer
	keyless *keyless.Options
}

// loadFleetSigner reads --sign and its flags; --trusted-root, when given, also checks a new
// keyless bundle offline before anything is written.
func loadFleetSigner(c *cli.Context) (fleetSigner, error) {
	o, err := signflags.Keyless(c, []string{"identity-token", "tsa-url"}, []string{"sign-key", "password-file"})
	if err != nil || o != nil {
		return fleetSigner{keyless: o}, err
	}
	s, err := attest.LoadSigner(c.String("sign-key"), attest.PasswordFromEnv(c.String("password-file")))
	if err != nil {
		return fleetSigner{}, fmt.Errorf("%w: --sign-key: %v", exitcode.ErrUsage, err)
	}
	return fleetSigner{key: s}, nil
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

// manifestCheck chooses how the manifest at path is checked: a manifest signed keylessly has its
// bundle beside it and is checked under the identity policy kl, unless keyed (--manifest-key) asks
// for a key's signature; any other against keys.
func manifestCheck(path string, keys []crypto.PublicKey, kl verify.KeylessVerifier, keyed bool) (manifestSignature, error) {
	if _, err := os.Lstat(fleetBundlePath(path)); err != nil || keyed {
		return byKeys(path, keys), nil
	}
	if kl == nil {
		return nil, fmt.Errorf("%w: %s is signed keylessly (%s): give --trusted-root and the identity policy (--certificate-identity[-regexp], --certificate-oidc-issuer[-regexp]), or --manifest-key for a manifest signed with a key", exitcode.ErrUsage, path, fleetBundlePath(path))
	}
	return byBundle(path, kl), nil
}

// byBundle checks a manifest's Sigstore bundle offline under the trusted root and identity policy
// the receipts are verified with.
func byBundle(path string, kl verify.KeylessVerifier) manifestSignature {
	return func(raw []byte, name string, recomputed *contract.FleetManifestDoc) (string, []error, error) {
		bundle, err := readBeside(fleetBundlePath(path), verify.MaxAttestationBytes)
		if err != nil {
			return "", nil, fmt.Errorf("the manifest's bundle: %v", err)
		}
		id, problems, err := verify.CheckFleetManifestKeyless(raw, bundle, name, kl, recomputed)
		if id == nil {
			return "", problems, err
		}
		return id.String(), problems, err
	}
}

// readBeside reads the envelope or the bundle beside a manifest: a regular file within limit,
// never through a symbolic link (a link could name any file of the checker's).
func readBeside(path string, limit int64) ([]byte, error) {
	if st, err := os.Lstat(path); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("%s is a symbolic link: the envelope and bundle beside a manifest are read as regular files only", path)
	}
	return evidence.ReadFileLimited(path, limit)
}
