package load

import (
	"crypto"
	"errors"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/verify/internal/policy"
)

// keylessState is the snapshot's part of keyless verification (embedded in Snapshot).
type keylessState struct {
	keylessEnvelope    *Attestation
	keylessEnvelopeRaw []byte
	keylessKey         crypto.PublicKey
}

// readKeyless reads an attestation of a receipt with pol.Keyless: the bundle is verified by it,
// and the envelope with the key of the bundle's verified certificate. Without a keyless verifier
// it is ReadAttestation with the pinned keys.
func (s *Snapshot) readKeyless(kind, path string, raw []byte, pol policy.Policy) *Attestation {
	if pol.Keyless == nil {
		return ReadAttestation(kind, path, raw, pol.Keys)
	}
	if kind == "envelope" {
		// Verified once the bundle's certificate is known (finishKeyless).
		s.keylessEnvelope = &Attestation{Kind: kind, Path: path, digest: evidence.DigestOf(raw)}
		s.keylessEnvelopeRaw = raw
		return s.keylessEnvelope
	}
	a := &Attestation{Kind: kind, Path: path, digest: evidence.DigestOf(raw), SigCount: 1}
	out, err := pol.Keyless(raw)
	if err != nil {
		a.KeylessErr = err
		a.Sigs = []SignatureOutcome{{File: path, Problem: err.Error()}}
		return a
	}
	id := policy.SignerIdentity{Issuer: out.Issuer, Subject: out.Subject}
	a.Signer, a.identity, a.Payload = policy.KeyFingerprint(out.PublicKey), &id, out.Payload
	a.Sigs = []SignatureOutcome{{File: path, Key: a.Signer, Verified: true, Identity: &id}}
	s.keylessKey = out.PublicKey
	if st, err := parseStatement(out.Payload); err != nil {
		a.Malformed = err
	} else {
		a.Stmt = st
	}
	return a
}

// finishKeyless verifies the envelope read before the bundle with the bundle's certificate key,
// and records the verified identity.
func (s *Snapshot) finishKeyless() {
	for _, a := range s.Attestations {
		if a.identity != nil && s.Identity == nil {
			s.Identity = a.identity
		}
	}
	if s.keylessEnvelope == nil {
		return
	}
	var keys []crypto.PublicKey
	if s.keylessKey != nil {
		keys = append(keys, s.keylessKey)
	}
	*s.keylessEnvelope = *ReadAttestation(s.keylessEnvelope.Kind, s.keylessEnvelope.Path, s.keylessEnvelopeRaw, keys)
	for i := range s.keylessEnvelope.Sigs {
		if s.keylessEnvelope.Sigs[i].Verified {
			s.keylessEnvelope.Sigs[i].Identity = s.Identity
		}
	}
	if s.keylessKey == nil {
		s.keylessEnvelope.KeylessErr = errors.New("the envelope of a keyless signature verifies only with its bundle's certificate key, and the bundle did not verify")
		for i := range s.keylessEnvelope.Sigs {
			s.keylessEnvelope.Sigs[i].Problem = "no verified keyless bundle beside it"
		}
	}
}
