package attest_test

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	sdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"google.golang.org/protobuf/encoding/protojson"
)

const (
	envelopeRel = "qualification/receipts/cpu/ci-runner-01/run.intoto.dsse.json"
	bundleRel   = "qualification/receipts/cpu/ci-runner-01/run.sigstore.json"
)

func TestOutputPaths(t *testing.T) {
	for in, want := range map[string][2]string{
		"a/b/run.json": {"a/b/run.intoto.dsse.json", "a/b/run.sigstore.json"},
		"run":          {"run.intoto.dsse.json", "run.sigstore.json"},
	} {
		e, b := attest.OutputPaths(in)
		if e != want[0] || b != want[1] {
			t.Errorf("OutputPaths(%q) = %q, %q; want %q", in, e, b, want)
		}
	}
}

// TestSignVerifyRoundTrip signs a campaign's receipt and verifies both files with sigstore's own
// verifiers, using the public key file only, the way the verify module and cosign do.
func TestSignVerifyRoundTrip(t *testing.T) {
	c := newCampaign(t, nil)
	s, prefix := newKey(t, t.TempDir(), []byte("pw"))
	e, b, err := attest.AttestReceipt(context.Background(), c.root, receiptRel, s)
	if err != nil {
		t.Fatal(err)
	}
	if e != envelopeRel || b != bundleRel {
		t.Fatalf("wrote %s and %s", e, b)
	}
	pubPEM, _ := os.ReadFile(prefix + ".pub")
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pubPEM)
	if err != nil {
		t.Fatal(err)
	}
	v, err := signature.LoadDefaultVerifier(pub)
	if err != nil {
		t.Fatal(err)
	}

	// The plain envelope: sigstore's DSSE verifier.
	envJSON, _ := os.ReadFile(filepath.Join(c.root, e))
	var payload []byte
	if err := sdsse.WrapVerifier(v, sdsse.WithExpectedPayloadType(attestfmt.PayloadType), sdsse.WithDecodedPayload(&payload)).
		VerifySignature(bytes.NewReader(envJSON), nil); err != nil {
		t.Fatalf("sigstore dsse verifier: %v", err)
	}
	var raw struct {
		PayloadType string `json:"payloadType"`
		Signatures  []map[string]string
	}
	if err := json.Unmarshal(envJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if raw.PayloadType != "application/vnd.in-toto+json" || len(raw.Signatures) != 1 {
		t.Fatalf("envelope %s", envJSON)
	}
	if keyid, ok := raw.Signatures[0]["keyid"]; !ok || keyid != "" {
		t.Errorf("keyid %q (present %v), want an empty keyid", keyid, ok)
	}
	// go-securesystemslib's envelope verifier, an independent implementation.
	var env dsse.Envelope
	json.Unmarshal(envJSON, &env)
	ev, err := dsse.NewEnvelopeVerifier(&sdsse.VerifierAdapter{SignatureVerifier: v, Pub: pub})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ev.Verify(context.Background(), &env); err != nil {
		t.Fatalf("go-securesystemslib verifier: %v", err)
	}

	// The statement: in-toto bindings, subjects equal the files on disk.
	var st ita1.Statement
	if err := protojson.Unmarshal(payload, &st); err != nil {
		t.Fatal(err)
	}
	if err := st.Validate(); err != nil {
		t.Fatal(err)
	}
	if st.GetType() != ita1.StatementTypeUri || st.GetPredicateType() != attestfmt.PredicateType {
		t.Fatalf("_type %q predicateType %q", st.GetType(), st.GetPredicateType())
	}
	for _, sub := range st.GetSubject() {
		if got, disk := sub.GetDigest()["sha256"], sha256File(t, filepath.Join(c.root, sub.GetName())); got != disk {
			t.Errorf("subject %s: %s, on disk %s", sub.GetName(), got, disk)
		}
	}

	// The bundle: v0.3, public key hint only, the same envelope and signature.
	bundleJSON, _ := os.ReadFile(filepath.Join(c.root, b))
	var bun protobundle.Bundle
	if err := protojson.Unmarshal(bundleJSON, &bun); err != nil {
		t.Fatal(err)
	}
	hint, _ := attest.KeyHint(pub)
	if bun.GetMediaType() != "application/vnd.dev.sigstore.bundle.v0.3+json" || bun.GetVerificationMaterial().GetPublicKey().GetHint() != hint {
		t.Fatalf("bundle %s", bundleJSON)
	}
	if bun.GetVerificationMaterial().GetTlogEntries() != nil || bun.GetVerificationMaterial().GetTimestampVerificationData() != nil {
		t.Error("bundle carries transparency log or timestamp data")
	}
	be := bun.GetDsseEnvelope()
	if !bytes.Equal(be.GetPayload(), payload) || be.GetPayloadType() != attestfmt.PayloadType || len(be.GetSignatures()) != 1 ||
		base64.StdEncoding.EncodeToString(be.GetSignatures()[0].GetSig()) != raw.Signatures[0]["sig"] {
		t.Fatal("bundle envelope differs from the plain envelope")
	}
	if err := v.VerifySignature(bytes.NewReader(be.GetSignatures()[0].GetSig()), bytes.NewReader(dsse.PAE(be.GetPayloadType(), be.GetPayload()))); err != nil {
		t.Fatalf("bundle signature: %v", err)
	}
	if got, err := attest.VerifyBundle(bundleJSON, pub); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("VerifyBundle: %v", err)
	}
	for _, f := range []string{e, b} {
		st, _ := os.Stat(filepath.Join(c.root, f))
		if st.Mode().Perm() != 0o644 {
			t.Errorf("%s mode %v, want 0644", f, st.Mode().Perm())
		}
	}
}

func TestAttestReceiptNeverReplaces(t *testing.T) {
	ctx := context.Background()
	s, _ := newKey(t, t.TempDir(), nil)
	t.Run("second attestation", func(t *testing.T) {
		c := newCampaign(t, nil)
		if _, _, err := attest.AttestReceipt(ctx, c.root, receiptRel, s); err != nil {
			t.Fatal(err)
		}
		before := readBoth(t, c.root)
		if _, _, err := attest.AttestReceipt(ctx, c.root, receiptRel, s); !errors.Is(err, attest.ErrPath) {
			t.Fatalf("error %v, want ErrPath", err)
		}
		if after := readBoth(t, c.root); after != before {
			t.Fatal("attestation files changed")
		}
	})
	for _, existing := range []string{envelopeRel, bundleRel} {
		t.Run("existing "+filepath.Base(existing), func(t *testing.T) {
			c := newCampaign(t, nil)
			writeFile(t, filepath.Join(c.root, existing), []byte("old"))
			if _, _, err := attest.AttestReceipt(ctx, c.root, receiptRel, s); !errors.Is(err, attest.ErrPath) {
				t.Fatalf("error %v, want ErrPath", err)
			}
			if raw, _ := os.ReadFile(filepath.Join(c.root, existing)); string(raw) != "old" {
				t.Error("existing file replaced")
			}
			other := map[string]string{envelopeRel: bundleRel, bundleRel: envelopeRel}[existing]
			if _, err := os.Lstat(filepath.Join(c.root, other)); err == nil {
				t.Errorf("%s written although %s exists", other, existing)
			}
		})
	}
	t.Run("symlinked output directory", func(t *testing.T) {
		c := newCampaign(t, nil)
		real := filepath.Join(c.root, "qualification/receipts/cpu/ci-runner-01")
		moved := filepath.Join(c.root, "elsewhere")
		if err := os.Rename(real, moved); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(moved, real); err != nil {
			t.Fatal(err)
		}
		if _, _, err := attest.AttestReceipt(ctx, c.root, receiptRel, s); !errors.Is(err, attest.ErrPath) {
			t.Fatalf("error %v, want ErrPath", err)
		}
		if _, err := os.Stat(filepath.Join(moved, "run.intoto.dsse.json")); err == nil {
			t.Error("attestation written through the symlink")
		}
	})
	t.Run("invalid receipt writes nothing", func(t *testing.T) {
		c := newCampaign(t, func(rc map[string]any) { rc["receipt_id"] = "NOT VALID" })
		if _, _, err := attest.AttestReceipt(ctx, c.root, receiptRel, s); !errors.Is(err, attest.ErrReceipt) {
			t.Fatalf("error %v, want ErrReceipt", err)
		}
		if _, err := os.Lstat(filepath.Join(c.root, envelopeRel)); err == nil {
			t.Error("envelope written for an invalid receipt")
		}
	})
}

func readBoth(t *testing.T, root string) string {
	t.Helper()
	a, err1 := os.ReadFile(filepath.Join(root, envelopeRel))
	b, err2 := os.ReadFile(filepath.Join(root, bundleRel))
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return string(a) + string(b)
}

// failingSigner is a Signer whose key is not the one it claims (a misconfigured KMS key).
type failingSigner struct {
	attest.Signer
	pub crypto.PublicKey
}

func (f failingSigner) PublicKey() crypto.PublicKey { return f.pub }

func TestSignEnvelopeChecksItsSignature(t *testing.T) {
	s, _ := newKey(t, t.TempDir(), nil)
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	_, err := attest.SignEnvelope(context.Background(), []byte(`{}`), failingSigner{s, &other.PublicKey})
	if !errors.Is(err, attest.ErrSignature) {
		t.Fatalf("error %v, want ErrSignature", err)
	}
}

func TestVerifyRejects(t *testing.T) {
	c := newCampaign(t, nil)
	s, _ := newKey(t, t.TempDir(), nil)
	e, b, err := attest.AttestReceipt(context.Background(), c.root, receiptRel, s)
	if err != nil {
		t.Fatal(err)
	}
	envJSON, _ := os.ReadFile(filepath.Join(c.root, e))
	bundleJSON, _ := os.ReadFile(filepath.Join(c.root, b))
	other, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)

	var env dsse.Envelope
	json.Unmarshal(envJSON, &env)
	payload, _ := env.DecodeB64Payload()
	tampered := env
	tampered.Payload = base64.StdEncoding.EncodeToString(bytes.Replace(payload, []byte(`"clean":true`), []byte(`"clean":false`), 1))
	if tampered.Payload == env.Payload {
		t.Fatal("fixture has no clean:true to tamper with")
	}
	tamperedJSON, _ := json.Marshal(tampered)
	wrongType := env
	wrongType.PayloadType = "application/json"
	wrongTypeJSON, _ := json.Marshal(wrongType)

	if _, err := attest.VerifyEnvelope(envJSON, s.PublicKey()); err != nil {
		t.Fatalf("control: %v", err)
	}
	for name, err := range map[string]error{
		"tampered payload": errOnly(attest.VerifyEnvelope(tamperedJSON, s.PublicKey())),
		"wrong key":        errOnly(attest.VerifyEnvelope(envJSON, &other.PublicKey)),
		"bundle wrong key": errOnly(attest.VerifyBundle(bundleJSON, &other.PublicKey)),
	} {
		if !errors.Is(err, attest.ErrSignature) {
			t.Errorf("%s: error %v, want ErrSignature", name, err)
		}
	}
	for name, err := range map[string]error{
		"wrong payload type": errOnly(attest.VerifyEnvelope(wrongTypeJSON, s.PublicKey())),
		"not JSON":           errOnly(attest.VerifyEnvelope([]byte("{"), s.PublicKey())),
		"bundle not JSON":    errOnly(attest.VerifyBundle([]byte("{"), s.PublicKey())),
		"envelope as bundle": errOnly(attest.VerifyBundle(envJSON, s.PublicKey())),
	} {
		if err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func errOnly(_ []byte, err error) error { return err }

// FuzzVerifyEnvelope: envelopes are untrusted input; no input may panic or verify without the key.
func FuzzVerifyEnvelope(f *testing.F) {
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30=","signatures":[{"keyid":"","sig":"MEUCIQ=="}]}`))
	f.Add([]byte(`{"payloadType":"application/vnd.in-toto+json","payload":"e30","signatures":[]}`))
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := attest.VerifyEnvelope(data, &key.PublicKey); err == nil {
			t.Fatalf("verified without a signature by the key: %q", data)
		}
		if _, err := attest.VerifyBundle(data, &key.PublicKey); err == nil {
			t.Fatalf("bundle verified without a signature by the key: %q", data)
		}
	})
}
