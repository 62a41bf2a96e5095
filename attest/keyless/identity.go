package keyless

import (
	"crypto/x509"
	"fmt"

	protobundle "github.com/sigstore/protobuf-specs/gen/pb-go/bundle/v1"
	"github.com/sigstore/sigstore-go/pkg/fulcio/certificate"
	"google.golang.org/protobuf/encoding/protojson"
)

// CertificateIdentity reads (does not verify) the identity a keyless bundle's certificate names.
func CertificateIdentity(data []byte) (Identity, error) {
	var pb protobundle.Bundle
	if err := protojson.Unmarshal(data, &pb); err != nil {
		return Identity{}, fmt.Errorf("%w: %v", ErrBundle, err)
	}
	leaf, err := x509.ParseCertificate(pb.GetVerificationMaterial().GetCertificate().GetRawBytes())
	if err != nil {
		return Identity{}, fmt.Errorf("%w: certificate: %v", ErrBundle, err)
	}
	sum, err := certificate.SummarizeCertificate(leaf)
	if err != nil {
		return Identity{}, fmt.Errorf("%w: certificate: %v", ErrBundle, err)
	}
	return Identity{Issuer: sum.Issuer, Subject: sum.SubjectAlternativeName}, nil
}
