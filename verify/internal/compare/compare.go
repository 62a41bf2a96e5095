// Package compare applies a workload's comparison policy to two verified receipts (qualverify
// compare): the mode's like-for-like rules (workload, variants, environment, devices, source,
// bound inputs, rows, prompt sets, metric identities), then the metric rules, exact or
// statistical (stats.go). Package verify's Compare verifies each side and calls Run; it
// re-exports Comparison and its parts.
package compare

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Mode is a comparison mode of a workload's comparison policy (Kiln's modes, and qualkit's
// self-contained correctness, which compares nothing).
type Mode = contract.ComparisonPolicyMode

// Comparison modes.
const (
	SameEnvironmentPerformance = contract.ComparisonPolicyModeSameEnvironmentPerformance
	DeclaredABVariants         = contract.ComparisonPolicyModeDeclaredABVariants
	CrossBackendCorrectness    = contract.ComparisonPolicyModeCrossBackendCorrectness
	SelfContainedCorrectness   = contract.ComparisonPolicyModeSelfContainedCorrectness
)

// Comparison is the outcome of Compare.
type Comparison struct {
	// Mode is the mode applied: the workload's, or same_environment_performance when a declared
	// A/B workload compares a variant with itself.
	Mode Mode
	// Compatible is true when no difference was rejected: the rows are like for like.
	Compatible bool
	// OK is true when the comparison is compatible, both sides verified without finding, and
	// every metric rule passed or was skipped.
	OK                  bool
	Baseline, Candidate Side
	// Rejected are the differences that make the receipts incomparable; Allowed those the mode
	// permits (reported, never silent).
	Rejected, Allowed []Difference
	// EvidenceErrors are the findings of verifying each side; rules are evaluated only without them.
	EvidenceErrors []EvidenceError
	// Evaluations are the metric rules applied, per matched row or result.
	Evaluations []Evaluation
	Warnings    []string
}

// EvidenceError is a finding of verifying one side ("baseline" or "candidate").
type EvidenceError struct {
	Side contract.EvidenceErrorSide
	finding.Finding
}

// Side identifies one compared receipt.
type Side struct {
	Receipt   string `json:"receipt"`
	ReceiptID string `json:"receipt_id"`
	Digest    string `json:"digest"`
	Variant   string `json:"variant"`
	Backend   string `json:"backend"`
	HostID    string `json:"host_id"`
	Verdict   string `json:"verdict"`
	// Verification is the side's verification verdict.
	Verification finding.Verdict `json:"verification"`
}

// Difference is one difference between the compared receipts, at a dot path (e.g.
// "environment.device.name", "results.chat-stream.r0.rows.c2-r0.prompt_set_sha256"), with the
// Reason that classifies it.
type Difference struct {
	Path      string
	Err       error
	Baseline  any
	Candidate any
}

// Code returns the difference's reason code.
func (d Difference) Code() string { return reason.CodeOf(d.Err) }

// Evaluation is one metric rule applied to one matched row or result.
type Evaluation struct {
	// Scope is "results/<id>/r<repetition>/metrics/<metric>" or
	// "results/<id>/r<repetition>/rows/c<concurrency>-r<repetition>/metrics/<metric>".
	Scope             string                         `json:"scope"`
	Metric            string                         `json:"metric"`
	MetricClass       contract.EvaluationMetricClass `json:"metric_class"`
	Unit              string                         `json:"unit"`
	Aggregation       string                         `json:"aggregation"`
	Direction         string                         `json:"direction"`
	Formula           string                         `json:"formula"`
	Operator          string                         `json:"operator"`
	AbsoluteTolerance float64                        `json:"absolute_tolerance"`
	RelativeTolerance float64                        `json:"relative_tolerance"`
	Required          bool                           `json:"required"`
	Status            contract.EvaluationStatus      `json:"status"`
	// Code is the reason code of a failure: rule_failed, output_mismatch, formula_mismatch or
	// metric_mismatch (a required metric missing); "" otherwise.
	Code      string   `json:"code"`
	Reason    string   `json:"reason"`
	Baseline  *float64 `json:"baseline"`
	Candidate *float64 `json:"candidate"`
	// Tolerance is max(absolute, |baseline| x relative); Violation is |c-b| (equal), max(0, c-b)
	// (not_greater) or max(0, b-c) (not_less).
	Tolerance             *float64 `json:"tolerance"`
	Violation             *float64 `json:"violation"`
	AbsoluteChange        *float64 `json:"absolute_change"`
	RelativeChangePercent *float64 `json:"relative_change_percent"`
	// Significance is the test of a not_worse_significantly rule; nil for the exact operators.
	Significance *contract.ComparisonSignificance `json:"significance,omitempty"`
}

// Input is one side of a comparison as verifying it left it: what was loaded, the verdict,
// the findings and the warnings.
type Input struct {
	Snapshot *load.Snapshot
	Verdict  finding.Verdict
	Findings []finding.Finding
	Warnings []string
}

// Run compares two verified sides (Compare).
func Run(bv, cv Input, pol policy.Policy, skipSign bool) (*Comparison, error) {
	bs, cs := bv.Snapshot, cv.Snapshot
	bres, cres := bv, cv
	cmp := &Comparison{Baseline: sideOf(bs, bres.Verdict), Candidate: sideOf(cs, cres.Verdict)}
	for _, f := range bres.Findings {
		cmp.EvidenceErrors = append(cmp.EvidenceErrors, EvidenceError{contract.EvidenceErrorSideBaseline, f})
	}
	for _, f := range cres.Findings {
		cmp.EvidenceErrors = append(cmp.EvidenceErrors, EvidenceError{contract.EvidenceErrorSideCandidate, f})
	}
	if skipSign {
		cmp.Warnings = append(cmp.Warnings, "signatures were not checked (no public key)")
	}
	for _, w := range bres.Warnings {
		cmp.Warnings = append(cmp.Warnings, "baseline: "+w)
	}
	for _, w := range cres.Warnings {
		cmp.Warnings = append(cmp.Warnings, "candidate: "+w)
	}
	if bs.RC == nil || cs.RC == nil {
		cmp.reject("receipt", reason.ErrWorkloadMismatch, "a receipt is invalid: nothing can be compared", nil, nil)
		return cmp.finish(), nil
	}
	w := bs.Workload
	if w == nil {
		w = cs.Workload
	}
	if w == nil {
		return nil, fmt.Errorf("%w: the workload %s is not available on either side: the comparison policy is unknown", load.ErrEvidence, bs.RC.Workload.Path)
	}
	c := &Comparer{Cmp: cmp, B: bs, C: cs, w: w, policy: pol}
	c.compatibility()
	if cmp.Mode != "" && len(cmp.Rejected) == 0 && len(cmp.EvidenceErrors) == 0 {
		c.rules()
	}
	return cmp.finish(), nil
}

// Bounds of the comparison report contract (qualkit.comparison.v1) on what Report composes.
const (
	maxComparisonText      = 8192    // a message, a reason, a warning, a dot path, a pointer
	maxComparisonPath      = 4096    // a receipt's path, a finding's file
	maxComparisonValue     = 65536   // a string value found in a receipt
	maxComparisonEntries   = 100000  // differences, evidence errors, warnings, a list value
	maxComparisonRuleEvals = 1000000 // evaluations
)

// Report fills the comparison report contract (qualkit.comparison.v1) from a comparison. Text is
// kept within the contract's bounds (a longer one is cut, marking the cut; a pointer is cut at a
// token); a list longer than its bound keeps its first entries and a warning says how many were
// left out.
func (c *Comparison) Report() contract.ComparisonDoc {
	doc := contract.ComparisonDoc{Schema: "qualkit." + contract.Comparison, OK: c.OK, Compatible: c.Compatible,
		Baseline: c.Baseline.report(), Candidate: c.Candidate.report(),
		RejectedDifferences: []contract.ComparisonDifference{}, AllowedDifferences: []contract.ComparisonDifference{},
		EvidenceErrors: []contract.ComparisonEvidenceError{}, Evaluations: []contract.ComparisonEvaluation{}}
	switch c.Mode {
	case SameEnvironmentPerformance, DeclaredABVariants, CrossBackendCorrectness:
		m := contract.ComparisonMode(c.Mode)
		doc.Mode = &m
	}
	warnings := slices.Clone(c.Warnings)
	more := func(n int, what string) {
		if n > 0 {
			warnings = append(warnings, fmt.Sprintf("%d more %s are not listed", n, what))
		}
	}
	differences := func(ds []Difference, what string) []contract.ComparisonDifference {
		out := []contract.ComparisonDifference{}
		for i, d := range ds {
			if i == maxComparisonEntries {
				more(len(ds)-i, what)
				break
			}
			out = append(out, contract.ComparisonDifference{Path: finding.ClipRunes(finding.NonEmpty(d.Path, "-"), maxComparisonText), Code: finding.NonEmpty(d.Code(), "difference"),
				Message: finding.ClipRunes(finding.NonEmpty(d.Err.Error(), "-"), maxComparisonText), Baseline: boundedValue(d.Baseline), Candidate: boundedValue(d.Candidate)})
		}
		return out
	}
	doc.RejectedDifferences = differences(c.Rejected, "rejected differences")
	doc.AllowedDifferences = differences(c.Allowed, "allowed differences")
	for i, e := range c.EvidenceErrors {
		if i == maxComparisonEntries {
			more(len(c.EvidenceErrors)-i, "evidence errors")
			break
		}
		doc.EvidenceErrors = append(doc.EvidenceErrors, contract.ComparisonEvidenceError{Side: e.Side, Check: contract.CheckName(string(e.Check)),
			File: finding.ClipRunes(finding.NonEmpty(e.File, "-"), maxComparisonPath), Pointer: pointerWithin(e.Pointer, maxComparisonText),
			Code: finding.NonEmpty(e.Code(), "finding"), Message: finding.ClipRunes(finding.NonEmpty(e.Err.Error(), "-"), maxComparisonText)})
	}
	for i, e := range c.Evaluations {
		if i == maxComparisonRuleEvals {
			more(len(c.Evaluations)-i, "rule evaluations")
			break
		}
		doc.Evaluations = append(doc.Evaluations, contract.ComparisonEvaluation{Scope: e.Scope, Metric: e.Metric, MetricClass: e.MetricClass,
			Unit: optional(e.Unit), Aggregation: optional(contract.Aggregation(e.Aggregation)), Direction: optional(contract.Direction(e.Direction)), Formula: optional(e.Formula),
			Operator: contract.EvaluationOperator(e.Operator), AbsoluteTolerance: e.AbsoluteTolerance, RelativeTolerance: e.RelativeTolerance, Required: e.Required,
			Status: e.Status, Code: optional(e.Code), Reason: finding.ClipRunes(finding.NonEmpty(e.Reason, "-"), maxComparisonText),
			Baseline: e.Baseline, Candidate: e.Candidate, Tolerance: e.Tolerance, Violation: e.Violation,
			AbsoluteChange: e.AbsoluteChange, RelativeChangePercent: e.RelativeChangePercent, Significance: e.Significance})
	}
	doc.Warnings = []string{}
	for i, w := range warnings {
		if i == maxComparisonEntries-1 && len(warnings) > maxComparisonEntries {
			doc.Warnings = append(doc.Warnings, fmt.Sprintf("… and %d more warnings", len(warnings)-i))
			break
		}
		doc.Warnings = append(doc.Warnings, finding.ClipRunes(finding.NonEmpty(w, "-"), maxComparisonText))
	}
	return doc
}

func (s Side) report() contract.ComparisonSide {
	return contract.ComparisonSide{Receipt: finding.ClipRunes(finding.NonEmpty(s.Receipt, "-"), maxComparisonPath), ReceiptID: optional(s.ReceiptID),
		Digest: optional(s.Digest), Variant: optional(s.Variant), Backend: optional(contract.Backend(s.Backend)), HostID: optional(s.HostID),
		Verdict: optional(contract.SideVerdict(s.Verdict)), Verification: contract.SideVerification(string(s.Verification))}
}

// optional is nil for "" (none), else a pointer to s.
func optional[S ~string](s S) *S {
	if s == "" {
		return nil
	}
	return &s
}

// pointerWithin bounds a JSON pointer to n runes by cutting it at a token boundary: the result
// points at an ancestor of the original location.
func pointerWithin(p string, n int) string {
	for len([]rune(p)) > n {
		i := strings.LastIndexByte(p, '/')
		if i < 0 {
			return ""
		}
		p = p[:i]
	}
	return p
}

// boundedValue keeps a value found in a receipt within the contract's bounds: strings cut at
// maxComparisonValue runes (list entries at maxComparisonText), lists at maxComparisonEntries.
func boundedValue(v any) any {
	switch x := v.(type) {
	case string:
		return finding.ClipRunes(x, maxComparisonValue)
	case []string:
		if x == nil {
			return nil
		}
		out := make([]string, 0, min(len(x), maxComparisonEntries))
		for i, s := range x {
			if i == maxComparisonEntries {
				break
			}
			out = append(out, finding.ClipRunes(s, maxComparisonText))
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = boundedValue(e)
		}
		return out
	}
	return v
}

func sideOf(s *load.Snapshot, verdict finding.Verdict) Side {
	side := Side{Receipt: s.Evidence.Receipt, Verification: verdict}
	if s.Receipt != nil {
		side.Digest = s.Receipt.Digest
	}
	if rc := s.RC; rc != nil {
		side.ReceiptID, side.Variant, side.Backend = rc.ReceiptID, rc.Workload.Variant, string(rc.Qualification.Backend)
		side.HostID, side.Verdict = rc.Environment.HostID, string(rc.Qualification.Verdict)
	}
	return side
}

func (c *Comparison) reject(path string, r *reason.Reason, msg string, b, cand any) {
	c.Rejected = append(c.Rejected, Difference{Path: path, Err: &finding.Error{Reason: r, Msg: r.Error() + ": " + msg}, Baseline: b, Candidate: cand})
}

func (c *Comparison) allow(path string, r *reason.Reason, msg string, b, cand any) {
	c.Allowed = append(c.Allowed, Difference{Path: path, Err: &finding.Error{Reason: r, Msg: r.Error() + " (allowed): " + msg}, Baseline: b, Candidate: cand})
}

func (c *Comparison) finish() *Comparison {
	c.Compatible = len(c.Rejected) == 0 && c.Mode != ""
	c.OK = c.Compatible && len(c.EvidenceErrors) == 0
	for _, e := range c.Evaluations {
		if e.Status == contract.EvaluationStatusFailed {
			c.OK = false
		}
	}
	return c
}

type Comparer struct {
	Cmp    *Comparison
	B, C   *load.Snapshot
	w      *contract.WorkloadDoc
	policy policy.Policy
}

// compatibility decides whether the receipts are like for like under the mode.
func (x *Comparer) compatibility() {
	cmp, b, c := x.Cmp, x.B.RC, x.C.RC
	if x.B.Receipt.Digest == x.C.Receipt.Digest || b.ReceiptID == c.ReceiptID {
		cmp.reject("receipt_id", reason.ErrWorkloadMismatch, "baseline and candidate are the same receipt", b.ReceiptID, c.ReceiptID)
	}
	// The workload binding.
	for _, d := range []struct {
		path string
		b, c any
	}{
		{"workload.id", b.Workload.ID, c.Workload.ID},
		{"workload.digest", b.Workload.Digest, c.Workload.Digest},
		{"workload.seed", b.Workload.Seed, c.Workload.Seed},
		{"workload.variables", b.Workload.Variables, c.Workload.Variables},
		{"qualification.kind", b.Qualification.Kind, c.Qualification.Kind},
	} {
		if !finding.CanonicalEqual(d.b, d.c) {
			cmp.reject(d.path, reason.ErrWorkloadMismatch, "the workload binding differs", d.b, d.c)
		}
	}
	if b.Source.TreeHashFormat != c.Source.TreeHashFormat {
		cmp.reject("source.tree_hash_format", reason.ErrSourceMismatch, "tree hash formats differ", b.Source.TreeHashFormat, c.Source.TreeHashFormat)
	} else if b.Source.TreeHash != c.Source.TreeHash {
		// qualkit's tree hash covers the whole repository (receipts too), so any commit between two
		// campaigns changes it; like for like is decided by the bound inputs below.
		cmp.allow("source.tree_hash", reason.ErrSourceMismatch, "the campaigns ran from different source trees (commits "+b.Source.Commit+", "+c.Source.Commit+"); their bound inputs are compared instead", b.Source.TreeHash, c.Source.TreeHash)
	}
	cp := x.w.ComparisonPolicy
	if cp == nil {
		cmp.reject("workload.comparison_policy", reason.ErrModeRefused, "the workload declares no comparison policy", nil, nil)
		return
	}
	mode := cp.Mode
	switch {
	case mode == SelfContainedCorrectness:
		cmp.reject("comparison_policy.mode", reason.ErrModeRefused, "self_contained_correctness results are verified alone, never compared", nil, nil)
		return
	case mode == DeclaredABVariants && b.Workload.Variant == c.Workload.Variant:
		mode = SameEnvironmentPerformance
		cmp.Warnings = append(cmp.Warnings, "both receipts ran variant "+b.Workload.Variant+": compared as same_environment_performance")
	}
	cmp.Mode = mode
	envB, _ := x.B.RCTree["environment"].(map[string]any) // not a contract value: the receipt's member name
	envC, _ := x.C.RCTree["environment"].(map[string]any) // not a contract value: the receipt's member name
	envDiff := diffLeaves(withoutDevices(envB), withoutDevices(envC), "")
	switch mode {
	case SameEnvironmentPerformance:
		if b.Workload.Variant != c.Workload.Variant {
			cmp.reject("workload.variant", reason.ErrModeRefused, "same_environment_performance compares one variant with itself", b.Workload.Variant, c.Workload.Variant)
		}
		x.environment(envDiff, nil)
		x.Devices(nil)
	case DeclaredABVariants:
		var pair *contract.VariantPair
		for i := range cp.VariantPairs {
			if cp.VariantPairs[i].BaselineVariantID == b.Workload.Variant && cp.VariantPairs[i].CandidateVariantID == c.Workload.Variant {
				pair = &cp.VariantPairs[i]
			}
		}
		if pair == nil {
			cmp.reject("workload.variant", reason.ErrModeRefused, "the pair (baseline "+b.Workload.Variant+", candidate "+c.Workload.Variant+") is not declared (direction matters)", b.Workload.Variant, c.Workload.Variant)
			break
		}
		x.environment(envDiff, nil)
		x.Devices(nil)
		x.configs(pair.AllowedEffectiveConfigDifferences)
	case CrossBackendCorrectness:
		var pair *contract.BackendPair
		for i, bp := range cp.BackendPairs {
			ab := bp.BackendA == b.Qualification.Backend && bp.VariantAID == b.Workload.Variant && bp.BackendB == c.Qualification.Backend && bp.VariantBID == c.Workload.Variant
			ba := bp.BackendB == b.Qualification.Backend && bp.VariantBID == b.Workload.Variant && bp.BackendA == c.Qualification.Backend && bp.VariantAID == c.Workload.Variant
			if ab || ba {
				pair = &cp.BackendPairs[i]
			}
		}
		if pair == nil {
			cmp.reject("qualification.backend", reason.ErrModeRefused, fmt.Sprintf("(%s %s, %s %s) is not a declared backend pair", b.Qualification.Backend, b.Workload.Variant, c.Qualification.Backend, c.Workload.Variant), b.Qualification.Backend, c.Qualification.Backend)
			break
		}
		x.environment(envDiff, pair.AllowedEnvironmentDifferences)
		x.Devices(pair.AllowedEnvironmentDifferences)
		for _, p := range pair.AllowedEnvironmentDifferences {
			if p == "devices" {
				continue // compared by x.devices
			}
			vb, okb := lookupDot(envB, p)
			vc, okc := lookupDot(envC, p)
			switch {
			case !okb && !okc:
				cmp.reject("environment."+p, reason.ErrEnvironmentMismatch, "a declared environment difference names a path absent on both sides", nil, nil)
			case !isScalar(vb) || !isScalar(vc):
				cmp.reject("environment."+p, reason.ErrEnvironmentMismatch, "a declared environment difference names a non-scalar path", vb, vc)
			case okb && okc && finding.CanonicalEqual(vb, vc):
				cmp.reject("environment."+p, reason.ErrEnvironmentMismatch, "a declared environment difference is equal on both sides", vb, vc)
			}
		}
	default:
		cmp.reject("comparison_policy.mode", reason.ErrModeRefused, "unknown mode "+string(mode), nil, nil)
		return
	}
	x.Artifacts(mode)
	x.rows(mode)
}

// environment rejects every environment difference not in allowed (dot paths below environment).
func (x *Comparer) environment(diff []leafDiff, allowed []string) {
	for _, d := range diff {
		if slices.Contains(allowed, d.path) {
			x.Cmp.allow("environment."+d.path, reason.ErrEnvironmentMismatch, "declared by the backend pair", d.b, d.c)
			continue
		}
		x.Cmp.reject("environment."+d.path, reason.ErrEnvironmentMismatch, "the environment must be identical in this mode", d.b, d.c)
	}
}

// configs compares the two variants' effective configurations: exactly the declared paths differ.
func (x *Comparer) configs(allowed []string) {
	vb, vc := variantOf(x.w, x.B.RC.Workload.Variant), variantOf(x.w, x.C.RC.Workload.Variant)
	if vb == nil || vc == nil {
		x.Cmp.reject("workload.variant", reason.ErrWorkloadMismatch, "a variant is not declared by the workload", x.B.RC.Workload.Variant, x.C.RC.Workload.Variant)
		return
	}
	var cb, cc map[string]any
	_ = roundTrip(vb.EffectiveConfig, &cb)
	_ = roundTrip(vc.EffectiveConfig, &cc)
	diff := diffLeaves(cb, cc, "")
	seen := map[string]bool{}
	for _, d := range diff {
		seen[d.path] = true
		if slices.Contains(allowed, d.path) {
			x.Cmp.allow("effective_config."+d.path, reason.ErrConfigMismatch, "declared by the variant pair", d.b, d.c)
		} else {
			x.Cmp.reject("effective_config."+d.path, reason.ErrConfigMismatch, "not among the pair's allowed differences", d.b, d.c)
		}
	}
	for _, p := range allowed {
		if !seen[p] {
			x.Cmp.reject("effective_config."+p, reason.ErrConfigMismatch, "a declared difference is not a difference (absent, non-scalar or equal)", nil, nil)
		}
	}
}

func variantOf(w *contract.WorkloadDoc, id string) *contract.Variant {
	for i := range w.Variants {
		if w.Variants[i].ID == id {
			return &w.Variants[i]
		}
	}
	return nil
}

// InputKinds are the bound inputs that decide what ran (every kind the contract does not call
// evidence); per mode some may differ. The first are listed in the order compare has always
// reported them; every other bound-input kind of the contract follows in contract order (the
// driver's executable, script, request and model, which compare once left out).
var InputKinds = func() []contract.ArtifactKind {
	out := []contract.ArtifactKind{contract.ArtifactKindModelWeight, contract.ArtifactKindModelConfig, contract.ArtifactKindTokenizer,
		contract.ArtifactKindChatTemplate, contract.ArtifactKindModelFile, contract.ArtifactKindCorpus, contract.ArtifactKindWorkload,
		contract.ArtifactKindRuntimeManifest, contract.ArtifactKindLaunchRecipe, contract.ArtifactKindServerBinary, contract.ArtifactKindConfigFile}
	for _, k := range contract.ArtifactKindValues() {
		if !contract.Kinds[k].Evidence && !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}()

// artifacts compares the bound inputs (per-run evidence excluded) kind by kind.
func (x *Comparer) Artifacts(mode Mode) {
	group := func(s *load.Snapshot) map[contract.ArtifactKind][]string {
		out := map[contract.ArtifactKind][]string{}
		for _, a := range s.RC.Artifacts {
			if contract.Kinds[a.Kind].Evidence || strings.HasPrefix(a.Path, s.RunDir()) {
				continue
			}
			out[a.Kind] = append(out[a.Kind], a.Path+"@"+a.Digest)
		}
		for k := range out {
			sort.Strings(out[k])
		}
		return out
	}
	gb, gc := group(x.B), group(x.C)
	for _, k := range InputKinds {
		if slices.Equal(gb[k], gc[k]) {
			continue
		}
		mayDiffer := false
		switch mode {
		case DeclaredABVariants:
			mayDiffer = k == contract.ArtifactKindLaunchRecipe || k == contract.ArtifactKindServerBinary || k == contract.ArtifactKindConfigFile
		case CrossBackendCorrectness:
			mayDiffer = k == contract.ArtifactKindLaunchRecipe || k == contract.ArtifactKindServerBinary || k == contract.ArtifactKindConfigFile || k == contract.ArtifactKindRuntimeManifest
		}
		if mayDiffer {
			x.Cmp.allow("artifacts."+string(k), reason.ErrArtifactMismatch, "the variants bind different "+string(k)+" files", gb[k], gc[k])
		} else {
			x.Cmp.reject("artifacts."+string(k), reason.ErrArtifactMismatch, "the bound "+string(k)+" files differ", gb[k], gc[k])
		}
	}
}

// matched is one result present on both sides.
type matched struct {
	key          string // results/<id>/r<rep>
	id           string
	rb, rc       contract.Result
	crb, crc     *contract.CaseResultDoc
	pathB, pathC string
}

func (x *Comparer) matchResults() []matched {
	type key struct {
		id  string
		rep int64
	}
	idx := map[key]int{}
	for i, r := range x.C.RC.Results {
		idx[key{r.ID, r.Repetition}] = i
	}
	var out []matched
	seen := map[key]bool{}
	for _, r := range x.B.RC.Results {
		k := key{r.ID, r.Repetition}
		seen[k] = true
		j, ok := idx[k]
		name := fmt.Sprintf("results/%s/r%d", r.ID, r.Repetition)
		if !ok {
			x.Cmp.reject(dotted(name), reason.ErrUnlikeRows, "the candidate has no such result", r.Status, nil)
			continue
		}
		m := matched{key: name, id: r.ID, rb: r, rc: x.C.RC.Results[j]}
		if r.CaseResult != nil {
			m.crb, m.pathB = x.B.CaseResults[r.CaseResult.Path], r.CaseResult.Path
		}
		if m.rc.CaseResult != nil {
			m.crc, m.pathC = x.C.CaseResults[m.rc.CaseResult.Path], m.rc.CaseResult.Path
		}
		out = append(out, m)
	}
	for _, r := range x.C.RC.Results {
		if !seen[key{r.ID, r.Repetition}] {
			x.Cmp.reject(dotted(fmt.Sprintf("results/%s/r%d", r.ID, r.Repetition)), reason.ErrUnlikeRows, "the baseline has no such result", nil, r.Status)
		}
	}
	return out
}

func dotted(scope string) string { return strings.ReplaceAll(scope, "/", ".") }

type rowKey struct{ c, r int64 }

func rowName(k rowKey) string { return fmt.Sprintf("c%d-r%d", k.c, k.r) }

// rows matches rows and metrics: same shape, same prompt set, one identity per metric name.
func (x *Comparer) rows(mode Mode) {
	for _, m := range x.matchResults() {
		identities(x.Cmp, m.key, m.rb.Metrics, m.rc.Metrics)
		if m.crb == nil || m.crc == nil {
			continue
		}
		rb, rc := rowsByKey(m.crb), rowsByKey(m.crc)
		for _, k := range sortedRowKeys(rb, rc) {
			scope := m.key + "/rows/" + rowName(k)
			b, okb := rb[k]
			c, okc := rc[k]
			switch {
			case !okb:
				x.Cmp.reject(dotted(scope), reason.ErrUnlikeRows, "the baseline has no such row", nil, c.Requests)
				continue
			case !okc:
				x.Cmp.reject(dotted(scope), reason.ErrUnlikeRows, "the candidate has no such row", b.Requests, nil)
				continue
			}
			if b.PromptSetSHA256 != c.PromptSetSHA256 {
				x.Cmp.reject(dotted(scope+"/prompt_set_sha256"), reason.ErrCorpusMismatch, "the rows asked different prompts", b.PromptSetSHA256, c.PromptSetSHA256)
			}
			if b.Loop != c.Loop || !rowcheck.EqualFloatPtr(b.Fidelity.OfferedRate, c.Fidelity.OfferedRate) {
				x.Cmp.reject(dotted(scope+"/loop"), reason.ErrUnlikeRows, "the rows ran different schedules", fmt.Sprint(b.Loop, " ", fptr(b.Fidelity.OfferedRate)), fmt.Sprint(c.Loop, " ", fptr(c.Fidelity.OfferedRate)))
			}
			if b.Requests != c.Requests {
				x.Cmp.reject(dotted(scope+"/requests"), reason.ErrUnlikeRows, "the rows sent different numbers of requests", b.Requests, c.Requests)
			}
			cacheRegimes(x.Cmp, scope, b, c)
			identities(x.Cmp, scope, b.Metrics, c.Metrics)
		}
	}
}

// cacheRegimes rejects a row pair whose declared prefix-cache regimes differ (a row without a
// cache object declared natural), or whose observed regimes differ where both sides reported
// (hits against no_hits): a cold row's TTFT is not comparable with a warm one's.
func cacheRegimes(cmp *Comparison, scope string, b, c contract.Row) {
	db, ob := rowRegime(b)
	dc, oc := rowRegime(c)
	switch {
	case db != dc:
		cmp.reject(dotted(scope+"/cache/declared"), reason.ErrCacheRegimeMismatch, "the rows declare different prefix-cache regimes", string(db), string(dc))
	case ob != oc && ob != contract.RowCacheObservedUnreported && oc != contract.RowCacheObservedUnreported:
		cmp.reject(dotted(scope+"/cache/observed"), reason.ErrCacheRegimeMismatch, "the rows' servers reported different prefix-cache regimes", string(ob), string(oc))
	}
}

// rowRegime is a row's declared and observed cache regime (natural and unreported without a
// cache object).
func rowRegime(r contract.Row) (contract.CacheRegime, contract.RowCacheObserved) {
	if r.Cache == nil {
		return contract.CacheRegimeNatural, contract.RowCacheObservedUnreported
	}
	return r.Cache.Declared, r.Cache.Observed
}

func fptr(p *float64) string {
	if p == nil {
		return string(contract.RowLoopClosed)
	}
	return record.FmtFloat(*p)
}

// identities rejects every metric name that carries different formula ids (or units,
// aggregations, directions) on the two sides: mixed formula ids are never compared.
func identities(cmp *Comparison, scope string, b, c []contract.Metric) {
	ib := map[string]rowcheck.Identity{}
	for _, m := range b {
		if !m.Diagnostic {
			ib[m.Name] = rowcheck.IdentityOf(m)
		}
	}
	for _, m := range c {
		if m.Diagnostic {
			continue
		}
		if want, ok := ib[m.Name]; ok && want != rowcheck.IdentityOf(m) {
			cmp.reject(dotted(scope+"/metrics/"+m.Name), reason.ErrFormulaMismatch, fmt.Sprintf("%s carries %s on one side and %s on the other%s", m.Name, want, rowcheck.IdentityOf(m), rowcheck.RateWarning(want, rowcheck.IdentityOf(m))), want.Formula, m.Formula)
		}
	}
}

func rowsByKey(cr *contract.CaseResultDoc) map[rowKey]contract.Row {
	out := map[rowKey]contract.Row{}
	for _, r := range cr.Rows {
		out[rowKey{r.Concurrency, r.Repetition}] = r
	}
	return out
}

func sortedRowKeys(a, b map[rowKey]contract.Row) []rowKey {
	var out []rowKey
	seen := map[rowKey]bool{}
	for _, m := range []map[rowKey]contract.Row{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].c != out[j].c {
			return out[i].c < out[j].c
		}
		return out[i].r < out[j].r
	})
	return out
}

// rules evaluates the workload's metric rules on every matched row or result.
func (x *Comparer) rules() {
	cp := x.w.ComparisonPolicy
	for _, m := range x.matchResults() {
		for _, rule := range cp.MetricRules {
			if rule.ResultID != m.id {
				continue
			}
			if x.Cmp.Mode == CrossBackendCorrectness && rule.MetricClass != contract.MetricRuleMetricClassCorrectness {
				continue
			}
			// A performance rule is refused on a degraded row (it measured the client, not the
			// server), and on a result any of whose rows is degraded, unless the case declares
			// measures_saturation: true.
			perf := rule.MetricClass == contract.MetricRuleMetricClassPerformance && !check.MeasuresSaturation(x.B, m.id)
			if rule.Scope == contract.MetricRuleScopeResult {
				scope := m.key + "/metrics/" + rule.Metric
				if d := degradedIn(m); perf && d != "" {
					x.refuseDegraded(rule, scope, d)
					continue
				}
				x.evaluate(rule, scope, m.rb.Metrics, m.rc.Metrics, nil)
				continue
			}
			if m.crb == nil || m.crc == nil {
				continue
			}
			rb, rc := rowsByKey(m.crb), rowsByKey(m.crc)
			for _, k := range sortedRowKeys(rb, rc) {
				scope := m.key + "/rows/" + rowName(k) + "/metrics/" + rule.Metric
				if d := degradedRow(m, k, rb[k], rc[k]); perf && d != "" {
					x.refuseDegraded(rule, scope, d)
					continue
				}
				x.evaluate(rule, scope, rb[k].Metrics, rc[k].Metrics, &rowPair{m, rb[k], rc[k]})
			}
		}
		if x.Cmp.Mode == CrossBackendCorrectness && m.crb != nil && m.crc != nil {
			rb, rc := rowsByKey(m.crb), rowsByKey(m.crc)
			for _, k := range sortedRowKeys(rb, rc) {
				x.outputs(m.key+"/rows/"+rowName(k), rb[k], rc[k])
			}
		}
	}
}

// degradedRow names the side(s) on which a matched row is degraded; "" when neither is.
func degradedRow(m matched, k rowKey, b, c contract.Row) string {
	var sides []string
	if b.Fidelity.Degraded {
		sides = append(sides, "the baseline's")
	}
	if c.Fidelity.Degraded {
		sides = append(sides, "the candidate's")
	}
	if len(sides) == 0 {
		return ""
	}
	return fmt.Sprintf("row %s of result %s is degraded in %s evidence", rowName(k), m.id, strings.Join(sides, " and "))
}

// degradedIn names the degraded rows of a matched result, on either side; "" when there are none.
func degradedIn(m matched) string {
	var rows []string
	for side, cr := range map[string]*contract.CaseResultDoc{"baseline": m.crb, "candidate": m.crc} {
		if cr == nil {
			continue
		}
		for _, r := range cr.Rows {
			if r.Fidelity.Degraded {
				rows = append(rows, fmt.Sprintf("%s row %s", side, rowName(rowKey{r.Concurrency, r.Repetition})))
			}
		}
	}
	if len(rows) == 0 {
		return ""
	}
	sort.Strings(rows)
	return fmt.Sprintf("result %s has degraded rows (%s)", m.id, strings.Join(rows, ", "))
}

// refuseDegraded records a performance rule that is not evaluated because of a degraded row.
func (x *Comparer) refuseDegraded(rule contract.MetricRule, scope, what string) {
	e := x.evaluation(rule, scope)
	e.Status, e.Code = contract.EvaluationStatusFailed, reason.ErrDegradedRow.Code()
	e.Reason = fmt.Sprintf("%v: %s: a degraded row measured the client's schedule, not the server, and the case does not declare measures_saturation: true", reason.ErrDegradedRow, what)
	x.Cmp.Evaluations = append(x.Cmp.Evaluations, e)
}

// outputs is the implicit correctness rule of a cross-backend comparison: equal output sets.
func (x *Comparer) outputs(scope string, b, c contract.Row) {
	e := Evaluation{Scope: scope + "/output_set_sha256", Metric: "output_set_sha256", MetricClass: contract.EvaluationMetricClassCorrectness, Operator: string(contract.EvaluationOperatorEqual), Required: true}
	switch {
	case b.OutputSetSHA256 == nil || c.OutputSetSHA256 == nil:
		e.Status, e.Code, e.Reason = contract.EvaluationStatusFailed, reason.ErrOutputMismatch.Code(), "a row has no output set (a request failed)"
	case *b.OutputSetSHA256 != *c.OutputSetSHA256:
		e.Status, e.Code, e.Reason = contract.EvaluationStatusFailed, reason.ErrOutputMismatch.Code(), fmt.Sprintf("%v: %s vs %s", reason.ErrOutputMismatch, *b.OutputSetSHA256, *c.OutputSetSHA256)
	default:
		e.Status, e.Reason = contract.EvaluationStatusPassed, "identical outputs"
	}
	x.Cmp.Evaluations = append(x.Cmp.Evaluations, e)
}

// evaluation is a rule's evaluation at scope before it is decided: its tolerances after the policy.
func (x *Comparer) evaluation(rule contract.MetricRule, scope string) Evaluation {
	e := Evaluation{Scope: scope, Metric: rule.Metric, MetricClass: contract.EvaluationMetricClass(rule.MetricClass), Unit: rule.Unit, Aggregation: string(rule.Aggregation),
		Direction: string(rule.Direction), Formula: rule.Formula, Operator: string(rule.Operator), Required: rule.Required,
		AbsoluteTolerance: rule.AbsoluteTolerance, RelativeTolerance: rule.RelativeTolerance}
	if pt, ok := x.policy.ForMetric(rule.Metric); ok {
		e.AbsoluteTolerance = math.Min(e.AbsoluteTolerance, pt.AbsoluteTolerance)
		e.RelativeTolerance = math.Min(e.RelativeTolerance, pt.RelativeTolerance)
	}
	return e
}

// rowPair is a matched row on both sides: the per-request samples of a statistical rule.
type rowPair struct {
	m    matched
	b, c contract.Row
}

func (x *Comparer) evaluate(rule contract.MetricRule, scope string, b, c []contract.Metric, rows *rowPair) {
	e := x.evaluation(rule, scope)
	find := func(ms []contract.Metric) (contract.Metric, bool) {
		for _, m := range ms {
			if m.Name == rule.Metric && !m.Diagnostic {
				return m, true
			}
		}
		return contract.Metric{}, false
	}
	mb, okb := find(b)
	mc, okc := find(c)
	if !okb || !okc {
		e.Status, e.Reason = contract.EvaluationStatusSkipped, "the metric is missing on one side"
		if rule.Required {
			e.Status, e.Code, e.Reason = contract.EvaluationStatusFailed, reason.ErrMetricMismatch.Code(), "a required metric is missing on one side"
		}
		x.Cmp.Evaluations = append(x.Cmp.Evaluations, e)
		return
	}
	want := rowcheck.Identity{Unit: rule.Unit, Aggregation: rule.Aggregation, Direction: rule.Direction, Formula: rule.Formula}
	if rowcheck.IdentityOf(mb) != want || rowcheck.IdentityOf(mc) != want {
		e.Status, e.Code = contract.EvaluationStatusFailed, reason.ErrFormulaMismatch.Code()
		e.Reason = fmt.Sprintf("%v: the rule compares %s; the receipts carry %s and %s%s", reason.ErrFormulaMismatch, want, rowcheck.IdentityOf(mb), rowcheck.IdentityOf(mc), rowcheck.RateWarning(want, rowcheck.IdentityOf(mc)))
		x.Cmp.Evaluations = append(x.Cmp.Evaluations, e)
		return
	}
	bv, cv := mb.Value, mc.Value
	e.Baseline, e.Candidate = &bv, &cv
	if rule.Operator == contract.MetricRuleOperatorNotWorseSignificantly {
		x.significance(&e, rule, rows)
		x.Cmp.Evaluations = append(x.Cmp.Evaluations, e)
		return
	}
	pass, violation, tolerance := RuleHolds(rule.Operator, bv, cv, e.AbsoluteTolerance, e.RelativeTolerance)
	e.Violation, e.Tolerance = &violation, &tolerance
	change := cv - bv
	e.AbsoluteChange = &change
	if bv != 0 {
		pct := change / math.Abs(bv) * 100
		e.RelativeChangePercent = &pct
	}
	sv, st := record.FmtPair(violation, tolerance)
	if pass {
		e.Status, e.Reason = contract.EvaluationStatusPassed, fmt.Sprintf("violation %s <= tolerance %s", sv, st)
	} else {
		e.Status, e.Code = contract.EvaluationStatusFailed, reason.ErrRuleFailed.Code()
		e.Reason = fmt.Sprintf("%v: violation %s > tolerance %s", reason.ErrRuleFailed, sv, st)
	}
	x.Cmp.Evaluations = append(x.Cmp.Evaluations, e)
}

// RuleHolds evaluates a metric rule exactly (big floats, no rounding): tolerance =
// max(absolute, |b| x relative); violation = |c - b| (equal), max(0, c - b) (not_greater),
// max(0, b - c) (not_less); the rule holds when violation <= tolerance.
func RuleHolds(op contract.MetricRuleOperator, b, c, absolute, relative float64) (bool, float64, float64) {
	const prec = 2200 // enough for the exact difference of any two float64 values
	bf := new(big.Float).SetPrec(prec).SetFloat64(b)
	cf := new(big.Float).SetPrec(prec).SetFloat64(c)
	diff := new(big.Float).SetPrec(prec).Sub(cf, bf)
	var v *big.Float
	switch op {
	case contract.MetricRuleOperatorEqual:
		v = new(big.Float).SetPrec(prec).Abs(diff)
	case contract.MetricRuleOperatorNotGreater:
		v = diff
	case contract.MetricRuleOperatorNotLess:
		v = new(big.Float).SetPrec(prec).Neg(diff)
	default:
		return false, math.NaN(), math.NaN()
	}
	if v.Sign() < 0 {
		v = new(big.Float).SetPrec(prec)
	}
	rel := new(big.Float).SetPrec(prec).Mul(new(big.Float).SetPrec(prec).Abs(bf), new(big.Float).SetPrec(prec).SetFloat64(relative))
	tol := new(big.Float).SetPrec(prec).SetFloat64(absolute)
	if rel.Cmp(tol) > 0 {
		tol = rel
	}
	vf, _ := v.Float64()
	tf, _ := tol.Float64()
	return v.Cmp(tol) <= 0, vf, tf
}

// leafDiff is one differing scalar leaf of two JSON objects.
type leafDiff struct {
	path string
	b, c any
}

// diffLeaves lists the dot paths where two JSON objects differ (a leaf is anything that is not an
// object; a member present on one side only differs).
func diffLeaves(a, b map[string]any, prefix string) []leafDiff {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	sort.Strings(names)
	var out []leafDiff
	for _, k := range names {
		p := k
		if prefix != "" {
			p = prefix + "." + k
		}
		va, oka := a[k]
		vb, okb := b[k]
		ma, isMa := va.(map[string]any)
		mb, isMb := vb.(map[string]any)
		switch {
		case oka && okb && isMa && isMb:
			out = append(out, diffLeaves(ma, mb, p)...)
		case !oka || !okb || !finding.CanonicalEqual(va, vb):
			out = append(out, leafDiff{p, va, vb})
		}
	}
	return out
}

func lookupDot(m map[string]any, p string) (any, bool) {
	var cur any = m
	for _, part := range strings.Split(p, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// roundTrip converts a Go value into its generic JSON form.
func roundTrip(v any, out *map[string]any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	doc, err := jsonstrict.Parse(b)
	if err != nil {
		return err
	}
	m, _ := doc.(map[string]any)
	*out = m
	return nil
}
