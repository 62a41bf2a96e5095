package keyless

import (
	"crypto"
	"crypto/x509"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/evidence"
	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"google.golang.org/protobuf/encoding/protojson"
)

// Reasons a keyless bundle is refused; each error Verify returns wraps exactly one.
var (
	// ErrBundle: the bundle is not a Sigstore bundle v0.3 of a DSSE envelope with a certificate.
	ErrBundle = errors.New("not a keyless Sigstore bundle")
	// ErrUntrustedRoot: the certificate does not chain to a certificate authority of the trusted root.
	ErrUntrustedRoot = errors.New("certificate does not chain to the trusted root")
	// ErrInclusionProof: no transparency log entry of the trusted root with a valid inclusion
	// proof (missing, altered, or a log the trusted root does not name).
	ErrInclusionProof = errors.New("transparency log inclusion proof missing or invalid")
	// ErrTimestamp: an RFC 3161 timestamp does not verify with the trusted root's authorities.
	ErrTimestamp = errors.New("signed timestamp does not verify")
	// ErrCertificateValidity: the certificate was not valid at the time the log (or a timestamp
	// authority) saw the signature.
	ErrCertificateValidity = errors.New("certificate not valid at signing time")
	// ErrSCT: the certificate carries no SCT of a CT log of the trusted root.
	ErrSCT = errors.New("certificate transparency SCT missing or invalid")
	// ErrIssuer: the certificate's OIDC issuer is not the policy's.
	ErrIssuer = errors.New("certificate OIDC issuer not allowed")
	// ErrIdentity: the certificate's subject (SAN) is not the policy's.
	ErrIdentity = errors.New("certificate identity not allowed")
	// ErrSignature: the bundle does not verify for another reason (its signature, say).
	ErrSignature = errors.New("keyless signature does not verify")
	// ErrPolicy: the identity policy or the trusted root is unusable.
	ErrPolicy = errors.New("invalid keyless policy")
)

// MaxTrustedRootBytes caps a trusted_root.json (the public-good one is about 10 KiB).
const MaxTrustedRootBytes = 4 << 20

// Policy is what a keyless bundle must satisfy.
type Policy struct {
	// TrustedRoot holds the CAs, logs and timestamp authorities (trusted_root.json).
	TrustedRoot *root.TrustedRoot
	// Identity / IdentityRegexp match the certificate's subject alternative name; Issuer /
	// IssuerRegexp its OIDC issuer extension. One of each pair is required.
	Identity, IdentityRegexp string
	Issuer, IssuerRegexp     string
}

// Identity is who signed: the certificate's OIDC issuer and subject.
type Identity struct {
	Issuer  string `json:"issuer"`
	Subject string `json:"subject"`
}

func (i Identity) String() string { return i.Subject + " (issuer " + i.Issuer + ")" }

// Outcome is what a verified bundle establishes.
type Outcome struct {
	// Payload is the DSSE payload (the in-toto statement), verified.
	Payload []byte
	Identity
	// PublicKey is the certificate's key (the plain envelope beside the bundle verifies with it).
	PublicKey crypto.PublicKey
	// SignedAt are the verified times the signature was observed (log integration, timestamps).
	SignedAt []time.Time
}

// LoadTrustedRoot reads a trusted_root.json (a regular file, bounded).
func LoadTrustedRoot(path string) (*root.TrustedRoot, error) {
	data, err := evidence.ReadFileLimited(path, MaxTrustedRootBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: read trusted root %s: %v", ErrPolicy, path, err)
	}
	tr, err := root.NewTrustedRootFromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: trusted root %s: %v", ErrPolicy, path, err)
	}
	return tr, nil
}

// Check reports whether p is complete.
func (p Policy) Check() error {
	switch {
	case p.TrustedRoot == nil:
		return fmt.Errorf("%w: no trusted root", ErrPolicy)
	case (p.Identity == "") == (p.IdentityRegexp == ""):
		return fmt.Errorf("%w: give exactly one of a certificate identity and a certificate identity regexp", ErrPolicy)
	case (p.Issuer == "") == (p.IssuerRegexp == ""):
		return fmt.Errorf("%w: give exactly one of a certificate OIDC issuer and an issuer regexp", ErrPolicy)
	}
	for _, r := range []string{p.IdentityRegexp, p.IssuerRegexp} {
		if _, err := regexp.Compile(r); err != nil {
			return fmt.Errorf("%w: %v", ErrPolicy, err)
		}
	}
	return nil
}

// IsKeyless reports whether a bundle's verification material is a certificate (not a public key).
func IsKeyless(data []byte) bool {
	var b protobundle.Bundle
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(data, &b); err != nil {
		return false
	}
	vm := b.GetVerificationMaterial()
	return vm.GetCertificate() != nil || vm.GetX509CertificateChain() != nil
}

// Verify checks a keyless bundle (JSON) offline against p and returns what it establishes, or an
// error wrapping the first reason (see the package doc for the order).
func Verify(data []byte, p Policy) (*Outcome, error) {
	if err := p.Check(); err != nil {
		return nil, err
	}
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(data, &pb); err != nil {
		// The parser's message quotes the input it stopped at, and a bundle is untrusted bytes
		// (a symbolic link may even name another file): say what it is not, and its size.
		return nil, fmt.Errorf("%w: %d bytes that do not parse as a Sigstore bundle v0.3 (JSON)", ErrBundle, len(data))
	}
	if pb.GetMediaType() != attestfmt.BundleMediaType {
		return nil, fmt.Errorf("%w: mediaType %q, want %q", ErrBundle, pb.GetMediaType(), attestfmt.BundleMediaType)
	}
	if pb.GetDsseEnvelope() == nil {
		return nil, fmt.Errorf("%w: no DSSE envelope", ErrBundle)
	}
	if pb.GetDsseEnvelope().GetPayloadType() != attestfmt.PayloadType {
		return nil, fmt.Errorf("%w: payloadType %q, want %q", ErrBundle, pb.GetDsseEnvelope().GetPayloadType(), attestfmt.PayloadType)
	}
	if pb.GetVerificationMaterial().GetCertificate() == nil {
		return nil, fmt.Errorf("%w: the verification material is not a certificate", ErrBundle)
	}
	tl := pb.GetVerificationMaterial().GetTlogEntries()
	if len(tl) == 0 {
		return nil, fmt.Errorf("%w: the bundle has no transparency log entry", ErrInclusionProof)
	}
	for i, e := range tl {
		if e.GetInclusionProof() == nil {
			return nil, fmt.Errorf("%w: transparency log entry %d has no inclusion proof", ErrInclusionProof, i)
		}
	}
	b, err := bundle.NewBundle(&pb)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBundle, err)
	}
	leaf, err := x509.ParseCertificate(pb.GetVerificationMaterial().GetCertificate().GetRawBytes())
	if err != nil {
		return nil, fmt.Errorf("%w: certificate: %v", ErrBundle, err)
	}
	tr := p.TrustedRoot

	// The chain, checked at a time inside the certificate's own window: whether it was valid when
	// it signed is the validity check's question below.
	chains, err := verify.VerifyLeafCertificate(leaf.NotBefore.Add(leaf.NotAfter.Sub(leaf.NotBefore)/2), leaf, tr)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUntrustedRoot, err)
	}
	// Every timestamp the bundle carries must verify (sigstore-go's threshold would skip a bad one).
	stamped, tsErrs, err := verify.VerifySignedTimestamp(b, tr)
	if err == nil {
		err = errors.Join(tsErrs...)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTimestamp, err)
	}
	var at []time.Time
	for _, t := range stamped {
		at = append(at, t.Time)
	}
	if err := within(leaf, at, "a timestamp authority"); err != nil {
		return nil, err
	}
	logged, err := verify.VerifyTlogEntry(b, tr, 1, true)
	if err != nil {
		// sigstore-go checks the integrated time against the certificate inside; say which it was.
		if entries, e := b.TlogEntries(); e == nil {
			for _, en := range entries {
				if err := within(leaf, []time.Time{en.IntegratedTime()}, "the transparency log"); err != nil {
					return nil, err
				}
			}
		}
		return nil, fmt.Errorf("%w: %v", ErrInclusionProof, err)
	}
	for _, t := range logged {
		at = append(at, t.Time)
	}
	if err := within(leaf, at, "the transparency log"); err != nil {
		return nil, err
	}
	if err := verify.VerifySignedCertificateTimestamp(chains, 1, tr); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSCT, err)
	}
	sum, err := certificate.SummarizeCertificate(leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: certificate: %v", ErrBundle, err)
	}
	id := Identity{Issuer: sum.Issuer, Subject: sum.SubjectAlternativeName}
	if !matches(id.Issuer, p.Issuer, p.IssuerRegexp) {
		return nil, fmt.Errorf("%w: issuer %q, the policy allows %s", ErrIssuer, id.Issuer, want(p.Issuer, p.IssuerRegexp))
	}
	if !matches(id.Subject, p.Identity, p.IdentityRegexp) {
		return nil, fmt.Errorf("%w: subject %q, the policy allows %s", ErrIdentity, id.Subject, want(p.Identity, p.IdentityRegexp))
	}
	// Everything again, by sigstore-go's verifier as a whole: the DSSE signature with the
	// certificate's key, and the log entry's body against this envelope.
	v, err := verify.NewVerifier(tr, verify.WithTransparencyLog(1), verify.WithSignedCertificateTimestamps(1), verify.WithObserverTimestamps(1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	cid, err := verify.NewShortCertificateIdentity(p.Issuer, p.IssuerRegexp, p.Identity, p.IdentityRegexp)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	if _, err := v.Verify(b, verify.NewPolicy(verify.WithoutArtifactUnsafe(), verify.WithCertificateIdentity(cid))); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSignature, err)
	}
	return &Outcome{Payload: pb.GetDsseEnvelope().GetPayload(), Identity: id, PublicKey: leaf.PublicKey, SignedAt: at}, nil
}

// within checks that leaf was valid at each time.
func within(leaf *x509.Certificate, at []time.Time, by string) error {
	for _, t := range at {
		if t.Before(leaf.NotBefore) || t.After(leaf.NotAfter) {
			return fmt.Errorf("%w: %s saw the signature at %s, the certificate is valid from %s to %s", ErrCertificateValidity, by,
				t.UTC().Format(time.RFC3339), leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// matches applies sigstore-go's matcher semantics: an exact value, or a Go regexp that matches
// anywhere (anchor it with ^...$ for a whole match).
func matches(got, exact, re string) bool {
	if exact != "" {
		return got == exact
	}
	ok, err := regexp.MatchString(re, got)
	return err == nil && ok
}

func want(exact, re string) string {
	if exact != "" {
		return fmt.Sprintf("%q", exact)
	}
	return fmt.Sprintf("/%s/", re)
}
