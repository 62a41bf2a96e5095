package rules

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Pure helpers of the evidence drivers. The runner uses them to write a result from a worker's
// numbers; the semantic rules and qualverify use the same functions to recompute every derived
// field, so the writer and the checkers cannot drift apart.

// Fixed values of the driver contracts.
const (
	// SubjectAll is the tolerance subject that covers every path or boundary.
	SubjectAll = "all"
	// ArgmaxNeither is a next-token verdict's argmax_candidate when no single candidate is the argmax.
	ArgmaxNeither = "neither"
	// NotReproduced is a path attribution when no path fails.
	NotReproduced = "not_reproduced"
	// NetworkPrivateLoopback is the only network a driver runs with.
	NetworkPrivateLoopback = "private_loopback"
	// StartGateAfterIsolation says the start gate was created after isolation and hashing.
	StartGateAfterIsolation = "created_after_isolation_and_hashing"
	// ResultSelfHashField is the self-hash member of a driver result.
	ResultSelfHashField = "result_sha256"
)

// Tolerance metrics.
const (
	MetricMaxAbsError      = "max_abs_error"
	MetricMeanAbsError     = "mean_abs_error"
	MetricCosineSimilarity = "cosine_similarity"
	MetricTop10Overlap     = "top10_overlap"
	MetricArgmaxEqual      = "argmax_equal"
	MetricRelativeRMSE     = "relative_root_mean_square_error"
	MetricTopLogitMargin   = "top_logit_margin"
)

// Tolerance operators: observed <= limit, observed >= limit.
const (
	OpAtMost  = "<="
	OpAtLeast = ">="
)

// DerivedRelativeTolerance bounds |recorded − recomputed| / |recomputed| for the one derived
// number that is a quotient a worker may compute another way: a boundary's
// relative_root_mean_square_error (root_mean_square_error / reference_root_mean_square). Every
// other derived field (argmax, margin, deltas, verdicts, tolerance outcomes) must be exact.
const DerivedRelativeTolerance = 1e-9

// DriverBaseEnvironment are the variable names a worker always receives (the closed environment);
// a driver case or spec may not declare them, and a result's containment.environment_names must
// include every one of them.
var DriverBaseEnvironment = []string{
	"HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE", "HOME", "LANG", "PATH",
	"PYTHONDONTWRITEBYTECODE", "PYTHONHASHSEED", "PYTHONNOUSERSITE",
	"QUALKIT_DRIVER_CONTRACT", "QUALKIT_DRIVER_MODEL", "QUALKIT_DRIVER_OUTPUT", "QUALKIT_DRIVER_REQUEST", "QUALKIT_START_GATE",
	"TMPDIR", "TRANSFORMERS_OFFLINE",
}

// driverSecretName matches environment names a driver case may not declare: tokens are never
// passed to a worker.
var driverSecretName = regexp.MustCompile(`(?i)(token|secret|password|passwd|credential|api_?key|auth)`)

// DriverEnvironmentRefusal says why a driver case or spec may not declare the environment
// variable name, or returns "".
func DriverEnvironmentRefusal(name string) string {
	switch {
	case driverSecretName.MatchString(name):
		return fmt.Sprintf("%s looks like a credential: tokens are never passed to a driver worker", name)
	case strings.HasPrefix(name, "QUALKIT_") || slices.Contains(DriverBaseEnvironment, name):
		return fmt.Sprintf("%s is set by the runner in the worker's closed environment and cannot be declared", name)
	}
	return ""
}

// contractName normalises a contract name or schema id to the contract name.
func contractName(c string) string { return strings.TrimPrefix(c, "qualkit.") }

// DriverMetrics lists the tolerance metrics a driver result contract observes; nil for any other
// contract.
func DriverMetrics(contractID string) []string {
	switch contractName(contractID) {
	case contract.NextTokenResult:
		return []string{MetricTopLogitMargin}
	case contract.PathAttribution:
		return []string{MetricArgmaxEqual, MetricCosineSimilarity, MetricMaxAbsError, MetricMeanAbsError, MetricTop10Overlap}
	case contract.LayerAttribution:
		return []string{MetricCosineSimilarity, MetricMaxAbsError, MetricMeanAbsError, MetricRelativeRMSE}
	}
	return nil
}

// ToleranceRuleProblem says why a declared tolerance cannot apply to a contract, or returns "".
func ToleranceRuleProblem(contractID string, t contract.DriverTolerance) string {
	ms := DriverMetrics(contractID)
	switch {
	case ms == nil:
		return fmt.Sprintf("%s is not a driver result contract", contractID)
	case !slices.Contains(ms, string(t.Metric)):
		return fmt.Sprintf("metric %s is not observed by %s (its metrics: %s)", t.Metric, contractName(contractID), strings.Join(ms, ", "))
	case t.Op != OpAtMost && t.Op != OpAtLeast:
		return fmt.Sprintf("op %q is neither <= nor >=", t.Op)
	case contractName(contractID) == contract.NextTokenResult && t.Subject != SubjectAll:
		return fmt.Sprintf("a next-token result has one observation per metric: subject must be all, not %q", t.Subject)
	case math.IsNaN(t.Limit) || math.IsInf(t.Limit, 0):
		return "limit is not finite"
	}
	return ""
}

// observation is one number a result offers a tolerance.
type observation struct {
	subject string
	value   float64
}

// observations lists, for each metric, the numbers of a body in subject order.
func observations(contractID string, body any) (map[string][]observation, error) {
	out := map[string][]observation{}
	name := contractName(contractID)
	mismatch := func() error {
		return fmt.Errorf("evaluate tolerances: a %T is not the body of %s", body, name)
	}
	switch name {
	case contract.NextTokenResult:
		var o contract.Oracle
		switch b := body.(type) {
		case contract.NextTokenBody:
			o = b.Oracle
		case *contract.NextTokenBody:
			o = b.Oracle
		case contract.Oracle:
			o = b
		case *contract.Oracle:
			o = *b
		case *contract.NextTokenResultDoc:
			o = b.Oracle
		case contract.NextTokenResultDoc:
			o = b.Oracle
		default:
			return nil, mismatch()
		}
		out[MetricTopLogitMargin] = []observation{{SubjectAll, o.TopLogitMargin}}
	case contract.PathAttribution:
		var b contract.PathBody
		switch x := body.(type) {
		case contract.PathBody:
			b = x
		case *contract.PathBody:
			b = *x
		case *contract.PathAttributionDoc:
			b = x.PathBody
		case contract.PathAttributionDoc:
			b = x.PathBody
		default:
			return nil, mismatch()
		}
		for _, p := range b.Paths {
			eq := 0.0
			if p.Argmax == b.ReferenceArgmax {
				eq = 1
			}
			out[MetricArgmaxEqual] = append(out[MetricArgmaxEqual], observation{p.ID, eq})
			out[MetricCosineSimilarity] = append(out[MetricCosineSimilarity], observation{p.ID, p.CosineSimilarity})
			out[MetricMaxAbsError] = append(out[MetricMaxAbsError], observation{p.ID, p.MaxAbsError})
			out[MetricMeanAbsError] = append(out[MetricMeanAbsError], observation{p.ID, p.MeanAbsError})
			out[MetricTop10Overlap] = append(out[MetricTop10Overlap], observation{p.ID, float64(p.Top10Overlap)})
		}
	case contract.LayerAttribution:
		var bs []contract.Boundary
		switch x := body.(type) {
		case contract.LayerBody:
			bs = x.Boundaries
		case *contract.LayerBody:
			bs = x.Boundaries
		case *contract.LayerAttributionDoc:
			bs = x.Boundaries
		case contract.LayerAttributionDoc:
			bs = x.Boundaries
		default:
			return nil, mismatch()
		}
		for _, b := range bs {
			out[MetricCosineSimilarity] = append(out[MetricCosineSimilarity], observation{b.Name, b.CosineSimilarity})
			out[MetricMaxAbsError] = append(out[MetricMaxAbsError], observation{b.Name, b.MaxAbsError})
			out[MetricMeanAbsError] = append(out[MetricMeanAbsError], observation{b.Name, b.MeanAbsError})
			out[MetricRelativeRMSE] = append(out[MetricRelativeRMSE], observation{b.Name, b.RelativeRootMeanSquareError})
		}
	default:
		return nil, fmt.Errorf("evaluate tolerances: %s is not a driver result contract", contractID)
	}
	return out, nil
}

// ToleranceHolds reports whether observed op limit holds; a nil or NaN observation fails.
func ToleranceHolds(observed *float64, op string, limit float64) bool {
	if observed == nil || math.IsNaN(*observed) {
		return false
	}
	switch op {
	case OpAtMost:
		return *observed <= limit
	case OpAtLeast:
		return *observed >= limit
	}
	return false
}

// EvaluateTolerances applies declared tolerances to a result's body and returns the outcomes in
// declaration order: a rule for subject "all" yields one outcome per path or boundary, in body
// order (one outcome with subject "all" for a next-token result); a rule for a named subject
// yields one outcome, failed with a nil observation when the body has no such subject.
//
// contract is a contract name or schema id of a driver result; body is that contract's body
// (NextTokenBody, PathBody, LayerBody, an Oracle, a pointer to one, or a result document). The
// error reports a body of another contract or a rule that cannot apply to the contract.
func EvaluateTolerances(contractID string, rules []contract.DriverTolerance, body any) ([]contract.ToleranceOutcome, error) {
	obs, err := observations(contractID, body)
	if err != nil {
		return nil, err
	}
	out := []contract.ToleranceOutcome{}
	for i, r := range rules {
		if p := ToleranceRuleProblem(contractID, r); p != "" {
			return nil, fmt.Errorf("evaluate tolerance %d: %s", i, p)
		}
		add := func(subject string, v *float64) {
			out = append(out, contract.ToleranceOutcome{Metric: r.Metric, Op: r.Op, Limit: r.Limit, Subject: subject, Observed: v, Passed: ToleranceHolds(v, string(r.Op), r.Limit)})
		}
		found := false
		for _, o := range obs[string(r.Metric)] {
			if r.Subject == SubjectAll || r.Subject == o.subject {
				v := o.value
				add(o.subject, &v)
				found = true
			}
		}
		if !found && r.Subject != SubjectAll {
			add(r.Subject, nil)
		}
	}
	return out, nil
}

// observed looks up the body's number for one metric and subject.
func observed(obs map[string][]observation, metric, subject string) *float64 {
	for _, o := range obs[metric] {
		if o.subject == subject {
			v := o.value
			return &v
		}
	}
	return nil
}

// FormatNumber writes a number the way messages and reasons show it: the shortest form that
// reads back as the same float64 (1e-09, 3.1e-07, 0.9999).
func FormatNumber(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// ToleranceFailure describes a failed outcome with its numbers, e.g.
// "tolerance max_abs_error <= 1e-09 failed for f32_blocked: observed 3.1e-07".
func ToleranceFailure(o contract.ToleranceOutcome) string {
	s := fmt.Sprintf("tolerance %s %s %s failed", o.Metric, o.Op, FormatNumber(o.Limit))
	if o.Subject != SubjectAll {
		s += " for " + o.Subject
	}
	if o.Observed == nil {
		return s + ": nothing observed (no such path or boundary)"
	}
	return s + ": observed " + FormatNumber(*o.Observed)
}

// DriverStatus decides a driver result's status from its containment and tolerance outcomes and
// says why it failed: passed exactly when the isolation probe saw only loopback (outside and host
// loopback unreachable, loopback bind working), execution was hash-bound, the worker exited 0
// without timing out, nothing was left behind, and every tolerance held.
func DriverStatus(c contract.Containment, outcomes []contract.ToleranceOutcome) (contract.DriverStatus, []string) {
	reasons := []string{}
	p := c.Probe
	if !slices.Equal(p.Interfaces, []string{"lo"}) {
		reasons = append(reasons, fmt.Sprintf("isolation probe saw interfaces %v, want only lo", p.Interfaces))
	}
	if !p.OutsideUnreachable {
		reasons = append(reasons, "isolation probe reached an outside address")
	}
	if !p.HostLoopbackUnreachable {
		reasons = append(reasons, "isolation probe reached a listener on the host's loopback")
	}
	if !p.LoopbackBind {
		reasons = append(reasons, "isolation probe could not bind a loopback socket")
	}
	if !c.HashBoundExec {
		reasons = append(reasons, "the worker was not executed from its hashed bytes")
	}
	if c.TimedOut {
		reasons = append(reasons, fmt.Sprintf("worker overran its runtime of %d s (terminated after %s s)", c.TimeoutSeconds, FormatNumber(c.ElapsedSeconds)))
	}
	switch {
	case c.ExitCode == nil:
		reasons = append(reasons, "worker ended by a signal")
	case *c.ExitCode != 0:
		reasons = append(reasons, fmt.Sprintf("worker exit code %d", *c.ExitCode))
	}
	if len(c.Residue) > 0 {
		reasons = append(reasons, fmt.Sprintf("%d processes left behind: %s", len(c.Residue), strings.Join(c.Residue, "; ")))
	}
	for _, o := range outcomes {
		if !o.Passed {
			reasons = append(reasons, ToleranceFailure(o))
		}
	}
	for i, r := range reasons {
		if len([]rune(r)) > 512 {
			reasons[i] = string([]rune(r)[:509]) + "..."
		}
	}
	if len(reasons) > 64 {
		reasons = append(reasons[:63], fmt.Sprintf("%d more reasons", len(reasons)-63))
	}
	if len(reasons) == 0 {
		return contract.DriverStatusPassed, reasons
	}
	return contract.DriverStatusFailed, reasons
}

// TopLogitMargin is top[0].Logit - top[1].Logit, or 0 with fewer than two tokens.
func TopLogitMargin(top []contract.TopToken) float64 {
	if len(top) < 2 {
		return 0
	}
	return top[0].Logit - top[1].Logit
}

// ArgmaxCandidate is the label of the single candidate whose token is the argmax
// (top_tokens[0]), else ArgmaxNeither (also when two candidates match).
func ArgmaxCandidate(o contract.Oracle) string {
	if len(o.TopTokens) == 0 {
		return ArgmaxNeither
	}
	found := ArgmaxNeither
	n := 0
	for _, c := range o.CandidateTokens {
		if c.TokenID == o.TopTokens[0].TokenID {
			found = c.Label
			n++
		}
	}
	if n != 1 {
		return ArgmaxNeither
	}
	return found
}

// NextTokenVerdictOf recomputes a next-token result's verdict.
func NextTokenVerdictOf(c contract.Containment, outcomes []contract.ToleranceOutcome, o contract.Oracle) contract.NextTokenVerdict {
	status, reasons := DriverStatus(c, outcomes)
	cand := ArgmaxCandidate(o)
	return contract.NextTokenVerdict{Status: status, Reasons: reasons, ArgmaxCandidate: cand, CandidateAttributionComplete: cand != ArgmaxNeither}
}

// PathAttributionOf is the first path, in order, whose argmax differs from the reference argmax
// or that fails a tolerance outcome, else NotReproduced.
func PathAttributionOf(b contract.PathBody, outcomes []contract.ToleranceOutcome) string {
	for _, p := range b.Paths {
		if p.Argmax != b.ReferenceArgmax {
			return p.ID
		}
		for _, o := range outcomes {
			if o.Subject == p.ID && !o.Passed {
				return p.ID
			}
		}
	}
	return NotReproduced
}

// PathVerdictOf recomputes a path attribution's verdict.
func PathVerdictOf(c contract.Containment, outcomes []contract.ToleranceOutcome, b contract.PathBody) contract.PathVerdict {
	status, reasons := DriverStatus(c, outcomes)
	return contract.PathVerdict{Status: status, Reasons: reasons, Attribution: PathAttributionOf(b, outcomes)}
}

// LayerVerdictOf recomputes a layer attribution's verdict.
func LayerVerdictOf(c contract.Containment, outcomes []contract.ToleranceOutcome) contract.DriverVerdict {
	status, reasons := DriverStatus(c, outcomes)
	return contract.DriverVerdict{Status: status, Reasons: reasons}
}

// LargestGrowth is the boundary where the relative error grows most: the largest
// rel[i] - rel[i-1] over i >= 1, with rel[0] as index 0's delta; the first on ties. The zero
// Growth for no boundaries.
func LargestGrowth(bs []contract.Boundary) contract.Growth {
	var g contract.Growth
	for i, b := range bs {
		d := b.RelativeRootMeanSquareError
		if i > 0 {
			d -= bs[i-1].RelativeRootMeanSquareError
		}
		if i == 0 || d > g.RelativeRootMeanSquareErrorDelta {
			g = contract.Growth{Index: b.Index, Name: b.Name, RelativeRootMeanSquareErrorDelta: d}
		}
	}
	return g
}

// TokenIDsDigest is "sha256:<hex>" of the RFC 8785 canonical form of a token id list (e.g.
// [1,17,42,5]): a request's input_token_ids_sha256.
func TokenIDsDigest(ids []int64) string {
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, ']')
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}
