package rules

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// Sentinels the driver rules wrap beside ErrSemantic, so a checker can tell these failures apart.
var (
	// ErrToleranceOutcome: a recorded tolerance outcome is not what its rule gives for the
	// result's numbers (a wrong observation, or passed disagreeing with observed op limit).
	ErrToleranceOutcome = errors.New("tolerance outcome inconsistent")
	// ErrDerived: a derived field (argmax, margin, ranks, verdict, attribution, largest growth)
	// differs from its recomputation from the numbers.
	ErrDerived = errors.New("derived field differs from its recomputation")
)

func (r *rules) addWrapped(ptr string, sentinel error, format string, args ...any) {
	r.out = append(r.out, Problem{Pointer: ptr, Err: fmt.Errorf("%w: "+format, append([]any{sentinel}, args...)...)})
}

// driverFields checks what a driver case and a driver spec share: the environment (no credential
// or runner-owned names), placeholders as whole values in the allowed places, and tolerances that
// apply to the contract. use is called for every placeholder value with its pointer.
func (r *rules) driverFields(base string, d contract.DriverSpecDoc, use func(ptr, value string)) {
	for _, k := range sortedKeys(d.Environment) {
		p := base + "/environment/" + jsonstrict.EscapePointerToken(k)
		if why := DriverEnvironmentRefusal(k); why != "" {
			r.add(p, "%s", why)
		}
		use(p, d.Environment[k])
	}
	use(base+"/worker/executable", d.Worker.Executable)
	for i, a := range d.Worker.Args {
		use(fmt.Sprintf("%s/worker/args/%d", base, i), a)
	}
	use(base+"/model/path", d.Model.Path)
	for _, f := range []struct{ ptr, v string }{{base + "/worker/script", d.Worker.Script}, {base + "/request/path", d.Request.Path}} {
		if strings.Contains(f.v, "${") {
			r.add(f.ptr, "%q: the script and the request are committed files bound by digest, never placeholders", f.v)
		}
	}
	type key struct{ metric, op, subject string }
	seen := map[key]int{}
	for i, t := range d.Tolerances {
		p := fmt.Sprintf("%s/tolerances/%d", base, i)
		if why := ToleranceRuleProblem(string(d.Contract), t); why != "" {
			r.add(p, "%s", why)
		}
		k := key{string(t.Metric), string(t.Op), t.Subject}
		if j, dup := seen[k]; dup {
			r.add(p, "tolerance %s %s for %s repeats %s/tolerances/%d", t.Metric, t.Op, t.Subject, base, j)
		}
		seen[k] = i
		if t.Subject == NotReproduced {
			r.add(p+"/subject", "%q is reserved (a path attribution's verdict when no path fails)", t.Subject)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func CheckDriverSpec(d *contract.DriverSpecDoc) []Problem {
	r := &rules{}
	r.driverFields("", *d, func(p, v string) {
		if _, whole := placeholders(v); !whole {
			r.add(p, "a placeholder must be a whole value, e.g. \"${name}\", not %q", v)
		}
	})
	return r.out
}

// driverCase checks a workload's driver case; placeholders must name declared variables (or the
// built-in model_path and seed), and mark them used.
func (r *rules) driverCase(cb string, c contract.Case, declared map[string]contract.Variable, used map[string]bool) {
	r.driverFields(cb, contract.DriverSpecOf(c), func(p, v string) {
		names, whole := placeholders(v)
		if !whole {
			r.add(p, "a placeholder must be a whole value, e.g. \"${name}\", not %q", v)
			return
		}
		for _, n := range names {
			if _, ok := declared[n]; ok {
				used[n] = true
			} else if !slices.Contains(ReservedVariables, n) {
				r.add(p, "placeholder ${%s} names no declared variable", n)
			}
		}
	})
}

func CheckDriverRequest(d *contract.DriverRequestDoc) []Problem {
	r := &rules{}
	labels := map[string]int{}
	tokens := map[int64]int{}
	for i, c := range d.Candidates {
		if j, dup := labels[c.Label]; dup {
			r.add(ptr("candidates", i, "label"), "candidate label %q repeats /candidates/%d", c.Label, j)
		}
		labels[c.Label] = i
		if j, dup := tokens[c.TokenID]; dup {
			r.add(ptr("candidates", i, "token_id"), "candidate token id %d repeats /candidates/%d: the argmax could not name one candidate", c.TokenID, j)
		}
		tokens[c.TokenID] = i
		if c.Label == ArgmaxNeither {
			r.add(ptr("candidates", i, "label"), "%q is reserved (the verdict when no single candidate is the argmax)", c.Label)
		}
	}
	r.pathIDs("/paths", d.Paths)
	return r.out
}

// pathIDs checks a list of path ids: unique and not a reserved word.
func (r *rules) pathIDs(base string, ids []string) {
	seen := map[string]int{}
	for i, id := range ids {
		p := fmt.Sprintf("%s/%d", base, i)
		if j, dup := seen[id]; dup {
			r.add(p, "path %q repeats %s/%d", id, base, j)
		}
		seen[id] = i
		if id == SubjectAll || id == NotReproduced {
			r.add(p, "path id %q is reserved", id)
		}
	}
}

func CheckWorkerOutput(d *contract.DriverWorkerOutputDoc) []Problem {
	r := &rules{}
	switch contractName(string(d.Contract)) {
	case contract.NextTokenResult:
		if b, ok := d.NextTokenBody(); ok {
			r.oracle("/body/oracle", b.Oracle)
		}
	case contract.PathAttribution:
		if b, ok := d.PathBody(); ok {
			r.pathBody("/body", b)
		}
	case contract.LayerAttribution:
		if b, ok := d.LayerBody(); ok {
			r.layerBody("/body", b)
		}
	}
	return r.out
}

// oracle checks a next-token oracle: min(10, vocab) unique top tokens in order, argmax and margin
// recomputed, candidates' logits and ranks consistent with the top tokens.
func (r *rules) oracle(base string, o contract.Oracle) {
	want := min(int64(10), o.Vocab)
	if int64(len(o.TopTokens)) != want {
		r.add(base+"/top_tokens", "%d top tokens, want min(10, vocab %d) = %d", len(o.TopTokens), o.Vocab, want)
	}
	inTop := map[int64]int{}
	for i, t := range o.TopTokens {
		p := fmt.Sprintf("%s/top_tokens/%d", base, i)
		if j, dup := inTop[t.TokenID]; dup {
			r.add(p+"/token_id", "token %d repeats %s/top_tokens/%d", t.TokenID, base, j)
		} else {
			inTop[t.TokenID] = i
		}
		if t.TokenID >= o.Vocab {
			r.add(p+"/token_id", "token %d is outside the vocabulary of %d", t.TokenID, o.Vocab)
		}
		if i > 0 {
			prev := o.TopTokens[i-1]
			if t.Logit > prev.Logit || (t.Logit == prev.Logit && t.TokenID < prev.TokenID) {
				r.add(p, "top tokens are ordered by non-increasing logit, ties by ascending token id: %d (%s) follows %d (%s)", t.TokenID, FormatNumber(t.Logit), prev.TokenID, FormatNumber(prev.Logit))
			}
		}
	}
	if len(o.TopTokens) == 0 {
		return
	}
	if o.ArgmaxTokenID != o.TopTokens[0].TokenID {
		r.addWrapped(base+"/argmax_token_id", ErrDerived, "argmax %d is not top_tokens[0] %d", o.ArgmaxTokenID, o.TopTokens[0].TokenID)
	}
	if m := TopLogitMargin(o.TopTokens); o.TopLogitMargin != m {
		r.addWrapped(base+"/top_logit_margin", ErrDerived, "margin %s, top_tokens give %s", FormatNumber(o.TopLogitMargin), FormatNumber(m))
	}
	labels := map[string]int{}
	tokens := map[int64]int{}
	last := o.TopTokens[len(o.TopTokens)-1].Logit
	for i, c := range o.CandidateTokens {
		p := fmt.Sprintf("%s/candidate_tokens/%d", base, i)
		if j, dup := labels[c.Label]; dup {
			r.add(p+"/label", "candidate label %q repeats %s/candidate_tokens/%d", c.Label, base, j)
		}
		labels[c.Label] = i
		if j, dup := tokens[c.TokenID]; dup {
			r.add(p+"/token_id", "candidate token %d repeats %s/candidate_tokens/%d", c.TokenID, base, j)
		}
		tokens[c.TokenID] = i
		if c.Label == ArgmaxNeither {
			r.add(p+"/label", "%q is reserved", c.Label)
		}
		if c.TokenID >= o.Vocab {
			r.add(p+"/token_id", "token %d is outside the vocabulary of %d", c.TokenID, o.Vocab)
		}
		if c.Rank > o.Vocab {
			r.add(p+"/rank", "rank %d is beyond the vocabulary of %d", c.Rank, o.Vocab)
		}
		above := int64(0)
		for _, t := range o.TopTokens {
			if t.Logit > c.Logit {
				above++
			}
		}
		if k, ok := inTop[c.TokenID]; ok {
			if c.Logit != o.TopTokens[k].Logit {
				r.addWrapped(p+"/logit", ErrDerived, "token %d has logit %s here and %s in top_tokens", c.TokenID, FormatNumber(c.Logit), FormatNumber(o.TopTokens[k].Logit))
			} else if c.Rank != above+1 {
				r.addWrapped(p+"/rank", ErrDerived, "token %d has rank %d, top_tokens give %d", c.TokenID, c.Rank, above+1)
			}
			continue
		}
		switch {
		case int64(len(o.TopTokens)) == o.Vocab:
			r.add(p+"/token_id", "token %d is not among the top tokens, which hold the whole vocabulary", c.TokenID)
		case c.Logit > last:
			r.addWrapped(p+"/logit", ErrDerived, "token %d has logit %s, above the last top token's %s, yet is not among the top tokens", c.TokenID, FormatNumber(c.Logit), FormatNumber(last))
		case c.Rank < above+1:
			r.addWrapped(p+"/rank", ErrDerived, "token %d has rank %d, but %d top tokens have a larger logit", c.TokenID, c.Rank, above)
		}
	}
}

// pathBody checks a path attribution's body: unique ids, argmax_equal recomputed, mean <= max,
// one reference digest.
func (r *rules) pathBody(base string, b contract.PathBody) {
	ids := make([]string, len(b.Paths))
	for i, p := range b.Paths {
		ids[i] = p.ID
	}
	r.pathIDs(base+"/paths", ids)
	if b.ReferencePath == SubjectAll || b.ReferencePath == NotReproduced {
		r.add(base+"/reference_path", "path id %q is reserved", b.ReferencePath)
	}
	for i, p := range b.Paths {
		pp := fmt.Sprintf("%s/paths/%d", base, i)
		if p.ID == b.ReferencePath {
			r.add(pp+"/id", "path %q is the reference path: it cannot be compared with itself", p.ID)
		}
		if p.ArgmaxEqual != (p.Argmax == b.ReferenceArgmax) {
			r.addWrapped(pp+"/argmax_equal", ErrDerived, "argmax_equal %v, but argmax %d and reference argmax %d", p.ArgmaxEqual, p.Argmax, b.ReferenceArgmax)
		}
		if p.MeanAbsError > p.MaxAbsError {
			r.add(pp+"/mean_abs_error", "mean_abs_error %s exceeds max_abs_error %s", FormatNumber(p.MeanAbsError), FormatNumber(p.MaxAbsError))
		}
		if i > 0 && p.ReferenceLogitsSHA256 != b.Paths[0].ReferenceLogitsSHA256 {
			r.add(pp+"/reference_logits_sha256", "every path is compared with one reference: %s differs from %s", p.ReferenceLogitsSHA256, b.Paths[0].ReferenceLogitsSHA256)
		}
	}
}

// layerBody checks a layer attribution's body: index = position, unique names, mean <= max,
// relative error recomputed, largest growth recomputed.
func (r *rules) layerBody(base string, b contract.LayerBody) {
	names := map[string]int{}
	for i, x := range b.Boundaries {
		p := fmt.Sprintf("%s/boundaries/%d", base, i)
		if x.Index != int64(i) {
			r.add(p+"/index", "index %d at position %d: boundaries are listed in order, index equal to position", x.Index, i)
		}
		if j, dup := names[x.Name]; dup {
			r.add(p+"/name", "boundary %q repeats %s/boundaries/%d", x.Name, base, j)
		}
		names[x.Name] = i
		if x.Name == SubjectAll {
			r.add(p+"/name", "boundary name %q is reserved", x.Name)
		}
		if x.MeanAbsError > x.MaxAbsError {
			r.add(p+"/mean_abs_error", "mean_abs_error %s exceeds max_abs_error %s", FormatNumber(x.MeanAbsError), FormatNumber(x.MaxAbsError))
		}
		if x.ReferenceRootMeanSquare > 0 {
			want := x.RootMeanSquareError / x.ReferenceRootMeanSquare
			if !withinRelative(x.RelativeRootMeanSquareError, want, DerivedRelativeTolerance) {
				r.addWrapped(p+"/relative_root_mean_square_error", ErrDerived, "%s, but root_mean_square_error / reference_root_mean_square = %s", FormatNumber(x.RelativeRootMeanSquareError), FormatNumber(want))
			}
		}
	}
	if g := LargestGrowth(b.Boundaries); g != b.LargestRelativeErrorGrowth {
		r.addWrapped(base+"/largest_relative_error_growth", ErrDerived, "index %d %s delta %s, the boundaries give index %d %s delta %s",
			b.LargestRelativeErrorGrowth.Index, b.LargestRelativeErrorGrowth.Name, FormatNumber(b.LargestRelativeErrorGrowth.RelativeRootMeanSquareErrorDelta),
			g.Index, g.Name, FormatNumber(g.RelativeRootMeanSquareErrorDelta))
	}
}

func withinRelative(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// driverHeader checks what every driver result shares: the self-hash, the closed environment's
// names, and each tolerance outcome recomputed from the body's numbers.
func (r *rules) driverHeader(contractID string, tree any, h contract.DriverResultHeader, body any) {
	if err := jsonstrict.VerifySelfHash(tree, ResultSelfHashField); err != nil {
		r.out = append(r.out, Problem{Pointer: "/" + ResultSelfHashField, Err: err})
	}
	names := h.Containment.EnvironmentNames
	if !sort.StringsAreSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
		r.add("/containment/environment_names", "environment names must be sorted and unique")
	}
	for _, n := range DriverBaseEnvironment {
		if !slices.Contains(names, n) {
			r.add("/containment/environment_names", "%s is missing: the worker's closed environment always sets %s", n, strings.Join(DriverBaseEnvironment, ", "))
		}
	}
	for i, n := range names {
		if driverSecretName.MatchString(n) {
			r.add(ptr("containment", "environment_names", i), "%s looks like a credential: tokens are never passed to a driver worker", n)
		}
	}
	obs, err := observations(contractID, body)
	if err != nil {
		r.add("", "%v", err)
		return
	}
	for i, o := range h.Tolerances {
		p := ptr("tolerances", i)
		rule := contract.DriverTolerance{Metric: o.Metric, Op: o.Op, Limit: o.Limit, Subject: o.Subject}
		if why := ToleranceRuleProblem(contractID, rule); why != "" {
			r.add(p, "%s", why)
			continue
		}
		if o.Subject == SubjectAll && contractName(contractID) != contract.NextTokenResult {
			r.add(p+"/subject", "an outcome names the path or boundary it observed; all is expanded when the tolerance is evaluated")
			continue
		}
		want := observed(obs, string(o.Metric), o.Subject)
		switch {
		case want == nil && o.Observed != nil:
			r.addWrapped(p+"/observed", ErrToleranceOutcome, "%s observed %s for %s, which the result does not have", o.Metric, FormatNumber(*o.Observed), o.Subject)
		case want != nil && (o.Observed == nil || *o.Observed != *want):
			got := "null"
			if o.Observed != nil {
				got = FormatNumber(*o.Observed)
			}
			r.addWrapped(p+"/observed", ErrToleranceOutcome, "%s observed %s for %s, the result says %s", o.Metric, got, o.Subject, FormatNumber(*want))
		}
		if holds := ToleranceHolds(want, string(o.Op), o.Limit); o.Passed != holds {
			r.addWrapped(p+"/passed", ErrToleranceOutcome, "passed %v, but %s %s %s %s is %v", o.Passed, o.Metric, describeObserved(want), o.Op, FormatNumber(o.Limit), holds)
		}
	}
}

func describeObserved(v *float64) string {
	if v == nil {
		return "(nothing observed)"
	}
	return FormatNumber(*v)
}

// verdictStatus checks a result's status and reasons against DriverStatus.
func (r *rules) verdictStatus(h contract.DriverResultHeader, status contract.DriverStatus, reasons []string) {
	want, why := DriverStatus(h.Containment, h.Tolerances)
	if status != want {
		r.addWrapped("/verdict/status", ErrDerived, "status %s, the containment and tolerance outcomes give %s (%s)", status, want, strings.Join(orNone(why), "; "))
	}
	if (status == contract.DriverStatusPassed) != (len(reasons) == 0) {
		r.add("/verdict/reasons", "reasons are empty exactly when the status is passed (%d reasons, status %s)", len(reasons), status)
	}
}

func orNone(s []string) []string {
	if len(s) == 0 {
		return []string{"nothing failed"}
	}
	return s
}

func CheckNextTokenResult(tree any, d *contract.NextTokenResultDoc) []Problem {
	r := &rules{}
	r.driverHeader(contract.NextTokenResult, tree, d.DriverResultHeader, d.NextTokenBody)
	r.oracle("/oracle", d.Oracle)
	r.verdictStatus(d.DriverResultHeader, d.Verdict.Status, d.Verdict.Reasons)
	if want := ArgmaxCandidate(d.Oracle); d.Verdict.ArgmaxCandidate != want {
		r.addWrapped("/verdict/argmax_candidate", ErrDerived, "argmax_candidate %s, the oracle gives %s (argmax %d)", d.Verdict.ArgmaxCandidate, want, d.Oracle.ArgmaxTokenID)
	}
	if d.Verdict.CandidateAttributionComplete != (d.Verdict.ArgmaxCandidate != ArgmaxNeither) {
		r.addWrapped("/verdict/candidate_attribution_complete", ErrDerived, "candidate_attribution_complete %v with argmax_candidate %s", d.Verdict.CandidateAttributionComplete, d.Verdict.ArgmaxCandidate)
	}
	return r.out
}

func CheckPathAttribution(tree any, d *contract.PathAttributionDoc) []Problem {
	r := &rules{}
	r.driverHeader(contract.PathAttribution, tree, d.DriverResultHeader, d.PathBody)
	r.pathBody("", d.PathBody)
	r.verdictStatus(d.DriverResultHeader, d.Verdict.Status, d.Verdict.Reasons)
	if want := PathAttributionOf(d.PathBody, d.Tolerances); d.Verdict.Attribution != want {
		r.addWrapped("/verdict/attribution", ErrDerived, "attribution %s, the paths and tolerance outcomes give %s", d.Verdict.Attribution, want)
	}
	return r.out
}

func CheckLayerAttribution(tree any, d *contract.LayerAttributionDoc) []Problem {
	r := &rules{}
	r.driverHeader(contract.LayerAttribution, tree, d.DriverResultHeader, d.LayerBody)
	r.layerBody("", d.LayerBody)
	r.verdictStatus(d.DriverResultHeader, d.Verdict.Status, d.Verdict.Reasons)
	return r.out
}
