package qualverify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

// keylessFlags choose the trusted root and the identity a keyless (certificate) bundle must carry.
func keylessFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "trusted-root", Usage: "verify keyless Sigstore bundles offline against this trusted_root.json `FILE` (certificate authorities, transparency logs, timestamp authorities)"},
		&cli.StringFlag{Name: "certificate-identity", Usage: "the signing certificate's subject must be exactly `ID` (an email, or a CI workflow URI such as https://github.com/ORG/REPO/.github/workflows/release.yml@refs/heads/main)"},
		&cli.StringFlag{Name: "certificate-identity-regexp", Usage: "the signing certificate's subject must match `RE` (Go syntax, unanchored: write ^...$)"},
		&cli.StringFlag{Name: "certificate-oidc-issuer", Usage: "the signing certificate's OIDC issuer must be exactly `URL` (GitHub Actions: https://token.actions.githubusercontent.com)"},
		&cli.StringFlag{Name: "certificate-oidc-issuer-regexp", Usage: "the signing certificate's OIDC issuer must match `RE`"},
	}
}

// keylessFromFlags sets policy.Keyless from the policy file's keyless member and the flags (which
// override it member by member). Without a trusted root nothing changes.
func keylessFromFlags(c *cli.Context, policy *verify.Policy) error {
	kp := verify.KeylessPolicy{}
	if policy.KeylessIdentity != nil {
		kp = *policy.KeylessIdentity
	}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"trusted-root", &kp.TrustedRoot}, {"certificate-identity", &kp.Identity}, {"certificate-identity-regexp", &kp.IdentityRegexp},
		{"certificate-oidc-issuer", &kp.Issuer}, {"certificate-oidc-issuer-regexp", &kp.IssuerRegexp}} {
		if c.IsSet(f.name) {
			*f.dst = c.String(f.name)
		}
	}
	if kp.TrustedRoot == "" {
		if kp != (verify.KeylessPolicy{}) {
			return fmt.Errorf("%w: --certificate-identity and --certificate-oidc-issuer need --trusted-root", exitcode.ErrUsage)
		}
		return nil
	}
	tr, err := keyless.LoadTrustedRoot(kp.TrustedRoot)
	if err != nil {
		return fmt.Errorf("%w: --trusted-root: %v", exitcode.ErrUsage, err)
	}
	p := keyless.Policy{TrustedRoot: tr, Identity: kp.Identity, IdentityRegexp: kp.IdentityRegexp, Issuer: kp.Issuer, IssuerRegexp: kp.IssuerRegexp}
	if err := p.Check(); err != nil {
		return fmt.Errorf("%w: %v (keyless verification needs --certificate-identity[-regexp] and --certificate-oidc-issuer[-regexp])", exitcode.ErrUsage, err)
	}
	policy.Keyless = keylessVerifier(p)
	return nil
}

// reasonOf maps attest/keyless's refusals to verify's finding codes.
var reasonOf = []struct {
	err    error
	reason *verify.Reason
}{
	{keyless.ErrUntrustedRoot, verify.ErrUntrustedRoot},
	{keyless.ErrInclusionProof, verify.ErrInclusionProof},
	{keyless.ErrTimestamp, verify.ErrSignedTimestamp},
	{keyless.ErrCertificateValidity, verify.ErrCertificateValidity},
	{keyless.ErrSCT, verify.ErrCertificateSCT},
	{keyless.ErrIssuer, verify.ErrCertificateIssuer},
	{keyless.ErrIdentity, verify.ErrCertificateIdentity},
}

// keylessRefusal is a keyless refusal that is (errors.Is) both verify's Reason and attest/keyless's
// sentinel, and reads as the Reason's text and the detail (once, not both sentinels' texts).
type keylessRefusal struct {
	reason *verify.Reason
	err    error
	detail string
}

func (r keylessRefusal) Error() string   { return r.reason.Error() + ": " + r.detail }
func (r keylessRefusal) Unwrap() []error { return []error{r.reason, r.err} }

func keylessVerifier(p keyless.Policy) verify.KeylessVerifier {
	return func(bundle []byte) (*verify.KeylessOutcome, error) {
		out, err := keyless.Verify(bundle, p)
		if err != nil {
			for _, r := range reasonOf {
				if errors.Is(err, r.err) {
					return nil, keylessRefusal{r.reason, err, strings.TrimPrefix(err.Error(), r.err.Error()+": ")}
				}
			}
			return nil, err
		}
		return &verify.KeylessOutcome{Payload: out.Payload, Issuer: out.Issuer, Subject: out.Subject, PublicKey: out.PublicKey}, nil
	}
}
