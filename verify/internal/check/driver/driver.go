package driver

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Check re-checks one driver result bound by receipt result i: the receipt's summary, the
// workload's case (kind, contract), the declared tolerances (equal to the workload's), every
// tolerance outcome and the verdict recomputed from the result's numbers, and every failed
// tolerance reported with its numbers.
func Check(s *load.Snapshot, c *finding.Collector, i int, r contract.Result, path string, dr *load.DriverResult) {
	file := s.Receipt.Path
	base := finding.Pointer("results", i)
	h := dr.Header
	caseName := "case " + r.ID
	if h.CaseID != r.ID {
		c.Add(file, base+"/id", reason.ErrResultMismatch, "result %q binds the driver result of %q", r.ID, h.CaseID)
	}
	if string(r.Status) != string(dr.Status) {
		c.Add(file, base+"/status", reason.ErrResultMismatch, "result %q is %s, its driver result says %s", r.ID, r.Status, dr.Status)
	}
	if len(r.Metrics) > 0 {
		c.Add(file, base+"/metrics", reason.ErrResultMismatch, "result %q summarises a driver result: its numbers are the result's tolerance outcomes, the receipt carries no metrics for it (%d found)", r.ID, len(r.Metrics))
	}

	// The rules the outcomes must come from: the workload's, when it is available.
	wc := s.Case(r.ID)
	var ruleSet []contract.DriverTolerance
	switch {
	case wc == nil:
		c.Note("%s: the workload is not available: its tolerance outcomes were recomputed against the rules the result records", caseName)
		for _, o := range h.Tolerances {
			ruleSet = append(ruleSet, contract.DriverTolerance{Metric: o.Metric, Op: o.Op, Limit: o.Limit, Subject: o.Subject})
		}
	case wc.Kind != contract.CaseKindDriver || string(wc.Contract) != "qualkit."+dr.Name:
		c.Add(file, base+"/case_result", reason.ErrResultMismatch, "%s: the result is a qualkit.%s, the workload declares a %s case%s", caseName, dr.Name, wc.Kind, contractSuffix(wc))
		return
	default:
		ruleSet = wc.Tolerances
	}
	want, err := rules.EvaluateTolerances(dr.Name, ruleSet, dr.Body)
	if err != nil {
		c.Add(path, "/tolerances", reason.ErrToleranceDeclared, "%s: the declared tolerances cannot be evaluated: %v", caseName, err)
		return
	}
	got := h.Tolerances
	if wc != nil && !sameRules(got, want) {
		c.Add(path, "/tolerances", reason.ErrToleranceDeclared, "%s: the result evaluated %s; the workload declares %s, which give %s",
			caseName, describeRules(got), describeDeclared(wc.Tolerances), describeRules(want))
		// Still recompute what the result recorded, outcome by outcome.
		var own []contract.DriverTolerance
		for _, o := range got {
			own = append(own, contract.DriverTolerance{Metric: o.Metric, Op: o.Op, Limit: o.Limit, Subject: o.Subject})
		}
		recomputed, err := EvaluateEach(dr.Name, own, dr.Body)
		if err != nil {
			c.Add(path, "/tolerances", reason.ErrToleranceOutcome, "%s: %v", caseName, err)
			return
		}
		compareOutcomes(c, path, caseName, got, recomputed)
	} else {
		compareOutcomes(c, path, caseName, got, want)
	}
	for k, o := range want {
		if !o.Passed {
			ptr := "/tolerances"
			if k < len(got) && sameRule(got[k], o) {
				ptr = finding.Pointer("tolerances", k)
			}
			c.Add(path, ptr, reason.ErrToleranceFailed, "%s: %s", caseName, rules.ToleranceFailure(o))
		}
	}

	// The verdict, recomputed from the containment and the recomputed outcomes.
	status, why := rules.DriverStatus(h.Containment, want)
	if dr.Status != status {
		c.Add(path, "/verdict/status", reason.ErrDriverVerdict, "%s: status %s, recomputed %s (%s)", caseName, dr.Status, status, strings.Join(orNothing(why), "; "))
	}
	switch b := dr.Body.(type) {
	case contract.NextTokenBody:
		if a := rules.ArgmaxCandidate(b.Oracle); a != dr.ArgmaxCandidate {
			c.Add(path, "/verdict/argmax_candidate", reason.ErrDriverVerdict, "%s: argmax_candidate %s, recomputed %s (argmax token %d)", caseName, dr.ArgmaxCandidate, a, firstToken(b.Oracle))
		}
		if dr.Complete != (dr.ArgmaxCandidate != rules.ArgmaxNeither) {
			c.Add(path, "/verdict/candidate_attribution_complete", reason.ErrDriverVerdict, "%s: candidate_attribution_complete %v with argmax_candidate %s", caseName, dr.Complete, dr.ArgmaxCandidate)
		}
	case contract.PathBody:
		if a := rules.PathAttributionOf(b, want); a != dr.Attribution {
			c.Add(path, "/verdict/attribution", reason.ErrDriverVerdict, "%s: attribution %s, recomputed %s", caseName, dr.Attribution, a)
		}
	case contract.LayerBody:
		if g := rules.LargestGrowth(b.Boundaries); g != b.LargestRelativeErrorGrowth {
			c.Add(path, "/largest_relative_error_growth", reason.ErrDriverVerdict, "%s: largest growth at %s (delta %s), recomputed %s (delta %s)", caseName,
				b.LargestRelativeErrorGrowth.Name, rules.FormatNumber(b.LargestRelativeErrorGrowth.RelativeRootMeanSquareErrorDelta),
				g.Name, rules.FormatNumber(g.RelativeRootMeanSquareErrorDelta))
		}
	}
}

func contractSuffix(wc *contract.Case) string {
	if wc.Contract == "" {
		return ""
	}
	return string(" producing " + wc.Contract)
}

func firstToken(o contract.Oracle) int64 {
	if len(o.TopTokens) == 0 {
		return -1
	}
	return o.TopTokens[0].TokenID
}

func orNothing(s []string) []string {
	if len(s) == 0 {
		return []string{"nothing failed"}
	}
	return s
}

// evaluateEach evaluates rules that name one subject each (as a result's outcomes do).
func EvaluateEach(contractID string, ruleSet []contract.DriverTolerance, body any) ([]contract.ToleranceOutcome, error) {
	out := make([]contract.ToleranceOutcome, 0, len(ruleSet))
	for _, r := range ruleSet {
		if r.Subject == rules.SubjectAll && contractID != contract.NextTokenResult {
			return nil, fmt.Errorf("an outcome for subject all: outcomes name the path or boundary they observed")
		}
		o, err := rules.EvaluateTolerances(contractID, []contract.DriverTolerance{r}, body)
		if err != nil {
			return nil, err
		}
		out = append(out, o...)
	}
	return out, nil
}

func sameRule(a, b contract.ToleranceOutcome) bool {
	return a.Metric == b.Metric && a.Op == b.Op && a.Limit == b.Limit && a.Subject == b.Subject
}

func sameRules(a, b []contract.ToleranceOutcome) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameRule(a[i], b[i]) {
			return false
		}
	}
	return true
}

func describeRules(os []contract.ToleranceOutcome) string {
	if len(os) == 0 {
		return "no tolerance"
	}
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = fmt.Sprintf("%s %s %s for %s", o.Metric, o.Op, rules.FormatNumber(o.Limit), o.Subject)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func describeDeclared(ts []contract.DriverTolerance) string {
	if len(ts) == 0 {
		return "no tolerance"
	}
	parts := make([]string, len(ts))
	for i, t := range ts {
		parts[i] = fmt.Sprintf("%s %s %s for %s", t.Metric, t.Op, rules.FormatNumber(t.Limit), t.Subject)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

func describeObservation(v *float64) string {
	if v == nil {
		return "nothing"
	}
	return rules.FormatNumber(*v)
}

// compareOutcomes reports every recorded outcome whose observation or verdict differs from its
// recomputation (the two lists describe the same rules, in order).
func compareOutcomes(c *finding.Collector, path, caseName string, got, want []contract.ToleranceOutcome) {
	for k := range min(len(got), len(want)) {
		g, w := got[k], want[k]
		sameObs := (g.Observed == nil) == (w.Observed == nil) && (g.Observed == nil || *g.Observed == *w.Observed)
		if sameObs && g.Passed == w.Passed {
			continue
		}
		c.Add(path, finding.Pointer("tolerances", k), reason.ErrToleranceOutcome, "%s: tolerance %s %s %s for %s records observed %s passed %v; the result's numbers give observed %s passed %v",
			caseName, g.Metric, g.Op, rules.FormatNumber(g.Limit), g.Subject, describeObservation(g.Observed), g.Passed, describeObservation(w.Observed), w.Passed)
	}
}

// Bindings (hashes check): a driver result names the source, script, executable,
// request and model the workload's case pins and the receipt binds.
func Bindings(s *load.Snapshot, c *finding.Collector) {
	rc := s.RC
	for _, r := range rc.Results {
		if r.CaseResult == nil {
			continue
		}
		dr := s.DriverResults[r.CaseResult.Path]
		if dr == nil {
			continue
		}
		p := r.CaseResult.Path
		h := dr.Header
		src := rc.Source
		for _, x := range []struct{ field, got, want string }{
			{"commit", h.Source.Commit, src.Commit}, {"tree", h.Source.Tree, src.Tree}, {"tree_hash", h.Source.TreeHash, src.TreeHash},
		} {
			if x.got != x.want {
				c.Add(p, "/source/"+x.field, reason.ErrReferenceMismatch, "case %s ran from %s %s, the receipt's source is %s", r.ID, x.field, x.got, x.want)
			}
		}
		if h.Source.Clean != src.Clean {
			c.Add(p, "/source/clean", reason.ErrReferenceMismatch, "case %s says clean %v, the receipt says %v", r.ID, h.Source.Clean, src.Clean)
		}
		if h.Implementation.Qualrun.Digest != rc.Qualification.Qualrun.Digest {
			c.Add(p, "/implementation/qualrun/digest", reason.ErrReferenceMismatch, "case %s was run by qualrun %s, the receipt was written by %s", r.ID, h.Implementation.Qualrun.Digest, rc.Qualification.Qualrun.Digest)
		}
		wc := s.Case(r.ID)
		if wc == nil || wc.Kind != contract.CaseKindDriver || wc.Worker == nil || wc.Request == nil || wc.Model == nil {
			continue
		}
		pins := []struct{ ptr, what, got, want string }{
			{"/implementation/script/digest", "script " + wc.Worker.Script, h.Implementation.Script.Digest, wc.Worker.ScriptDigest},
			{"/request/digest", "request " + wc.Request.Path, h.Request.Digest, wc.Request.Digest},
			{"/model/digest", "model " + wc.Model.Path, h.Model.Digest, wc.Model.Digest},
		}
		if wc.Worker.ExecutableDigest != nil {
			pins = append(pins, struct{ ptr, what, got, want string }{"/implementation/executable/digest", "executable " + wc.Worker.Executable, h.Implementation.Executable.Digest, *wc.Worker.ExecutableDigest})
		}
		if h.Implementation.Script.Path != wc.Worker.Script {
			c.Add(p, "/implementation/script/path", reason.ErrReferenceMismatch, "case %s ran script %s, the workload declares %s", r.ID, h.Implementation.Script.Path, wc.Worker.Script)
		}
		if h.Request.Path != wc.Request.Path {
			c.Add(p, "/request/path", reason.ErrReferenceMismatch, "case %s evaluated request %s, the workload declares %s", r.ID, h.Request.Path, wc.Request.Path)
		}
		for _, x := range pins {
			if x.got != x.want {
				c.Add(p, x.ptr, reason.ErrReferenceMismatch, "case %s: %s is %s in the result, the workload pins %s", r.ID, x.what, x.got, x.want)
			}
		}
		if h.Containment.TimeoutSeconds != wc.TimeoutSeconds {
			c.Add(p, "/containment/timeout_seconds", reason.ErrReferenceMismatch, "case %s ran with a %d s runtime, the workload declares %d s", r.ID, h.Containment.TimeoutSeconds, wc.TimeoutSeconds)
		}
	}
}
