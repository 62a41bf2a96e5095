// Package policy is what a verification requires: the policy file, the pinned public keys, the
// relaxations a policy permits and the tolerances of recomputed numbers. Package verify
// re-exports its types, errors and functions under the same names.
package policy

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Policy says what verification requires.
type Policy struct {
	// RequirePublishable requires a receipt that qualrun marked publishable (clean source, HEAD ==
	// origin/main, passed verdict) and, when the evidence root is a git checkout, whose commit is
	// that checkout's origin/main.
	RequirePublishable bool
	// Keys are the pinned public keys (ECDSA P-256); a signature by any of them is accepted. The
	// DSSE keyid and the bundle's key hint are ignored.
	Keys []crypto.PublicKey
	// AllowedRelaxations lists the relaxations an Option may turn on. nil permits every
	// relaxation (the command line's explicit flags decide); an empty, non-nil list permits none.
	AllowedRelaxations []Relaxation
	// Recompute is the tolerance of numbers recomputed from raw evidence (row metrics from
	// request records, case metrics from rows).
	Recompute Tolerance
	// Signatures says how many signatures an attestation needs; the zero value is DSSE's rule:
	// one signature that verifies with a pinned key.
	Signatures SignaturePolicy
	// Metrics tighten the tolerances of a comparison's metric rules, by metric name: the rule's
	// tolerance becomes the smaller of the two. A policy never loosens a committed workload's rule.
	Metrics []MetricTolerance
	// Keyless, when set, verifies keyless Sigstore bundles (a certificate, not a pinned key):
	// the bundle with it, the envelope with the bundle's certificate key (load/keyless.go).
	Keyless KeylessVerifier
	// KeylessIdentity is the policy file's keyless member (its trusted root path made absolute
	// or relative to the working directory), for the CLI to build Keyless from.
	KeylessIdentity *KeylessPolicy
}

// SignaturePolicy strengthens the signature check (an M-of-N policy). Every attestation file
// (envelope, bundle) must meet it on its own.
type SignaturePolicy struct {
	// RequireAll: every signature of the attestation must verify with a pinned key (a signature
	// by an unknown key, or garbage, is then a finding instead of a listed extra).
	RequireAll bool `json:"require_all"`
	// Threshold is the number of distinct pinned keys that must have signed (M of the N pinned
	// keys); 0 means 1.
	Threshold int `json:"threshold"`
}

// Tolerance bounds a difference: |a - b| <= max(Absolute, |b| x Relative).
type Tolerance struct {
	Absolute float64 `json:"absolute"`
	Relative float64 `json:"relative"`
}

// MetricTolerance is a policy's tolerance for one metric name.
type MetricTolerance struct {
	Metric            string  `json:"metric"`
	AbsoluteTolerance float64 `json:"absolute_tolerance"`
	RelativeTolerance float64 `json:"relative_tolerance"`
}

// Relaxation names an option that weakens a check. Each ends in "-unsafe".
type Relaxation string

// The relaxations.
const (
	// RelaxUnsigned accepts a receipt without an attestation (the signature check is skipped).
	RelaxUnsigned Relaxation = "allow-unsigned-unsafe"
	// RelaxUnpublished accepts a receipt that is not at origin/main (publication not required).
	RelaxUnpublished Relaxation = "allow-unpublished-unsafe"
	// RelaxMissingInputs verifies evidence without a bound input the checks read (the workload, a
	// launch recipe, a corpus file); the warnings say what was then not checked.
	RelaxMissingInputs Relaxation = "allow-missing-inputs-unsafe"
	// RelaxFixtureDevices accepts a device that a test fixture reported (qualrun run
	// --device-fixture; the receipt marks it fixture) as identified. For tests of the device path
	// only: a receipt from a real host never needs it.
	RelaxFixtureDevices Relaxation = "allow-fixture-devices-unsafe"
)

// Relaxations lists every relaxation.
var Relaxations = []Relaxation{RelaxUnsigned, RelaxUnpublished, RelaxMissingInputs, RelaxFixtureDevices}

// DefaultPolicy requires publication, permits every relaxation an option asks for, and
// recomputes numbers to DefaultRecomputeAbsolute / DefaultRecomputeRelative. It pins no key.
func DefaultPolicy() Policy {
	return Policy{RequirePublishable: true, Recompute: Tolerance{limits.DefaultRecomputeAbsolute, limits.DefaultRecomputeRelative}}
}

// policyFile is the JSON form of a policy (docs/verification.md).
type policyFile struct {
	RequirePublishable *bool            `json:"require_publishable"`
	PublicKeys         []string         `json:"public_keys"`
	AllowUnsafe        []string         `json:"allow_unsafe"`
	Signatures         *SignaturePolicy `json:"signatures"`
	Keyless            *KeylessPolicy   `json:"keyless"`
	Tolerances         *struct {
		Recompute *Tolerance        `json:"recompute"`
		Metrics   []MetricTolerance `json:"metrics"`
	} `json:"tolerances"`
}

// Errors of policies and keys.
var (
	// ErrRelaxationRefused: an option weakens a check that the policy does not allow to be weakened.
	ErrRelaxationRefused = errors.New("relaxation not allowed by the policy")
	// ErrPolicy: a policy file is invalid.
	ErrPolicy = errors.New("invalid policy")
	// ErrPublicKey: a public key is unreadable or not ECDSA P-256.
	ErrPublicKey = errors.New("invalid public key")
)

// ParsePolicy reads a policy file's JSON. Public key paths are relative to dir (the policy file's
// directory). Fields left out keep DefaultPolicy's values, except allow_unsafe: a policy file
// that does not list a relaxation forbids it.
func ParsePolicy(data []byte, dir string) (Policy, error) {
	var pf policyFile
	if err := jsonstrict.DecodeInto(data, &pf, jsonstrict.WithMaxBytes(limits.MaxPolicyBytes)); err != nil {
		return Policy{}, fmt.Errorf("%w: %v", ErrPolicy, err)
	}
	p := DefaultPolicy()
	p.AllowedRelaxations = []Relaxation{}
	if pf.RequirePublishable != nil {
		p.RequirePublishable = *pf.RequirePublishable
	}
	for i, a := range pf.AllowUnsafe {
		if !slices.Contains(Relaxations, Relaxation(a)) {
			return Policy{}, fmt.Errorf("%w: /allow_unsafe/%d: %q is not a relaxation (known: %v)", ErrPolicy, i, a, Relaxations)
		}
		p.AllowedRelaxations = append(p.AllowedRelaxations, Relaxation(a))
	}
	if sp := pf.Signatures; sp != nil {
		if sp.Threshold < 0 || sp.Threshold > limits.MaxSignatures {
			return Policy{}, fmt.Errorf("%w: /signatures/threshold: %d is not a number of distinct pinned keys (0 to %d)", ErrPolicy, sp.Threshold, limits.MaxSignatures)
		}
		p.Signatures = *sp
	}
	for i, k := range pf.PublicKeys {
		path := k
		if !filepath.IsAbs(path) {
			path = filepath.Join(dir, filepath.FromSlash(k))
		}
		pub, err := LoadPublicKey(path)
		if err != nil {
			return Policy{}, fmt.Errorf("%w: /public_keys/%d: %v", ErrPolicy, i, err)
		}
		p.Keys = append(p.Keys, pub)
	}
	if k := pf.Keyless; k != nil {
		if k.TrustedRoot != "" && !filepath.IsAbs(k.TrustedRoot) {
			k.TrustedRoot = filepath.Join(dir, filepath.FromSlash(k.TrustedRoot))
		}
		p.KeylessIdentity = k
	}
	if t := pf.Tolerances; t != nil {
		if t.Recompute != nil {
			if !validTolerance(t.Recompute.Absolute, t.Recompute.Relative) {
				return Policy{}, fmt.Errorf("%w: /tolerances/recompute: tolerances are finite and >= 0", ErrPolicy)
			}
			p.Recompute = *t.Recompute
		}
		for i, m := range t.Metrics {
			if m.Metric == "" || !validTolerance(m.AbsoluteTolerance, m.RelativeTolerance) {
				return Policy{}, fmt.Errorf("%w: /tolerances/metrics/%d: a metric name and finite tolerances >= 0", ErrPolicy, i)
			}
		}
		p.Metrics = t.Metrics
	}
	return p, nil
}

func validTolerance(a, r float64) bool {
	return a >= 0 && r >= 0 && !math.IsInf(a, 0) && !math.IsInf(r, 0)
}

// LoadPolicy reads a policy file; its public key paths are relative to its directory.
func LoadPolicy(path string) (Policy, error) {
	data, err := evidence.ReadFileLimited(path, limits.MaxPolicyBytes)
	if err != nil {
		return Policy{}, fmt.Errorf("read policy %s: %w", path, err)
	}
	p, err := ParsePolicy(data, filepath.Dir(path))
	if err != nil {
		return Policy{}, fmt.Errorf("policy %s: %w", path, err)
	}
	return p, nil
}

// ParsePublicKey reads a PEM-encoded PKIX public key. Only ECDSA P-256 is accepted: the signing
// side signs with ECDSA P-256 / SHA-256 (Ed25519 is refused because cosign signs it as Ed25519ph).
func ParsePublicKey(pemBytes []byte) (crypto.PublicKey, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPublicKey, err)
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, fmt.Errorf("%w: %T, want ECDSA P-256", ErrPublicKey, pub)
	}
	return ec, nil
}

// LoadPublicKey reads a PEM public key file (see ParsePublicKey).
func LoadPublicKey(path string) (crypto.PublicKey, error) {
	data, err := evidence.ReadFileLimited(path, limits.MaxKeyBytes)
	if err != nil {
		return nil, fmt.Errorf("read public key %s: %w", path, err)
	}
	pub, err := ParsePublicKey(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pub, nil
}

// KeyFingerprint returns "sha256:<hex>" of a public key's PKIX DER encoding.
func KeyFingerprint(pub crypto.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Permits reports whether every relaxation turned on (relax) is allowed.
func (p Policy) Permits(relax map[Relaxation]bool) error {
	if p.AllowedRelaxations == nil {
		return nil
	}
	for _, r := range Relaxations {
		if relax[r] && !slices.Contains(p.AllowedRelaxations, r) {
			return fmt.Errorf("%w: %s (the policy allows %v)", ErrRelaxationRefused, r, p.AllowedRelaxations)
		}
	}
	return nil
}

// ForMetric returns the policy's tolerance for a metric, if it sets one.
func (p Policy) ForMetric(name string) (MetricTolerance, bool) {
	for _, m := range p.Metrics {
		if m.Metric == name {
			return m, true
		}
	}
	return MetricTolerance{}, false
}
