package load

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
)

// PredicateFields are the members of the qualification predicate, each equal to the receipt's.
var PredicateFields = []string{"receipt_id", "source", "artifacts", "workload", "host_id", "qualrun"} // not a contract value: the predicate's member names

type EnvelopeJSON struct {
	PayloadType string          `json:"payloadType"`
	Payload     string          `json:"payload"`
	Signatures  []signatureJSON `json:"signatures"`
}

type signatureJSON struct {
	KeyID string `json:"keyid"`
	Sig   string `json:"sig"`
}

type bundleJSON struct {
	MediaType            string `json:"mediaType"`
	VerificationMaterial *struct {
		PublicKey *struct {
			Hint string `json:"hint"`
		} `json:"publicKey"`
		TlogEntries               []json.RawMessage `json:"tlogEntries"`
		TimestampVerificationData json.RawMessage   `json:"timestampVerificationData"`
	} `json:"verificationMaterial"`
	DsseEnvelope *EnvelopeJSON `json:"dsseEnvelope"`
}

// Statement is a decoded (not yet trusted) in-toto statement.
type Statement struct {
	Subjects  []StatementSubject
	Predicate map[string]any
}

type StatementSubject struct {
	Name   string
	Digest string // "sha256:<hex>"
}

// Attestation is what reading one envelope or bundle file learned.
type Attestation struct {
	Kind    string // "envelope" or "bundle"
	Path    string
	digest  string
	ReadErr error // the file exists but could not be read
	// malformed wraps ErrMalformedAttestation when the file is not the format.
	Malformed error
	Payload   []byte
	// signer is the fingerprint of the pinned key that verified a signature; "" when none did.
	Signer   string
	SigCount int
	// sigs is the outcome of every signature, in order.
	Sigs     []SignatureOutcome
	Stmt     *Statement
	warnings []string
	// KeylessErr is why a keyless bundle (or its envelope) did not verify (keyless.go).
	KeylessErr error
	identity   *policy.SignerIdentity
}

func Malformedf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{reason.ErrMalformedAttestation}, args...)...)
}

// ReadAttestation parses an envelope or bundle, verifies its signatures with keys and decodes
// its statement. Problems are recorded in the attestation, never returned.
func ReadAttestation(kind, path string, data []byte, keys []crypto.PublicKey) *Attestation {
	a := &Attestation{Kind: kind, Path: path, digest: evidence.DigestOf(data)}
	var env *EnvelopeJSON
	switch kind {
	case "envelope":
		var e EnvelopeJSON
		if err := jsonstrict.DecodeInto(data, &e, jsonstrict.WithMaxBytes(limits.MaxAttestationBytes)); err != nil {
			a.Malformed = Malformedf("DSSE envelope: %v", err)
			return a
		}
		env = &e
	case "bundle":
		var b bundleJSON
		if err := jsonstrict.DecodeInto(data, &b, jsonstrict.WithMaxBytes(limits.MaxAttestationBytes)); err != nil {
			a.Malformed = Malformedf("Sigstore bundle (only public-key bundles with a DSSE envelope are accepted): %v", err)
			return a
		}
		switch {
		case b.MediaType != attestfmt.BundleMediaType:
			a.Malformed = Malformedf("bundle mediaType %q, want %q", b.MediaType, attestfmt.BundleMediaType)
			return a
		case b.DsseEnvelope == nil:
			a.Malformed = Malformedf("bundle has no dsseEnvelope")
			return a
		case b.VerificationMaterial == nil || b.VerificationMaterial.PublicKey == nil:
			a.Malformed = Malformedf("bundle verificationMaterial has no publicKey (only pinned-key bundles are accepted)")
			return a
		}
		if len(b.VerificationMaterial.TlogEntries) > 0 {
			a.warnings = append(a.warnings, fmt.Sprintf("%s: %d transparency log entries are not verified (offline, pinned key)", path, len(b.VerificationMaterial.TlogEntries)))
		}
		env = b.DsseEnvelope
	}
	if env.PayloadType != attestfmt.PayloadType {
		a.Malformed = Malformedf("payloadType %q, want %q", env.PayloadType, attestfmt.PayloadType)
		return a
	}
	payload, err := B64(env.Payload)
	if err != nil {
		a.Malformed = Malformedf("payload: %v", err)
		return a
	}
	if len(env.Signatures) == 0 {
		a.Malformed = Malformedf("no signatures")
		return a
	}
	if len(env.Signatures) > limits.MaxSignatures {
		a.Malformed = Malformedf("%d signatures, more than %d", len(env.Signatures), limits.MaxSignatures)
		return a
	}
	a.Payload = payload
	a.SigCount = len(env.Signatures)
	pae := dsse.PAE(env.PayloadType, payload)
	// keyid is an unauthenticated hint: every signature is tried with every pinned key, and every
	// signature's outcome is kept (one valid signature by a pinned key is enough, unless the
	// policy asks for more; the rest are listed either way).
	for i, s := range env.Signatures {
		out := SignatureOutcome{File: path, Index: i, KeyID: s.KeyID}
		sig, err := B64(s.Sig)
		switch {
		case err != nil:
			out.Problem = "the signature is not base64"
		default:
			for _, k := range keys {
				if VerifySig(k, sig, pae) {
					out.Key, out.Verified = policy.KeyFingerprint(k), true
					break
				}
			}
			if !out.Verified {
				out.Problem = fmt.Sprintf("verifies with none of the %d pinned keys", len(keys))
			}
		}
		if out.Verified && a.Signer == "" {
			a.Signer = out.Key
		}
		a.Sigs = append(a.Sigs, out)
	}
	st, err := parseStatement(payload)
	if err != nil {
		a.Malformed = err
		return a
	}
	a.Stmt = st
	return a
}

// SignatureOutcome is what one signature of an attestation came to.
type SignatureOutcome struct {
	// File is the envelope or bundle, relative to the evidence root; Index the signature's
	// position in its signatures list.
	File  string
	Index int
	// KeyID is the signature's keyid as written (an unauthenticated hint, never used to pick a key).
	KeyID string
	// Key is the sha256 fingerprint (of the PKIX DER) of the pinned key the signature verified
	// with; "" when it verified with none.
	Key      string
	Verified bool
	// Problem says why a signature did not verify.
	Problem string
	// Identity is the keyless signer (keyless.go); nil for a pinned key.
	Identity *policy.SignerIdentity
}

func VerifySig(k crypto.PublicKey, sig, message []byte) bool {
	ec, ok := k.(*ecdsa.PublicKey)
	if !ok {
		return false
	}
	v, err := signature.LoadECDSAVerifier(ec, crypto.SHA256)
	if err != nil {
		return false
	}
	return v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(message)) == nil
}

// b64 decodes standard or URL-safe base64, as DSSE allows.
func B64(s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		b, err = base64.URLEncoding.DecodeString(s)
	}
	return b, err
}

// parseStatement decodes an in-toto Statement v1 of the qualification predicate strictly.
func parseStatement(payload []byte) (*Statement, error) {
	doc, err := jsonstrict.Parse(payload)
	if err != nil {
		return nil, Malformedf("statement: %v", err)
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return nil, Malformedf("statement is not a JSON object")
	}
	for k := range obj {
		switch k {
		case "_type", "subject", "predicateType", "predicate":
		default:
			return nil, Malformedf("statement member %q is not part of the format", k)
		}
	}
	if t, _ := obj["_type"].(string); t != attestfmt.StatementType {
		return nil, Malformedf("statement _type %v, want %s", obj["_type"], attestfmt.StatementType)
	}
	if t, _ := obj["predicateType"].(string); t != attestfmt.PredicateType {
		return nil, Malformedf("predicateType %v, want %s", obj["predicateType"], attestfmt.PredicateType)
	}
	subs, ok := obj["subject"].([]any)
	if !ok || len(subs) == 0 || len(subs) > limits.MaxSubjects {
		return nil, Malformedf("statement subject must be a list of 1 to %d subjects", limits.MaxSubjects)
	}
	st := &Statement{}
	for i, s := range subs {
		m, ok := s.(map[string]any)
		if !ok {
			return nil, Malformedf("subject %d is not an object", i)
		}
		name, _ := m["name"].(string)
		dg, _ := m["digest"].(map[string]any)
		hexd, _ := dg["sha256"].(string)
		if name == "" || len(m) != 2 || dg == nil || !record.IsDigest([]byte("sha256:"+hexd)) {
			return nil, Malformedf("subject %d: want {\"name\": path, \"digest\": {\"sha256\": 64 lowercase hex}}", i)
		}
		st.Subjects = append(st.Subjects, StatementSubject{Name: name, Digest: "sha256:" + hexd})
	}
	pred, ok := obj["predicate"].(map[string]any)
	if !ok {
		return nil, Malformedf("statement predicate is not an object")
	}
	for k := range pred {
		known := false
		for _, f := range PredicateFields {
			known = known || k == f
		}
		if !known {
			return nil, Malformedf("predicate member %q is not part of the format", k)
		}
	}
	st.Predicate = pred
	return st, nil
}
