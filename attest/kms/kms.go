// Package kms turns a sigstore KMS key reference (awskms://, gcpkms://, azurekms://,
// hashivault://) into an attest.Signer. Only the HashiCorp Vault provider (transit engine) is
// linked into this build: it is self-hostable, its client (hashicorp/vault/api) is small, and it
// is testable against a local `vault server -dev`. The cloud providers pull their whole SDKs
// (AWS SDK v2, the Google Cloud KMS gRPC client, the Azure SDK: together several hundred packages
// and megabytes of binary) for a signer any of them can also reach through Vault; a reference to
// one of them is recognised and refused with ErrProviderNotLinked, never mistaken for a file path.
// The signer's self-check (attest.NewSigner: a test signature verified with the key's public key)
// runs as for key files.
package kms

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/attest"
	sigkms "github.com/sigstore/sigstore/pkg/signature/kms"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault" // registers hashivault://
)

// Errors of KMS references.
var (
	// ErrProviderNotLinked: the reference names a KMS provider this build does not link.
	ErrProviderNotLinked = errors.New("KMS provider not linked into this build")
	// ErrKMS: the provider could not load or use the key.
	ErrKMS = errors.New("KMS key unusable")
)

// Linked are the schemes this build signs with; Known every scheme sigstore ships.
var (
	Linked = []string{"hashivault://"}
	Known  = []string{"awskms://", "gcpkms://", "azurekms://", "hashivault://"}
)

// IsReference reports whether key names a KMS key (one of Known) rather than a file.
func IsReference(key string) bool {
	for _, p := range Known {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Provider returns the scheme of a reference ("hashivault://"), "" for a file path.
func Provider(key string) string {
	for _, p := range Known {
		if strings.HasPrefix(key, p) {
			return p
		}
	}
	return ""
}

// LoadSigner returns a Signer for the KMS key ref (ECDSA P-256 / SHA-256, like key files), after
// the signer's self-check.
func LoadSigner(ctx context.Context, ref string) (attest.Signer, error) {
	p := Provider(ref)
	switch {
	case p == "":
		return nil, fmt.Errorf("%w: %q is not a KMS reference (%s)", ErrKMS, ref, strings.Join(Known, ", "))
	case !linked(p):
		return nil, fmt.Errorf("%w: %s (this build links %s; docs/signing.md)", ErrProviderNotLinked, p, strings.Join(Linked, ", "))
	}
	sv, err := sigkms.Get(ctx, ref, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrKMS, ref, err)
	}
	s, err := attest.NewSigner(ctx, sv)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKMS, ref, err)
	}
	return s, nil
}

func linked(p string) bool {
	for _, l := range Linked {
		if l == p {
			return true
		}
	}
	return false
}
