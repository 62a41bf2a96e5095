package verify

import (
	"context"
	"fmt"

	"github.com/qualkit/qualkit/verify/internal/compare"
)

// Mode is a comparison mode of a workload's comparison policy (Kiln's modes, and qualkit's
// self-contained correctness, which compares nothing).
type Mode = compare.Mode

// Comparison modes.
const (
	SameEnvironmentPerformance = compare.SameEnvironmentPerformance
	DeclaredABVariants         = compare.DeclaredABVariants
	CrossBackendCorrectness    = compare.CrossBackendCorrectness
	SelfContainedCorrectness   = compare.SelfContainedCorrectness
)

// Comparison is the outcome of Compare.
type Comparison = compare.Comparison

// EvidenceError is a finding of verifying one side ("baseline" or "candidate").
type EvidenceError = compare.EvidenceError

// Side identifies one compared receipt.
type Side = compare.Side

// Difference is one difference between the compared receipts, at a dot path (e.g.
// "environment.device.name", "results.chat-stream.r0.rows.c2-r0.prompt_set_sha256"), with the
// Reason that classifies it.
type Difference = compare.Difference

// Evaluation is one metric rule applied to one matched row or result.
type Evaluation = compare.Evaluation

// Compare compares a candidate receipt with a baseline under the comparison policy of their
// workload. Each side is verified first (with policy; signatures only when policy pins keys);
// then the receipts must be like for like under the mode (workload, variants, environment,
// source, bound inputs, rows, prompt sets, metric identities); then, only if they are and both
// sides verified cleanly, the workload's metric rules are evaluated with tolerance
// max(absolute, |baseline| x relative), tightened (never loosened) by policy.Metrics.
// The error is non-nil only when the comparison could not be carried out.
func Compare(ctx context.Context, baseline, candidate Evidence, policy Policy, opts ...Option) (*Comparison, error) {
	cfg := newConfig(opts)
	cfg.skipSign = len(policy.Keys) == 0 && policy.Keyless == nil
	bres, bs, err := verify(ctx, baseline, policy, cfg)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", baseline.Receipt, err)
	}
	cres, cs, err := verify(ctx, candidate, policy, cfg)
	if err != nil {
		return nil, fmt.Errorf("candidate %s: %w", candidate.Receipt, err)
	}
	b := compare.Input{Snapshot: bs, Verdict: bres.Verdict, Findings: bres.Findings, Warnings: bres.Warnings}
	c := compare.Input{Snapshot: cs, Verdict: cres.Verdict, Findings: cres.Findings, Warnings: cres.Warnings}
	return compare.Run(b, c, policy, cfg.skipSign)
}
