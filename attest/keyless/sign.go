package keyless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/sigstore/sigstore-go/pkg/sign"
	"google.golang.org/protobuf/encoding/protojson"
)

// Public-good Sigstore, the default service URLs of the CLI.
const (
	PublicFulcioURL = "https://fulcio.sigstore.dev"
	PublicRekorURL  = "https://rekor.sigstore.dev"
	PublicTSAURL    = "https://timestamp.sigstore.dev/api/v1/timestamp"
)

// ErrSign: keyless signing failed (a service refused, or the new bundle failed its self-check).
var ErrSign = errors.New("keyless signing failed")

// Options name the services and the identity token.
type Options struct {
	// IDToken is the OIDC identity token (see Token).
	IDToken string
	// FulcioURL and RekorURL are required; TSAURL is optional (no RFC 3161 timestamp when "").
	FulcioURL, RekorURL, TSAURL string
	// Timeout bounds each service request; 0 means 30 s.
	Timeout time.Duration
	// Verify, when it has a trusted root, is the self-check of the new bundle (with the identity
	// the certificate names when the policy leaves it out).
	Verify Policy
}

// Signed is a keyless signature of one statement.
type Signed struct {
	// Envelope is the plain DSSE envelope (JSON, newline-terminated), Bundle the Sigstore bundle
	// v0.3 that carries the same envelope with the certificate, the log entry with its inclusion
	// proof, and the timestamp.
	Envelope, Bundle []byte
	Identity
}

// SignStatement signs payload (an in-toto statement) keylessly.
func SignStatement(ctx context.Context, payload []byte, o Options) (*Signed, error) {
	if o.IDToken == "" || o.FulcioURL == "" || o.RekorURL == "" {
		return nil, fmt.Errorf("%w: an identity token, a Fulcio URL and a Rekor URL are required", ErrSign)
	}
	timeout := o.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	kp, err := sign.NewEphemeralKeypair(nil)
	if err != nil {
		return nil, fmt.Errorf("%w: ephemeral key: %v", ErrSign, err)
	}
	opts := sign.BundleOptions{
		Context:                    ctx,
		CertificateProvider:        sign.NewFulcio(&sign.FulcioOptions{BaseURL: o.FulcioURL, Timeout: timeout}),
		CertificateProviderOptions: &sign.CertificateProviderOptions{IDToken: o.IDToken},
		TransparencyLogs:           []sign.Transparency{sign.NewRekor(&sign.RekorOptions{BaseURL: o.RekorURL, Timeout: timeout})},
	}
	if o.TSAURL != "" {
		opts.TimestampAuthorities = []*sign.TimestampAuthority{sign.NewTimestampAuthority(&sign.TimestampAuthorityOptions{URL: o.TSAURL, Timeout: timeout})}
	}
	pb, err := sign.Bundle(&sign.DSSEData{Data: payload, PayloadType: attestfmt.PayloadType}, kp, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSign, err)
	}
	pb.MediaType = attestfmt.BundleMediaType
	b, err := protojson.Marshal(pb)
	if err != nil {
		return nil, fmt.Errorf("%w: encode bundle: %v", ErrSign, err)
	}
	env := pb.GetDsseEnvelope()
	type sig struct {
		KeyID string `json:"keyid"`
		Sig   []byte `json:"sig"`
	}
	e := struct {
		PayloadType string `json:"payloadType"`
		Payload     []byte `json:"payload"`
		Signatures  []sig  `json:"signatures"`
	}{PayloadType: env.GetPayloadType(), Payload: env.GetPayload()}
	for _, s := range env.GetSignatures() {
		e.Signatures = append(e.Signatures, sig{Sig: s.GetSig()})
	}
	envJSON, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("%w: encode envelope: %v", ErrSign, err)
	}
	out := &Signed{Envelope: append(envJSON, '\n'), Bundle: append(b, '\n')}
	if err := out.identify(o.Verify); err != nil {
		return nil, err
	}
	return out, nil
}

// identify reads the identity from the bundle, verifying it first when a trusted root is given.
func (s *Signed) identify(p Policy) error {
	if p.TrustedRoot == nil {
		id, err := CertificateIdentity(s.Bundle)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSign, err)
		}
		s.Identity = id
		return nil
	}
	if p.Identity == "" && p.IdentityRegexp == "" && p.Issuer == "" && p.IssuerRegexp == "" {
		id, err := CertificateIdentity(s.Bundle)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSign, err)
		}
		p.Identity, p.Issuer = id.Subject, id.Issuer
	}
	o, err := Verify(s.Bundle, p)
	if err != nil {
		return fmt.Errorf("%w: check the new bundle: %w", ErrSign, err)
	}
	if _, err := attest.VerifyEnvelope(s.Envelope, o.PublicKey); err != nil {
		return fmt.Errorf("%w: check the new envelope: %v", ErrSign, err)
	}
	s.Identity = o.Identity
	return nil
}

// AttestReceipt is attest.AttestReceipt signed keylessly: the statement of root/receiptRel, its
// plain DSSE envelope and its keyless bundle beside the receipt, never replacing a file.
func AttestReceipt(ctx context.Context, root, receiptRel string, o Options) (envelopeRel, bundleRel string, id Identity, err error) {
	st, err := attest.Statement(root, receiptRel)
	if err != nil {
		return "", "", id, err
	}
	envelopeRel, bundleRel = attest.OutputPaths(st.Receipt)
	if err := attest.CheckOutputs(root, envelopeRel, bundleRel); err != nil {
		return "", "", id, err
	}
	s, err := SignStatement(ctx, st.Payload, o)
	if err != nil {
		return "", "", id, err
	}
	if err := attest.WriteOutputs(root, envelopeRel, bundleRel, s.Envelope, s.Bundle); err != nil {
		return "", "", id, err
	}
	return envelopeRel, bundleRel, s.Identity, nil
}
