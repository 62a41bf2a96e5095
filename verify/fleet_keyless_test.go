package verify

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/qualkit/qualkit/schemas/metric"
)

// fakeBundle stands in for a Sigstore bundle in this package's tests: the verify module links no
// Sigstore code (the CLI passes attest/keyless's verifier as Policy.Keyless), so the verifier is
// a function of the bundle bytes. Its fields are what a verified bundle establishes, and its
// signature (by an ECDSA key the test holds) binds the payload.
type fakeBundle struct {
	Payload []byte `json:"payload"`
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
	Sig     []byte `json:"sig"`
}

// fakeKeyless verifies fakeBundles signed by key for the identity subject of issuer, refusing
// another subject or issuer with the keyless reasons attest/keyless's verifier maps to.
func fakeKeyless(key *ecdsa.PrivateKey, issuer, subject string) KeylessVerifier {
	return func(bundle []byte) (*KeylessOutcome, error) {
		var b fakeBundle
		if err := json.Unmarshal(bundle, &b); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrMalformedAttestation, err)
		}
		h := sha256.Sum256(b.Payload)
		switch {
		case !ecdsa.VerifyASN1(&key.PublicKey, h[:], b.Sig):
			return nil, fmt.Errorf("%w: the signature does not verify with the certificate", ErrUntrustedRoot)
		case b.Issuer != issuer:
			return nil, fmt.Errorf("%w: %s", ErrCertificateIssuer, b.Issuer)
		case b.Subject != subject:
			return nil, fmt.Errorf("%w: %s", ErrCertificateIdentity, b.Subject)
		}
		return &KeylessOutcome{Payload: b.Payload, Issuer: b.Issuer, Subject: b.Subject, PublicKey: &key.PublicKey}, nil
	}
}

// TestFleetManifestKeyless: a fleet manifest signed keylessly is checked with the identity policy
// receipts are (Policy.Keyless): the right identity holds and names its signer; another identity,
// another issuer, a bundle over other bytes and a re-signed edit of a derived member are refused.
// Before, a fleet manifest could be checked against pinned keys only.
func TestFleetManifestKeyless(t *testing.T) {
	const issuer, subject = "https://token.actions.githubusercontent.com", "https://github.com/qualkit/qualkit/.github/workflows/release.yml@refs/heads/main"
	k := newTestKey(t)
	root := t.TempDir()
	plan := writeFleet(t, root, 2, k)
	evs, labels := fleetEvidenceOf(t, root)
	rs, err := VerifyFleetReceipts(context.Background(), evs, labels, k.policy(), 2)
	if err != nil {
		t.Fatal(err)
	}
	m := BuildFleetManifest(plan, rs, metric.DefaultOutlierK, "2026-12-02T01:00:00Z", "test")
	raw, _ := json.MarshalIndent(m, "", "  ")
	cert, err := ecdsa.GenerateKey(k.pub.(*ecdsa.PublicKey).Curve, rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	bundle := func(manifest []byte, iss, sub string) []byte {
		var doc = *m
		if err := json.Unmarshal(manifest, &doc); err != nil {
			t.Fatal(err)
		}
		st, err := FleetStatement("fleet.json", manifest, &doc)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(st)
		sig, err := ecdsa.SignASN1(rand.Reader, cert, h[:])
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(fakeBundle{Payload: st, Issuer: iss, Subject: sub, Sig: sig})
		return b
	}
	kl := fakeKeyless(cert, issuer, subject)
	id, problems, err := CheckFleetManifestKeyless(raw, bundle(raw, issuer, subject), "fleet.json", kl, m)
	if err != nil || len(problems) != 0 || id == nil || id.Subject != subject || id.Issuer != issuer {
		t.Fatalf("the keyless manifest as written: identity %v, %v, %v", id, problems, err)
	}
	edited := *m
	edited.Counts.Passed++
	editedRaw, _ := json.MarshalIndent(&edited, "", "  ")
	cases := []struct {
		name     string
		raw, bnd []byte
		kl       KeylessVerifier
		want     []error
	}{
		{"another identity", raw, bundle(raw, issuer, "https://github.com/evil/fork/.github/workflows/release.yml@refs/heads/main"), kl, []error{ErrFleetSignature, ErrCertificateIdentity}},
		{"another issuer", raw, bundle(raw, "https://accounts.example.com", subject), kl, []error{ErrFleetSignature, ErrCertificateIssuer}},
		{"a bundle over other bytes", append([]byte(" "), raw...), bundle(raw, issuer, subject), kl, []error{ErrFleetSignature}},
		{"a re-signed edit of a derived member", editedRaw, bundle(editedRaw, issuer, subject), kl, []error{ErrFleetBinding}},
		{"no identity policy", raw, bundle(raw, issuer, subject), nil, []error{ErrFleetSignature}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, problems, err := CheckFleetManifestKeyless(tc.raw, tc.bnd, "fleet.json", tc.kl, m)
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) == 0 {
				t.Fatalf("held (identity %v)", id)
			}
			for _, w := range tc.want {
				if !errors.Is(problems[0], w) {
					t.Fatalf("problem %v, want %v in its chain", problems[0], w)
				}
			}
		})
	}
}
