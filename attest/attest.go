package attest

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	protocommon "github.com/sigstore/protobuf-specs/gen/pb-go/common/v1"
	protodsse "github.com/sigstore/protobuf-specs/gen/pb-go/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
	sdsse "github.com/sigstore/sigstore/pkg/signature/dsse"
	"github.com/sigstore/sigstore/pkg/signature/options"
	"google.golang.org/protobuf/encoding/protojson"
)

// ErrSignature: a signature does not verify with the given public key.
var ErrSignature = errors.New("signature does not verify")

// OutputPaths returns where AttestReceipt writes the attestation of the receipt receiptRel:
// DIR/NAME.intoto.dsse.json and DIR/NAME.sigstore.json for DIR/NAME.json (a name without the
// .json extension keeps its whole name).
func OutputPaths(receiptRel string) (envelopeRel, bundleRel string) {
	base := strings.TrimSuffix(receiptRel, ".json")
	return base + attestfmt.EnvelopeSuffix, base + attestfmt.BundleSuffix
}

// AttestReceipt builds the Statement of the receipt root/receiptRel, signs it once with s, checks
// the signature with s's public key, and writes the plain DSSE envelope and the Sigstore bundle
// beside the receipt (see OutputPaths; both relative to root, forward slashes). Like receipts,
// they are never replaced: if either exists nothing is written (ErrPath).
func AttestReceipt(ctx context.Context, root, receiptRel string, s Signer) (envelopeRel, bundleRel string, err error) {
	st, err := Statement(root, receiptRel)
	if err != nil {
		return "", "", err
	}
	envelopeRel, bundleRel = OutputPaths(st.Receipt)
	if err := CheckOutputs(root, envelopeRel, bundleRel); err != nil {
		return "", "", err
	}
	env, err := SignEnvelope(ctx, st.Payload, s)
	if err != nil {
		return "", "", err
	}
	bundle, err := Bundle(env, s.PublicKey())
	if err != nil {
		return "", "", err
	}
	if err := WriteOutputs(root, envelopeRel, bundleRel, env, bundle); err != nil {
		return "", "", err
	}
	return envelopeRel, bundleRel, nil
}

// CheckOutputs fails (ErrPath) when an attestation file already exists or its path passes
// through a symbolic link: attestations are never replaced.
func CheckOutputs(root string, rels ...string) error {
	for _, rel := range rels {
		if err := evidence.CheckNoSymlink(root, rel); err != nil {
			return err
		}
		if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
			return fmt.Errorf("%w: %s already exists; attestations are never replaced", ErrPath, rel)
		}
	}
	return nil
}

// WriteOutputs writes a new envelope and bundle, both or neither.
func WriteOutputs(root, envelopeRel, bundleRel string, env, bundle []byte) error {
	if err := writeNew(root, envelopeRel, env, 0o644); err != nil {
		return err
	}
	if err := writeNew(root, bundleRel, bundle, 0o644); err != nil {
		os.Remove(filepath.Join(root, filepath.FromSlash(envelopeRel))) // ours, written a moment ago: no half attestation
		return err
	}
	return nil
}

// SignEnvelope signs payload as an in-toto DSSE envelope (attestfmt.PayloadType) with sigstore's DSSE
// wrapper, checks the signature with s's public key, and returns the envelope JSON
// ({"payloadType","payload","signatures":[{"keyid":"","sig"}]}, newline-terminated). The keyid is
// left empty: it is an unauthenticated hint that cosign ignores and that sigstore's verifiers would
// otherwise match against their own idea of a key id.
func SignEnvelope(ctx context.Context, payload []byte, s Signer) ([]byte, error) {
	if err := checkPublicKey(s.PublicKey()); err != nil {
		return nil, err
	}
	env, err := sdsse.WrapSigner(signerAdapter{s}, attestfmt.PayloadType).SignMessage(bytes.NewReader(payload), options.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("sign statement: %w", err)
	}
	got, err := VerifyEnvelope(env, s.PublicKey())
	if err != nil {
		return nil, fmt.Errorf("check the new signature: %w", err)
	}
	if !bytes.Equal(got, payload) {
		return nil, fmt.Errorf("check the new signature: %w: the envelope carries other bytes than were signed", ErrSignature)
	}
	return append(env, '\n'), nil
}

// signerAdapter presents a Signer as the sigstore signature.Signer that sdsse.WrapSigner wraps.
type signerAdapter struct{ s Signer }

func (a signerAdapter) PublicKey(...signature.PublicKeyOption) (crypto.PublicKey, error) {
	return a.s.PublicKey(), nil
}

func (a signerAdapter) SignMessage(r io.Reader, opts ...signature.SignOption) ([]byte, error) {
	ctx := context.Background()
	for _, o := range opts {
		o.ApplyContext(&ctx)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return a.s.Sign(ctx, data)
}

// VerifyEnvelope checks a plain DSSE envelope against pub (ECDSA P-256, SHA-256): payload type
// attestfmt.PayloadType, and at least one signature over the pre-authentication encoding that verifies,
// whatever its keyid says. It returns the verified payload. This is the signer's own check (and
// reads cosign's envelopes); evidence verification is the verify module's.
func VerifyEnvelope(envelope []byte, pub crypto.PublicKey) ([]byte, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("parse envelope: %w", err)
	}
	if env.PayloadType != attestfmt.PayloadType {
		return nil, fmt.Errorf("envelope payloadType %q, want %q", env.PayloadType, attestfmt.PayloadType)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("envelope payload: %w", err)
	}
	sigs := make([][]byte, 0, len(env.Signatures))
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			sig, err = base64.URLEncoding.DecodeString(s.Sig)
		}
		if err == nil {
			sigs = append(sigs, sig)
		}
	}
	if err := verifyPAE(payload, sigs, pub); err != nil {
		return nil, err
	}
	return payload, nil
}

// VerifyBundle checks a Sigstore bundle whose content is a DSSE envelope against pub, like
// VerifyEnvelope (the public key hint is not trusted: pub is). It returns the verified payload.
func VerifyBundle(bundle []byte, pub crypto.PublicKey) ([]byte, error) {
	var b protobundle.Bundle
	if err := protojson.Unmarshal(bundle, &b); err != nil {
		return nil, fmt.Errorf("parse bundle: %w", err)
	}
	env := b.GetDsseEnvelope()
	if env == nil {
		return nil, errors.New("bundle has no DSSE envelope")
	}
	if env.GetPayloadType() != attestfmt.PayloadType {
		return nil, fmt.Errorf("bundle payloadType %q, want %q", env.GetPayloadType(), attestfmt.PayloadType)
	}
	sigs := make([][]byte, 0, len(env.GetSignatures()))
	for _, s := range env.GetSignatures() {
		sigs = append(sigs, s.GetSig())
	}
	if err := verifyPAE(env.GetPayload(), sigs, pub); err != nil {
		return nil, err
	}
	return env.GetPayload(), nil
}

func verifyPAE(payload []byte, sigs [][]byte, pub crypto.PublicKey) error {
	if err := checkPublicKey(pub); err != nil {
		return err
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return fmt.Errorf("load verifier: %w", err)
	}
	pae := dsse.PAE(attestfmt.PayloadType, payload)
	for _, sig := range sigs {
		if v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(pae)) == nil {
			return nil
		}
	}
	return fmt.Errorf("%w: none of %d signatures verifies with the public key", ErrSignature, len(sigs))
}

// Bundle wraps a signed DSSE envelope (as SignEnvelope returns it) in a Sigstore bundle v0.3 whose
// verification material is the public key hint (KeyHint) only: no certificate, no transparency log
// entry, no timestamp. It is written with the protobuf-specs types and protojson, compact and
// newline-terminated.
func Bundle(envelope []byte, pub crypto.PublicKey) ([]byte, error) {
	var env dsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("parse envelope: %w", err)
	}
	payload, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("envelope payload: %w", err)
	}
	pe := &protodsse.Envelope{Payload: payload, PayloadType: env.PayloadType}
	for _, s := range env.Signatures {
		sig, err := base64.StdEncoding.DecodeString(s.Sig)
		if err != nil {
			return nil, fmt.Errorf("envelope signature: %w", err)
		}
		pe.Signatures = append(pe.Signatures, &protodsse.Signature{Sig: sig, Keyid: s.KeyID})
	}
	hint, err := KeyHint(pub)
	if err != nil {
		return nil, err
	}
	b := &protobundle.Bundle{
		MediaType: attestfmt.BundleMediaType,
		VerificationMaterial: &protobundle.VerificationMaterial{
			Content: &protobundle.VerificationMaterial_PublicKey{PublicKey: &protocommon.PublicKeyIdentifier{Hint: hint}},
		},
		Content: &protobundle.Bundle_DsseEnvelope{DsseEnvelope: pe},
	}
	raw, err := protojson.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		return nil, fmt.Errorf("encode bundle: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// writeNew writes data to root/rel (rel clean, slash-separated, in an existing directory) under
// the evidence rules of schemas.WriteNew: no symlink component, never replacing a file.
func writeNew(root, rel string, data []byte, mode os.FileMode) error {
	if err := evidence.CheckNoSymlink(root, rel); err != nil {
		return err
	}
	return evidence.WriteNew(filepath.Join(root, filepath.FromSlash(rel)), data, mode)
}
