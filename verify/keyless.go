package verify

import (
	"crypto"
	"errors"

	"github.com/qualkit/qualkit/schemas/evidence"
)

// KeylessVerifier checks a Sigstore bundle signed keylessly (a short-lived certificate, a
// transparency log entry, timestamps) offline against a trusted root and an identity policy, and
// returns the verified DSSE payload and who signed. A refusal's error wraps one of the keyless
// Reasons (ErrUntrustedRoot ... ErrCertificateIdentity); any other error is ErrBadSignature.
// verify links no Sigstore code for it: the CLI passes attest/keyless's verifier
// (docs/signing.md).
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

// keylessState is the snapshot's part of keyless verification (embedded in snapshot).
type keylessState struct {
	keylessEnvelope    *attestation
	keylessEnvelopeRaw []byte
	keylessKey         crypto.PublicKey
	identity           *SignerIdentity
}

// keylessAttestation is an attestation's part (embedded in attestation).
type keylessAttestation struct {
	// keylessErr is why a keyless bundle (or its envelope) did not verify.
	keylessErr error
	identity   *SignerIdentity
}

var keylessReasons = []*Reason{ErrUntrustedRoot, ErrInclusionProof, ErrSignedTimestamp, ErrCertificateValidity, ErrCertificateSCT, ErrCertificateIssuer, ErrCertificateIdentity}

// readKeyless reads the attestations of a receipt with policy.Keyless: the bundle is verified
// by it, and the envelope with the key of the bundle's verified certificate. Without a keyless
// verifier it is readAttestation with the pinned keys.
func (s *snapshot) readKeyless(kind, path string, raw []byte, policy Policy) *attestation {
	if policy.Keyless == nil {
		return readAttestation(kind, path, raw, policy.Keys)
	}
	switch kind {
	case "envelope":
		// Verified once the bundle's certificate is known (finishKeyless).
		s.keylessEnvelope = &attestation{kind: kind, path: path, digest: evidence.DigestOf(raw)}
		s.keylessEnvelopeRaw = raw
		return s.keylessEnvelope
	}
	a := &attestation{kind: kind, path: path, digest: evidence.DigestOf(raw), sigCount: 1}
	out, err := policy.Keyless(raw)
	if err != nil {
		a.keylessErr = err
		a.sigs = []SignatureOutcome{{File: path, Problem: err.Error()}}
		return a
	}
	id := SignerIdentity{Issuer: out.Issuer, Subject: out.Subject}
	a.signer, a.identity, a.payload = KeyFingerprint(out.PublicKey), &id, out.Payload
	a.sigs = []SignatureOutcome{{File: path, Key: a.signer, Verified: true, Identity: &id}}
	s.keylessKey = out.PublicKey
	if st, err := parseStatement(out.Payload); err != nil {
		a.malformed = err
	} else {
		a.stmt = st
	}
	return a
}

// finishKeyless verifies the envelope read before the bundle with the bundle's certificate key,
// and records the verified identity.
func (s *snapshot) finishKeyless() {
	for _, a := range s.attestations {
		if a.identity != nil && s.identity == nil {
			s.identity = a.identity
		}
	}
	if s.keylessEnvelope == nil {
		return
	}
	var keys []crypto.PublicKey
	if s.keylessKey != nil {
		keys = append(keys, s.keylessKey)
	}
	*s.keylessEnvelope = *readAttestation(s.keylessEnvelope.kind, s.keylessEnvelope.path, s.keylessEnvelopeRaw, keys)
	for i := range s.keylessEnvelope.sigs {
		if s.keylessEnvelope.sigs[i].Verified {
			s.keylessEnvelope.sigs[i].Identity = s.identity
		}
	}
	if s.keylessKey == nil {
		s.keylessEnvelope.keylessErr = errors.New("the envelope of a keyless signature verifies only with its bundle's certificate key, and the bundle did not verify")
		for i := range s.keylessEnvelope.sigs {
			s.keylessEnvelope.sigs[i].Problem = "no verified keyless bundle beside it"
		}
	}
}

// keylessFinding adds the finding of a keyless attestation that did not verify.
func keylessFinding(c *collector, a *attestation) {
	for _, r := range keylessReasons {
		if errors.Is(a.keylessErr, r) {
			c.addCause(a.path, "/verificationMaterial", r, a.keylessErr)
			return
		}
	}
	c.add(a.path, "", ErrBadSignature, "%v", a.keylessErr)
}
