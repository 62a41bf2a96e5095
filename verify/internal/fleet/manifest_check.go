package fleet

import (
	"bytes"
	"crypto"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// FleetPredicateType is the in-toto predicate type of a fleet manifest's statement: its one
// subject is the manifest file by digest, its predicate the plan digest and commit.
const FleetPredicateType = "https://qualkit.dev/attestation/fleet-manifest/v1"

// MaxFleetManifestBytes bounds a fleet manifest file (20,000 entries and 10,000 metrics).
const MaxFleetManifestBytes = 64 << 20

// Errors of CheckFleetManifest (errors.Is).
var (
	// ErrFleetSignature: the manifest's envelope is malformed, signed by no pinned key, or signs
	// other bytes or another predicate.
	ErrFleetSignature = errors.New("fleet manifest signature")
	// ErrFleetBinding: a member of the manifest differs from what the plan and the receipts give.
	ErrFleetBinding = errors.New("fleet manifest binding")
)

// FleetStatement is the in-toto Statement v1 that signs a fleet manifest: subject name (the
// manifest's file name) with the digest of manifest, predicate {plan_digest, commit}.
func FleetStatement(name string, manifest []byte, m *contract.FleetManifestDoc) ([]byte, error) {
	st := map[string]any{
		"_type":         attestfmt.StatementType,
		"subject":       []any{map[string]any{"name": name, "digest": map[string]string{"sha256": strings.TrimPrefix(evidence.DigestOf(manifest), "sha256:")}}},
		"predicateType": FleetPredicateType,
		"predicate":     map[string]string{"plan_digest": m.Plan.Digest, "commit": m.Plan.Commit},
	}
	return json.Marshal(st)
}

// CheckFleetManifest checks a signed fleet manifest offline: raw is the manifest file named name,
// envelope its DSSE envelope; the envelope must carry a signature by one of keys over the
// statement FleetStatement gives for exactly these bytes, and the manifest (strictly decoded and
// schema-checked) must equal recomputed, a manifest built anew from the plan and the receipts
// (BuildFleetManifest), in every member but created_at, qualverify and the receipts' paths. It
// returns the fingerprint of the key that signed and every problem found (wrapping
// ErrFleetSignature or ErrFleetBinding); err means the manifest could not be read as one.
func CheckFleetManifest(raw, envelope []byte, name string, keys []crypto.PublicKey, recomputed *contract.FleetManifestDoc) (signer string, problems []error, err error) {
	stored, err := schemas.Decode[contract.FleetManifestDoc](raw, name, contract.FleetManifest)
	if err != nil {
		return "", nil, err
	}
	signer, sigErr := checkFleetEnvelope(envelope, name, raw, keys, stored)
	if sigErr != nil {
		problems = append(problems, sigErr)
	}
	return signer, append(problems, fleetDiff(stored, recomputed)...), nil
}

func checkFleetEnvelope(envelope []byte, name string, raw []byte, keys []crypto.PublicKey, stored *contract.FleetManifestDoc) (string, error) {
	var env load.EnvelopeJSON
	if err := jsonstrict.DecodeInto(envelope, &env, jsonstrict.WithMaxBytes(limits.MaxAttestationBytes)); err != nil {
		return "", fmt.Errorf("%w: envelope: %v", ErrFleetSignature, err)
	}
	if env.PayloadType != attestfmt.PayloadType {
		return "", fmt.Errorf("%w: payloadType %q, want %q", ErrFleetSignature, env.PayloadType, attestfmt.PayloadType)
	}
	if len(env.Signatures) == 0 || len(env.Signatures) > limits.MaxSignatures {
		return "", fmt.Errorf("%w: %d signatures, want 1 to %d", ErrFleetSignature, len(env.Signatures), limits.MaxSignatures)
	}
	payload, err := load.B64(env.Payload)
	if err != nil {
		return "", fmt.Errorf("%w: payload: %v", ErrFleetSignature, err)
	}
	pae := dsse.PAE(env.PayloadType, payload)
	signer := ""
	for _, s := range env.Signatures {
		sig, err := load.B64(s.Sig)
		if err != nil {
			continue
		}
		for _, k := range keys {
			if signer == "" && load.VerifySig(k, sig, pae) {
				signer = policy.KeyFingerprint(k)
			}
		}
	}
	if signer == "" {
		return "", fmt.Errorf("%w: no signature verifies with the %d pinned keys", ErrFleetSignature, len(keys))
	}
	if err := checkFleetStatement(payload, name, raw, stored); err != nil {
		return "", err
	}
	return signer, nil
}

// checkFleetStatement: the signed payload is the statement FleetStatement gives for the manifest
// named name with exactly the bytes raw.
func checkFleetStatement(payload []byte, name string, raw []byte, stored *contract.FleetManifestDoc) error {
	want, err := FleetStatement(name, raw, stored)
	if err != nil {
		return err
	}
	got, err := jsonstrict.Parse(payload)
	if err != nil {
		return fmt.Errorf("%w: statement: %v", ErrFleetSignature, err)
	}
	wantTree, _ := jsonstrict.Parse(want)
	gb, _ := json.Marshal(got)
	wb, _ := json.Marshal(wantTree)
	if !bytes.Equal(gb, wb) {
		return fmt.Errorf("%w: the signed statement is not the one of %s as it is (subject digest %s, predicate type %s)", ErrFleetSignature, name, evidence.DigestOf(raw), FleetPredicateType)
	}
	return nil
}

// CheckFleetManifestKeyless is CheckFleetManifest for a manifest signed keylessly: bundle is its
// Sigstore bundle (MANIFEST.sigstore.json), verified offline by kl (the trusted root and the
// identity policy a receipt's keyless bundle is verified with, Policy.Keyless); its verified
// payload must be the statement FleetStatement gives for exactly these bytes. It returns the
// verified signer's identity and every problem (a refusal wraps ErrFleetSignature and the keyless
// reason kl gave, e.g. reason.ErrCertificateIdentity).
func CheckFleetManifestKeyless(raw, bundle []byte, name string, kl policy.KeylessVerifier, recomputed *contract.FleetManifestDoc) (identity *policy.SignerIdentity, problems []error, err error) {
	stored, err := schemas.Decode[contract.FleetManifestDoc](raw, name, contract.FleetManifest)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case kl == nil:
		problems = append(problems, fmt.Errorf("%w: a keyless bundle needs a trusted root and an identity policy to verify it", ErrFleetSignature))
	case len(bundle) > limits.MaxAttestationBytes:
		problems = append(problems, fmt.Errorf("%w: bundle of %d bytes, over %d", ErrFleetSignature, len(bundle), limits.MaxAttestationBytes))
	default:
		out, kerr := kl(bundle)
		switch {
		case kerr != nil:
			problems = append(problems, fmt.Errorf("%w: bundle: %w", ErrFleetSignature, kerr))
		default:
			if serr := checkFleetStatement(out.Payload, name, raw, stored); serr != nil {
				problems = append(problems, serr)
			} else {
				identity = &policy.SignerIdentity{Issuer: out.Issuer, Subject: out.Subject}
			}
		}
	}
	return identity, append(problems, fleetDiff(stored, recomputed)...), nil
}

// fleetDiff compares two manifests member by member, leaving out what is not recomputed.
func fleetDiff(stored, recomputed *contract.FleetManifestDoc) []error {
	norm := func(m *contract.FleetManifestDoc) map[string]json.RawMessage {
		c := *m
		c.CreatedAt, c.Qualverify = "", ""
		c.Entries = make([]contract.FleetManifestEntry, len(m.Entries))
		for i, e := range m.Entries {
			if e.Receipt != nil {
				r := *e.Receipt
				r.Path = ""
				e.Receipt = &r
			}
			c.Entries[i] = e
		}
		b, _ := json.Marshal(&c)
		var out map[string]json.RawMessage
		json.Unmarshal(b, &out)
		return out
	}
	a, b := norm(stored), norm(recomputed)
	var out []error
	for _, k := range []string{"schema", "plan", "counts", "entries", "outlier_rule", "metrics", "outlier_hosts"} {
		if bytes.Equal(a[k], b[k]) {
			continue
		}
		detail := ""
		if k == "entries" || k == "metrics" || k == "outlier_hosts" {
			var x, y []json.RawMessage
			json.Unmarshal(a[k], &x)
			json.Unmarshal(b[k], &y)
			for i := range max(len(x), len(y)) {
				if i >= len(x) || i >= len(y) || !bytes.Equal(x[i], y[i]) {
					detail = fmt.Sprintf(" (first at /%s/%d; %d in the manifest, %d recomputed)", k, i, len(x), len(y))
					break
				}
			}
		}
		out = append(out, fmt.Errorf("%w: /%s differs from what the plan and the receipts give%s", ErrFleetBinding, k, detail))
	}
	return out
}
