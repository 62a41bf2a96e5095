package verify

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Result is the outcome of Verify.
type Result struct {
	// Checks in protocol order, one per check.
	Checks []CheckResult
	// Findings of every check, in protocol order.
	Findings []Finding
	// Scope names exactly the host id, backend and device the result describes; "" when the
	// receipt could not be read far enough to establish it.
	Scope string
	// Verdict is Verified exactly when there is no finding.
	Verdict Verdict
	// Subjects are the files read, receipt first.
	Subjects []Subject
	// Weakened lists every relaxation that was on (e.g. "allow-unsigned-unsafe").
	Weakened []string
	// Warnings are what the verification could not cover and the user must see (for example a
	// bound artifact that is not present locally and so was not re-hashed).
	Warnings []string
	// Signer is the sha256 fingerprint (of the PKIX DER) of the pinned key that verified the
	// attestation; "" when none did.
	Signer string
	// Signatures lists every signature of every attestation file with the fingerprint of the
	// pinned key it verified with (if any); a valid signature is enough unless the policy says
	// otherwise, but none is hidden.
	Signatures []SignatureOutcome
	// ReceiptID is the receipt's id, when it could be read.
	ReceiptID string
	// Identity is the keyless signer (certificate issuer and subject) when Policy.Keyless
	// verified the bundle; nil with pinned keys.
	Identity *SignerIdentity
}

// Check returns the result of one check.
func (r *Result) Check(c Check) CheckResult {
	for _, cr := range r.Checks {
		if cr.Check == c {
			return cr
		}
	}
	return CheckResult{Check: c, Status: StatusSkipped}
}

// Option adjusts Verify and Compare.
type Option func(*config)

type config struct {
	relax    map[Relaxation]bool
	logger   *slog.Logger
	workers  int
	skipSign bool // Compare without keys: signatures are not part of a comparison
	// modelStore is a directory the model files a receipt binds relative to its --model
	// directory are re-hashed from (WithModelStore); "" for none.
	modelStore string
}

// WithModelStore re-hashes, from dir, the model files (model weights, configs, tokenizers, chat
// templates, other model files) that a receipt binds and that are not present in the evidence
// root: a model directory outside the repository is recorded relative to itself (`qualrun run
// --model DIR`), so an auditor who has the same files points dir at their copy. Files in dir
// are read as evidence files are (beneath dir, no symlinks, regular files only).
func WithModelStore(dir string) Option {
	return func(c *config) { c.modelStore = dir }
}

// AllowUnsignedUnsafe accepts a receipt that has no attestation: the signature check is skipped
// (an attestation that is present is still verified when keys are pinned). Unsafe: nothing then
// binds the evidence to a signer.
func AllowUnsignedUnsafe() Option {
	return func(c *config) { c.relax[RelaxUnsigned] = true }
}

// AllowUnpublishedUnsafe accepts a receipt whose commit was not origin/main, even when the policy
// requires publication. Unsafe: such a result may describe code nobody reviewed.
func AllowUnpublishedUnsafe() Option {
	return func(c *config) { c.relax[RelaxUnpublished] = true }
}

// AllowMissingInputsUnsafe verifies evidence whose workload, launch recipe or corpus file is not
// present: the checks those inputs decide are not carried out, and the result's warnings say which.
// Unsafe: the required cases, SLOs and comparison rules then come from nowhere.
func AllowMissingInputsUnsafe() Option {
	return func(c *config) { c.relax[RelaxMissingInputs] = true }
}

// WithRelaxations turns on the named relaxations (as the CLI's --allow-...-unsafe flags do).
func WithRelaxations(rs ...Relaxation) Option {
	return func(c *config) {
		for _, r := range rs {
			c.relax[r] = true
		}
	}
}

// WithLogger sets the logger for debug output; the default discards everything.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l != nil {
			c.logger = l
		}
	}
}

// WithConcurrency bounds the files read and hashed in parallel; n <= 0 means GOMAXPROCS.
func WithConcurrency(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.workers = n
		}
	}
}

func newConfig(opts []Option) *config {
	c := &config{relax: map[Relaxation]bool{}, logger: slog.New(slog.DiscardHandler), workers: runtime.GOMAXPROCS(0)}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// loadOptions are the options loading reads.
func (c *config) loadOptions() load.Options {
	return load.Options{Relax: c.relax, Workers: c.workers, SkipSign: c.skipSign, ModelStore: c.modelStore}
}

func (c *config) weakened() []string {
	var out []string
	for _, r := range Relaxations {
		if c.relax[r] {
			out = append(out, string(r))
		}
	}
	return out
}

// Errors Verify returns when verification cannot be carried out (never for a rejection).
var (
	// ErrNoTrustedKey: the signature check needs a pinned public key and the policy has none.
	ErrNoTrustedKey = errors.New("no trusted public key")
)

// Verify verifies one receipt and its evidence offline against policy. The error is non-nil only
// when verification could not be carried out (unreadable receipt, no trusted key, a relaxation the
// policy forbids, a cancelled context); a rejection is a Result with findings and Verdict
// Rejected.
func Verify(ctx context.Context, evidence Evidence, policy Policy, opts ...Option) (*Result, error) {
	cfg := newConfig(opts)
	res, _, err := verify(ctx, evidence, policy, cfg)
	return res, err
}

func verify(ctx context.Context, evidence Evidence, policy Policy, cfg *config) (*Result, *load.Snapshot, error) {
	if err := policy.Permits(cfg.relax); err != nil {
		return nil, nil, err
	}
	if len(policy.Keys) == 0 && policy.Keyless == nil && !cfg.relax[RelaxUnsigned] && !cfg.skipSign {
		return nil, nil, fmt.Errorf("%w: give a public key (--key) or allow unsigned evidence", ErrNoTrustedKey)
	}
	s, err := load.Load(ctx, evidence, policy, cfg.loadOptions())
	if err != nil {
		return nil, nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	res := &Result{Weakened: cfg.weakened(), Subjects: s.Subjects(), Warnings: s.Warnings, ReceiptID: s.ReceiptID()}
	for _, c := range check.Table {
		cr := c.Run(s)
		cr.Check = c.Name
		cr.Findings = capFindings(cr.Findings)
		switch {
		case len(cr.Findings) > 0:
			cr.Status = StatusFailed
		case cr.Status == "":
			cr.Status = StatusPassed
		}
		res.Checks = append(res.Checks, cr)
		res.Findings = append(res.Findings, cr.Findings...)
	}
	res.Scope = check.ScopeStatement(s)
	res.Signer = s.Signer
	res.Identity = s.Identity
	for _, a := range s.Attestations {
		res.Signatures = append(res.Signatures, a.Sigs...)
	}
	res.Warnings = append(res.Warnings, s.LateWarnings...)
	res.Verdict = Verified
	if len(res.Findings) > 0 {
		res.Verdict = Rejected
	}
	return res, s, nil
}

// capFindings keeps at most MaxFindingsPerCheck findings and says how many more there were.
func capFindings(fs []Finding) []Finding {
	if len(fs) <= limits.MaxFindingsPerCheck {
		return fs
	}
	more := len(fs) - limits.MaxFindingsPerCheck + 1
	out := slices.Clone(fs[:limits.MaxFindingsPerCheck-1])
	last := fs[limits.MaxFindingsPerCheck-1]
	return append(out, Finding{Check: last.Check, File: last.File, Pointer: "", Err: fmt.Errorf("%w: %d more findings of this check", reason.ErrFindingsTruncated, more)})
}

// Summary is a one-line description of a result for people, e.g. "rejected: hashes (2), signature (1)".
func (r *Result) Summary() string {
	if r.Verdict == Verified {
		return string(Verified)
	}
	var parts []string
	for _, c := range r.Checks {
		if len(c.Findings) > 0 {
			parts = append(parts, fmt.Sprintf("%s (%d)", c.Check, len(c.Findings)))
		}
	}
	return "rejected: " + strings.Join(parts, ", ")
}
