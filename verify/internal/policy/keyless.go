package policy

import "crypto"

// KeylessVerifier checks a Sigstore bundle signed keylessly (a short-lived certificate, a
// transparency log entry, timestamps) offline against a trusted root and an identity policy, and
// returns the verified DSSE payload and who signed. A refusal's error wraps one of the keyless
// reasons (reason.Keyless); any other error is ErrBadSignature. verify links no Sigstore code for
// it: the CLI passes attest/keyless's verifier (docs/signing.md).
type KeylessVerifier func(bundle []byte) (*KeylessOutcome, error)

// KeylessOutcome is what a verified keyless bundle establishes.
type KeylessOutcome struct {
	// Payload is the verified DSSE payload.
	Payload []byte
	// Issuer and Subject are the certificate's OIDC issuer and subject alternative name.
	Issuer, Subject string
	// PublicKey is the certificate's key: the plain envelope beside the bundle must verify with it.
	PublicKey crypto.PublicKey
}

// KeylessPolicy is the policy file's "keyless" member: the trusted root (a path relative to the
// policy file) and the identity a keyless signature must carry. The CLI turns it into a
// KeylessVerifier; the command line's --trusted-root and --certificate-* flags override it.
type KeylessPolicy struct {
	TrustedRoot    string `json:"trusted_root"`
	Identity       string `json:"certificate_identity"`
	IdentityRegexp string `json:"certificate_identity_regexp"`
	Issuer         string `json:"certificate_oidc_issuer"`
	IssuerRegexp   string `json:"certificate_oidc_issuer_regexp"`
}

// SignerIdentity names a keyless signer.
type SignerIdentity struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

func (i SignerIdentity) String() string { return i.Subject + " (issuer " + i.Issuer + ")" }
