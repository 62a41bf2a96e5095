package verify

import (
	"crypto"

	"github.com/qualkit/qualkit/verify/internal/policy"
)

// Policy says what verification requires.
type Policy = policy.Policy

// SignaturePolicy strengthens the signature check (an M-of-N policy). Every attestation file
// (envelope, bundle) must meet it on its own.
type SignaturePolicy = policy.SignaturePolicy

// Tolerance bounds a difference: |a - b| <= max(Absolute, |b| x Relative).
type Tolerance = policy.Tolerance

// MetricTolerance is a policy's tolerance for one metric name.
type MetricTolerance = policy.MetricTolerance

// Relaxation names an option that weakens a check. Each ends in "-unsafe".
type Relaxation = policy.Relaxation

// The relaxations.
const (
	// RelaxUnsigned accepts a receipt without an attestation (the signature check is skipped).
	RelaxUnsigned = policy.RelaxUnsigned
	// RelaxUnpublished accepts a receipt that is not at origin/main (publication not required).
	RelaxUnpublished = policy.RelaxUnpublished
	// RelaxMissingInputs verifies evidence without a bound input the checks read (the workload, a
	// launch recipe, a corpus file); the warnings say what was then not checked.
	RelaxMissingInputs = policy.RelaxMissingInputs
	// RelaxFixtureDevices accepts a device that a test fixture reported (qualrun run
	// --device-fixture; the receipt marks it fixture) as identified. For tests of the device path
	// only: a receipt from a real host never needs it.
	RelaxFixtureDevices = policy.RelaxFixtureDevices
)

// Relaxations lists every relaxation.
var Relaxations = policy.Relaxations

// DefaultPolicy requires publication, permits every relaxation an option asks for, and
// recomputes numbers to DefaultRecomputeAbsolute / DefaultRecomputeRelative. It pins no key.
func DefaultPolicy() Policy { return policy.DefaultPolicy() }

// Errors of policies and keys (and of a relaxation a policy forbids).
var (
	// ErrRelaxationRefused: an option weakens a check that the policy does not allow to be weakened.
	ErrRelaxationRefused = policy.ErrRelaxationRefused
	// ErrPolicy: a policy file is invalid.
	ErrPolicy = policy.ErrPolicy
	// ErrPublicKey: a public key is unreadable or not ECDSA P-256.
	ErrPublicKey = policy.ErrPublicKey
)

// ParsePolicy reads a policy file's JSON. Public key paths are relative to dir (the policy file's
// directory). Fields left out keep DefaultPolicy's values, except allow_unsafe: a policy file
// that does not list a relaxation forbids it.
func ParsePolicy(data []byte, dir string) (Policy, error) { return policy.ParsePolicy(data, dir) }

// LoadPolicy reads a policy file; its public key paths are relative to its directory.
func LoadPolicy(path string) (Policy, error) { return policy.LoadPolicy(path) }

// ParsePublicKey reads a PEM-encoded PKIX public key. Only ECDSA P-256 is accepted: the signing
// side signs with ECDSA P-256 / SHA-256 (Ed25519 is refused because cosign signs it as Ed25519ph).
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	return policy.ParsePublicKey(pemBytes)
}

// LoadPublicKey reads a PEM public key file (see ParsePublicKey).
func LoadPublicKey(path string) (crypto.PublicKey, error) { return policy.LoadPublicKey(path) }

// KeyFingerprint returns "sha256:<hex>" of a public key's PKIX DER encoding.
func KeyFingerprint(pub crypto.PublicKey) string { return policy.KeyFingerprint(pub) }

// KeylessVerifier checks a keylessly signed Sigstore bundle offline (docs/signing.md).
type KeylessVerifier = policy.KeylessVerifier

// KeylessOutcome is what a verified keyless bundle establishes.
type KeylessOutcome = policy.KeylessOutcome

// KeylessPolicy is the policy file's "keyless" member.
type KeylessPolicy = policy.KeylessPolicy

// SignerIdentity names a keyless signer.
type SignerIdentity = policy.SignerIdentity
