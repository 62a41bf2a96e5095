package rules

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
)

// Semantic limits of version 1 contracts, beyond what the JSON Schemas bound.
const (
	// MaxDeclaredWallSeconds bounds repetitions × the sum of a variant's case timeouts.
	MaxDeclaredWallSeconds = 604800
	// MaxCaseExecutions bounds repetitions × cases of a variant.
	MaxCaseExecutions = 10000
	// MaxServingRequests bounds the requests one serving case may declare, warmups included.
	MaxServingRequests = 1000000
	// MaxDurationSkewSeconds bounds |duration − (finished − started)| in a receipt.
	MaxDurationSkewSeconds = 1.0
	// MaxImagePixels bounds the pixels of a serving case's generated images, per request.
	MaxImagePixels = 4 << 20
)

// ReservedVariables are built-in placeholders that a workload may use but not declare.
var ReservedVariables = []string{"model_path", "seed"}

// RunnerMetrics are the metrics a runner-produced command case may declare.
var RunnerMetrics = []string{"case_pass", "exit_code", "output_assertion_failures"}

var placeholderRE = regexp.MustCompile(`\$\{([a-z][a-z0-9_]{1,63})\}`)

// Problem is one broken semantic rule: where (an RFC 6901 pointer) and why. The registry wraps
// each in a Violation carrying ErrSemantic.
type Problem struct {
	Pointer string
	Err     error
}

// rules collects semantic problems.
type rules struct{ out []Problem }

func (r *rules) add(ptr, format string, args ...any) {
	r.out = append(r.out, Problem{Pointer: ptr, Err: fmt.Errorf(format, args...)})
}

func ptr(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		switch p := p.(type) {
		case string:
			b.WriteString(jsonstrict.EscapePointerToken(p))
		case int:
			b.WriteString(strconv.Itoa(p))
		default:
			b.WriteString(jsonstrict.EscapePointerToken(fmt.Sprint(p)))
		}
	}
	return b.String()
}

func (r *rules) sortedUnique(base string, ids []string, what string) {
	seen := map[string]int{}
	for i, id := range ids {
		if j, dup := seen[id]; dup {
			r.add(fmt.Sprintf("%s/%d", base, i), "%s %q repeats %s/%d", what, id, base, j)
			continue
		}
		seen[id] = i
		if i > 0 && ids[i-1] > id {
			r.add(fmt.Sprintf("%s/%d", base, i), "%s %q is out of order: sort by %s", what, id, what)
		}
	}
}

func (r *rules) argv(base string, argv []string) {
	if len(argv) == 0 {
		return
	}
	if placeholderRE.MatchString(argv[0]) {
		r.add(base+"/0", "argv[0] %q is a placeholder: the program must be fixed", argv[0])
	}
	if e := ShellEval(argv); e != nil {
		r.add(fmt.Sprintf("%s/%d", base, e.Element), "shell evaluation is refused: at element %d %q, %s; give the program and its arguments as an argv vector (no shell, no command string)", e.Element, argv[e.Element], e)
	}
}

// placeholders returns the variables a value uses, and whether it is well formed
// (a placeholder, if any, is the whole value).
func placeholders(v string) (names []string, whole bool) {
	m := placeholderRE.FindAllStringSubmatch(v, -1)
	for _, x := range m {
		names = append(names, x[1])
	}
	if len(m) == 0 {
		return nil, !strings.Contains(v, "${")
	}
	return names, len(m) == 1 && m[0][0] == v
}

func CheckWorkload(w *contract.WorkloadDoc) []Problem {
	r := &rules{}
	declared := map[string]contract.Variable{}
	names := make([]string, len(w.Variables))
	for i, v := range w.Variables {
		names[i] = v.Name
		declared[v.Name] = v
		base := ptr("variables", i)
		for _, res := range ReservedVariables {
			if v.Name == res {
				r.add(ptr("variables", i, "name"), "variable name %q is reserved (a built-in placeholder)", v.Name)
			}
		}
		r.variable(base, v)
	}
	r.sortedUnique("/variables", names, "variable name")

	ids := make([]string, len(w.Variants))
	used := map[string]bool{}
	for i, v := range w.Variants {
		ids[i] = v.ID
		usedHere := r.variant(ptr("variants", i), w, v, declared)
		for n := range usedHere {
			used[n] = true
		}
		for _, d := range w.Variables {
			if d.Required && !usedHere[d.Name] {
				r.add(ptr("variants", i), "required variable %q is not used by variant %q", d.Name, v.ID)
			}
		}
	}
	r.sortedUnique("/variants", ids, "variant id")
	for i, v := range w.Variables {
		if !used[v.Name] {
			r.add(ptr("variables", i, "name"), "variable %q is declared but never used", v.Name)
		}
	}

	if w.Determinism.Seed == nil && w.Kind != contract.KindEnvironment {
		r.add("/determinism/seed", "seed may be null only for kind environment, not %s", w.Kind)
	}
	if w.ComparisonPolicy == nil && w.Kind != contract.KindEnvironment && w.Kind != contract.KindSoak {
		r.add("/comparison_policy", "comparison_policy may be null only for kinds environment and soak, not %s", w.Kind)
	}
	if w.ComparisonPolicy != nil {
		r.comparison(w)
	}
	return r.out
}

func (r *rules) variable(base string, v contract.Variable) {
	c := v.Constraints
	if v.Required && v.Default != nil {
		r.add(base+"/default", "a required variable has default null")
	}
	if v.Default != nil && !valueHasType(v.Default, string(v.Type)) {
		r.add(base+"/default", "default %v is not of type %s", v.Default, v.Type)
	}
	numeric := v.Type == "integer" || v.Type == "number"
	if !numeric && (c.Minimum != nil || c.Maximum != nil) {
		r.add(base+"/constraints", "minimum and maximum apply only to integer and number variables")
	}
	if c.Minimum != nil && c.Maximum != nil && *c.Minimum > *c.Maximum {
		r.add(base+"/constraints/minimum", "minimum %v is greater than maximum %v", *c.Minimum, *c.Maximum)
	}
	var re *regexp.Regexp
	if c.Pattern != nil {
		if v.Type != "string" {
			r.add(base+"/constraints/pattern", "pattern applies only to string variables")
		} else if x, err := regexp.Compile(`^(?:` + *c.Pattern + `)$`); err != nil {
			r.add(base+"/constraints/pattern", "pattern does not compile: %v", err)
		} else {
			re = x
		}
	}
	for i, a := range c.AllowedValues {
		if !valueHasType(a, string(v.Type)) {
			r.add(fmt.Sprintf("%s/constraints/allowed_values/%d", base, i), "allowed value %v is not of type %s", a, v.Type)
		}
	}
	if !sort.SliceIsSorted(c.AllowedValues, func(i, j int) bool { return lessValue(c.AllowedValues[i], c.AllowedValues[j]) }) {
		r.add(base+"/constraints/allowed_values", "allowed_values must be sorted")
	}
	if v.Default != nil {
		if msg := ValueViolation(v, v.Default, re); msg != "" {
			r.add(base+"/default", "default %s", msg)
		}
	}
}

// ValueViolation says why value breaks a variable's constraints, or returns "" when it does not.
// re is the compiled full-match pattern, or nil to compile it from the constraints.
func ValueViolation(v contract.Variable, value any, re *regexp.Regexp) string {
	c := v.Constraints
	if len(c.AllowedValues) > 0 {
		ok := false
		for _, a := range c.AllowedValues {
			if fmt.Sprint(a) == fmt.Sprint(value) {
				ok = true
			}
		}
		if !ok {
			return fmt.Sprintf("%v is not one of %v", value, c.AllowedValues)
		}
	}
	if f, ok := number(value); ok {
		if c.Minimum != nil && f < *c.Minimum {
			return fmt.Sprintf("%v is below minimum %v", value, *c.Minimum)
		}
		if c.Maximum != nil && f > *c.Maximum {
			return fmt.Sprintf("%v is above maximum %v", value, *c.Maximum)
		}
	}
	if s, ok := value.(string); ok && c.Pattern != nil {
		if re == nil {
			var err error
			if re, err = regexp.Compile(`^(?:` + *c.Pattern + `)$`); err != nil {
				return "cannot be checked: pattern does not compile"
			}
		}
		if !re.MatchString(s) {
			return fmt.Sprintf("%q does not match pattern %q", s, *c.Pattern)
		}
	}
	return ""
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case interface{ Float64() (float64, error) }:
		f, err := x.Float64()
		return f, err == nil
	}
	return 0, false
}

func valueHasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := number(v)
		return ok
	case "integer":
		f, ok := number(v)
		return ok && f == math.Trunc(f) && !strings.ContainsAny(fmt.Sprint(v), ".eE")
	}
	return false
}

func lessValue(a, b any) bool {
	fa, oka := number(a)
	fb, okb := number(b)
	if oka && okb {
		return fa <= fb
	}
	return fmt.Sprint(a) <= fmt.Sprint(b)
}

func (r *rules) variant(base string, w *contract.WorkloadDoc, v contract.Variant, declared map[string]contract.Variable) map[string]bool {
	used := map[string]bool{}
	if v.Backend != contract.BackendCPU && v.DeviceRequirement != contract.VariantDeviceRequirementRequired {
		r.add(base+"/device_requirement", "backend %s needs device_requirement required", v.Backend)
	}
	caseIDs := map[string]int{}
	var wall, servingCases int64
	for i, c := range v.Cases {
		cb := fmt.Sprintf("%s/cases/%d", base, i)
		if j, dup := caseIDs[c.ID]; dup {
			r.add(cb+"/id", "case id %q repeats %s/cases/%d", c.ID, base, j)
		}
		caseIDs[c.ID] = i
		wall += c.TimeoutSeconds
		switch c.Kind {
		case contract.CaseKindCommand:
			r.commandCase(cb, w, c, declared, used)
		case contract.CaseKindServing:
			servingCases++
			r.servingCase(cb, c)
		case contract.CaseKindDriver:
			r.driverCase(cb, c, declared, used)
		}
	}
	reps := w.Determinism.Repetitions
	if reps*wall > MaxDeclaredWallSeconds {
		r.add(base+"/cases", "repetitions × case timeouts = %d s exceeds %d s", reps*wall, MaxDeclaredWallSeconds)
	}
	if reps*int64(len(v.Cases)) > MaxCaseExecutions {
		r.add(base+"/cases", "repetitions × cases = %d executions exceeds %d", reps*int64(len(v.Cases)), MaxCaseExecutions)
	}
	want := "forbidden"
	if servingCases > 0 {
		want = "loopback"
	}
	if string(w.Determinism.NetworkAccess) != want {
		r.add("/determinism/network_access", "variant %q needs network_access %q (serving cases use loopback only; command cases get no network)", v.ID, want)
	}
	return used
}

func (r *rules) commandCase(cb string, w *contract.WorkloadDoc, c contract.Case, declared map[string]contract.Variable, used map[string]bool) {
	r.argv(cb+"/command", c.Command)
	seedIn := map[contract.DeterminismSeedDelivery]bool{}
	use := func(p string, v string, surface contract.DeterminismSeedDelivery) {
		names, whole := placeholders(v)
		if !whole {
			r.add(p, "a placeholder must be a whole value, e.g. \"${name}\", not %q", v)
			return
		}
		for _, n := range names {
			if n == "seed" {
				seedIn[surface] = true
			}
			if _, ok := declared[n]; ok {
				used[n] = true
			} else if n != "seed" && n != "model_path" {
				r.add(p, "placeholder ${%s} names no declared variable", n)
			}
		}
	}
	for j, a := range c.Command {
		use(fmt.Sprintf("%s/command/%d", cb, j), a, contract.DeterminismSeedDeliveryArgv)
	}
	keys := make([]string, 0, len(c.Environment))
	for k := range c.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		p := cb + "/environment/" + jsonstrict.EscapePointerToken(k)
		if strings.HasPrefix(k, "QUALKIT_") {
			r.add(p, "%s is owned by the runner and cannot be set by a case", k)
		}
		use(p, c.Environment[k], contract.DeterminismSeedDeliveryEnvironment)
	}
	if d := w.Determinism.SeedDelivery; (d == contract.DeterminismSeedDeliveryArgv || d == contract.DeterminismSeedDeliveryEnvironment) && !seedIn[d] {
		r.add(cb, "seed_delivery %s needs the ${seed} placeholder in the case's %s", d, d)
	}
	if !sort.SliceIsSorted(c.ExpectedExitCodes, func(i, j int) bool { return c.ExpectedExitCodes[i] < c.ExpectedExitCodes[j] }) {
		r.add(cb+"/expected_exit_codes", "expected_exit_codes must be ascending")
	}
	for j, a := range c.OutputAssertions {
		if _, err := regexp.Compile(a.Pattern); err != nil {
			r.add(fmt.Sprintf("%s/output_assertions/%d/pattern", cb, j), "pattern does not compile: %v", err)
		}
	}
	if rp := c.ResultProtocol; rp != nil {
		r.sortedUnique(cb+"/result_protocol/declared_metrics", rp.DeclaredMetrics, "metric name")
		runner := map[string]bool{}
		for _, m := range RunnerMetrics {
			runner[m] = true
		}
		hasPass := false
		for j, m := range rp.DeclaredMetrics {
			mp := fmt.Sprintf("%s/result_protocol/declared_metrics/%d", cb, j)
			hasPass = hasPass || m == "case_pass"
			if rp.Producer == contract.ResultProtocolProducerRunner && !runner[m] {
				r.add(mp, "a runner-produced case declares only runner metrics %v, not %q", RunnerMetrics, m)
			}
			if rp.Producer == contract.ResultProtocolProducerCommand && runner[m] {
				r.add(mp, "runner metric %q cannot be declared by a command-produced case", m)
			}
		}
		if rp.Producer == contract.ResultProtocolProducerRunner && !hasPass {
			r.add(cb+"/result_protocol/declared_metrics", "a runner-produced case must declare case_pass")
		}
	}
}

func (r *rules) servingCase(cb string, c contract.Case) {
	if im := c.Images; im != nil {
		if c.API == contract.ServingCaseAPICompletions {
			r.add(cb+"/images", "images need a chat or responses api: completions take a text prompt")
		}
		if c.RunsSessions() {
			r.add(cb+"/images", "images are not sent in multi-turn sessions: use an inline, file, synthetic or trace corpus")
		}
		if px := im.Count * im.Width * im.Height; px > MaxImagePixels {
			r.add(cb+"/images", "%d images of %dx%d are %d pixels a request, over %d: send fewer or smaller images", im.Count, im.Width, im.Height, px, MaxImagePixels)
		}
	}
	if c.API == contract.ServingCaseAPIResponses && c.Sampling != nil && len(c.Sampling.Stop) > 0 {
		r.add(cb+"/sampling/stop", "the Responses API (api responses) takes no stop strings: remove sampling.stop or use api chat")
	}
	r.capacityCase(cb, c)
	r.traceCorpus(cb, c)
	r.sharedPrefixTokens(cb, c)
	prompts := map[string]bool{}
	corpusSize := int64(0)
	if c.Corpus != nil {
		switch c.Corpus.Source {
		case contract.CorpusSourceInline:
			ids := make([]string, len(c.Corpus.Prompts))
			for i, p := range c.Corpus.Prompts {
				ids[i] = p.ID
				if prompts[p.ID] {
					r.add(fmt.Sprintf("%s/corpus/prompts/%d/id", cb, i), "prompt id %q repeats", p.ID)
				}
				prompts[p.ID] = true
			}
			corpusSize = int64(len(ids))
		case contract.CorpusSourceSynthetic:
			corpusSize = c.Corpus.Count
			if pw := c.Corpus.PromptWords; pw != nil {
				r.minMax(cb+"/corpus/prompt_words", pw.Min, pw.Max)
			}
			if pt := c.Corpus.PromptTokens; pt != nil {
				r.minMax(cb+"/corpus/prompt_tokens", pt.Min, pt.Max)
			}
			if c.Corpus.PromptTokens != nil && c.Tokenizer == nil {
				r.add(cb+"/corpus/prompt_tokens", "prompt_tokens needs a tokenizer to count with: bind one in the case's tokenizer")
			}
		case contract.CorpusSourceFile:
			corpusSize = 1 // the file's size is checked when it is read
		default:
			corpusSize = r.sessionCorpus(cb, c)
		}
	}
	r.toolResults(cb, c)
	rows := int64(len(c.Concurrency))
	if c.CapacitySearch != nil { // a search runs up to max_steps rows
		rows = c.CapacitySearch.MaxSteps
	}
	// A warm row's priming pass asks each prompt its measured requests ask once more (at most
	// one per measured request).
	primed := int64(1)
	if c.CacheRegime == contract.CacheRegimeWarm {
		primed = 2
	}
	if c.Requests != nil {
		if total := rows * c.Repetitions * (primed*(*c.Requests) + c.WarmupRequests); total > MaxServingRequests {
			r.add(cb+"/requests", "rows × repetitions × (requests + priming + warmup) = %d requests exceeds %d", total, MaxServingRequests)
		}
	} else if total := rows * c.Repetitions * (primed*corpusSize + c.WarmupRequests); total > MaxServingRequests {
		r.add(cb, "rows × repetitions × (corpus + priming + warmup) = %d requests exceeds %d", total, MaxServingRequests)
	}
	if c.SLO != nil && (c.SLO.TTFTMs > 0 || c.SLO.ICLMs > 0) && !c.Stream {
		r.add(cb+"/stream", "TTFT and inter-event SLO gates need stream true")
	}
	for j, a := range c.OutputAssertions {
		ap := fmt.Sprintf("%s/output_assertions/%d", cb, j)
		switch a.Kind {
		case contract.ResponseAssertionKindExactText:
			if a.PromptID != "" && !prompts[a.PromptID] {
				r.add(ap+"/prompt_id", "prompt_id %q names no prompt of an inline corpus", a.PromptID)
			}
		case contract.ResponseAssertionKindRegex:
			if _, err := regexp.Compile(a.Pattern); err != nil {
				r.add(ap+"/pattern", "pattern does not compile: %v", err)
			}
		case contract.ResponseAssertionKindCompletionTokensEqualMaxTokens:
			if c.Sampling == nil || !c.Sampling.IgnoreEOS {
				r.add(ap, "completion_tokens_equal_max_tokens needs sampling.ignore_eos true")
			}
		}
	}
}

func (r *rules) comparison(w *contract.WorkloadDoc) {
	p := w.ComparisonPolicy
	variants := map[string]bool{}
	cases := map[string]bool{}
	for _, v := range w.Variants {
		variants[v.ID] = true
		for _, c := range v.Cases {
			cases[c.ID] = true
		}
	}
	for i, vp := range p.VariantPairs {
		for field, id := range map[string]string{"baseline_variant_id": vp.BaselineVariantID, "candidate_variant_id": vp.CandidateVariantID} {
			if !variants[id] {
				r.add(ptr("comparison_policy", "variant_pairs", i, field), "variant %q is not declared", id)
			}
		}
	}
	for i, bp := range p.BackendPairs {
		for field, id := range map[string]string{"variant_a_id": bp.VariantAID, "variant_b_id": bp.VariantBID} {
			if !variants[id] {
				r.add(ptr("comparison_policy", "backend_pairs", i, field), "variant %q is not declared", id)
			}
		}
	}
	for i, m := range p.MetricRules {
		if !cases[m.ResultID] {
			r.add(ptr("comparison_policy", "metric_rules", i, "result_id"), "case %q is not declared by any variant", m.ResultID)
		}
		if p.Mode == "cross_backend_correctness" && m.MetricClass != contract.MetricRuleMetricClassCorrectness {
			r.add(ptr("comparison_policy", "metric_rules", i, "metric_class"), "cross-backend comparison allows only correctness metrics")
		}
		r.statisticalRule(i, m)
	}
}

// statisticalRule: not_worse_significantly tests per-request samples, so it needs a row-scoped
// performance rule over a per-request distribution formula with a direction, and a confidence;
// the exact operators take no confidence (correctness rules stay exact).
func (r *rules) statisticalRule(i int, m contract.MetricRule) {
	at := func(field string) string { return ptr("comparison_policy", "metric_rules", i, field) }
	if m.Operator != contract.MetricRuleOperatorNotWorseSignificantly {
		if m.Confidence != nil {
			r.add(at("confidence"), "confidence is for the statistical operator %s only; the exact operator %s takes none: remove it", contract.MetricRuleOperatorNotWorseSignificantly, m.Operator)
		}
		return
	}
	if m.Confidence == nil {
		r.add(at("confidence"), "%s needs a confidence level (e.g. 0.95)", m.Operator)
	}
	if m.MetricClass != contract.MetricRuleMetricClassPerformance {
		r.add(at("metric_class"), "%s is a performance operator; a correctness rule compares exactly (equal, not_greater, not_less)", m.Operator)
	}
	if m.Scope != contract.MetricRuleScopeRow {
		r.add(at("scope"), "%s tests the per-request samples of a row: use scope row", m.Operator)
	}
	if !metric.HasPerRequest(m.Formula) {
		r.add(at("formula"), "%s needs a per-request distribution formula (ttft.v1, e2e.v1, tpot.v1, ...); %s has no per-request samples", m.Operator, m.Formula)
	}
	if m.Direction != contract.DirectionLowerIsBetter && m.Direction != contract.DirectionHigherIsBetter {
		r.add(at("direction"), "%s needs a direction (lower_is_better or higher_is_better) to know which change is worse", m.Operator)
	}
}

func CheckLaunchRecipe(l *contract.LaunchRecipeDoc) []Problem {
	r := &rules{}
	r.argv("/command", l.Command)
	for i, a := range l.Command {
		if strings.Contains(a, "${") {
			r.add(ptr("command", i), "launch recipes take no placeholders: %q", a)
		}
	}
	if !sort.SliceIsSorted(l.AcceptableExitCodes, func(i, j int) bool { return l.AcceptableExitCodes[i] < l.AcceptableExitCodes[j] }) {
		r.add("/acceptable_exit_codes", "acceptable_exit_codes must be ascending")
	}
	pass := map[string]bool{}
	for _, n := range l.EnvironmentPassthrough {
		pass[n] = true
	}
	keys := make([]string, 0, len(l.Environment))
	for k := range l.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if pass[k] {
			r.add(ptr("environment", k), "%s is both declared and passed through: choose one", k)
		}
		if contract.LooksSecret(k) {
			r.add(ptr("environment", k), "%s looks like a secret: never commit it in a recipe; list it in environment_passthrough, where only its digest is recorded", k)
		}
	}
	passed := map[string]bool{}
	for _, n := range l.EnvironmentPassthrough {
		passed[n] = true
	}
	for i, n := range l.SecretEnvironment {
		if _, ok := l.Environment[n]; ok {
			r.add(ptr("secret_environment", i), "%s is declared secret but set as a literal in environment: a secret is never committed in a recipe; remove it from environment and list it in environment_passthrough", n)
		} else if !passed[n] {
			r.add(ptr("secret_environment", i), "%s is declared secret but not in environment_passthrough: list it there (the server gets a secret only from qualrun's environment)", n)
		}
	}
	if name := l.TokenEnv(); name != "" {
		if _, ok := l.Environment[name]; ok {
			r.add("/auth/token_env", "%s is also set as a literal in environment: a bearer token is never committed in a recipe; remove it from environment and set it in qualrun's environment (list it in environment_passthrough if the server reads it too)", name)
		}
	}
	if u, err := url.Parse(l.BaseURL); err != nil {
		r.add("/base_url", "cannot parse: %v", err)
	} else {
		if p, err := strconv.Atoi(u.Port()); err != nil || p < 1 || p > 65535 {
			r.add("/base_url", "port %q is not in 1..65535", u.Port())
		}
		if ip := net.ParseIP(u.Hostname()); u.Hostname() != "localhost" && (ip == nil || !ip.IsLoopback()) {
			r.add("/base_url", "host %q is not a loopback address", u.Hostname())
		}
	}
	return r.out
}

func CheckCaseResult(c *contract.CaseResultDoc) []Problem {
	r := &rules{}
	r.uniqueMetrics("/metrics", c.Metrics)
	failed := false
	for i, row := range c.Rows {
		if row.Successes+row.Failures != row.Requests {
			r.add(ptr("rows", i), "successes %d + failures %d != requests %d", row.Successes, row.Failures, row.Requests)
		}
		// At most the failures a stop rule's measurement excuses: whether the case declares its
		// stop as the measurement is the workload's, which qualverify checks.
		failed = failed || row.Failures > metric.ExcusedFailures(row, true)
		if e := row.Ended; e != nil && e.Cut > row.Failures {
			r.add(ptr("rows", i, "ended", "cut"), "cut %d exceeds the row's failures %d: a cut request is a failed one", e.Cut, row.Failures)
		}
		r.uniqueMetrics(ptr("rows", i, "metrics"), row.Metrics)
	}
	if c.Status == contract.StatusPassed && failed {
		r.add("/status", "status passed with a failed request in a row")
	}
	return r.out
}

func (r *rules) uniqueMetrics(base string, ms []contract.Metric) {
	seen := map[string]bool{}
	for i, m := range ms {
		if seen[m.Name] {
			r.add(fmt.Sprintf("%s/%d/name", base, i), "metric name %q repeats", m.Name)
		}
		seen[m.Name] = true
	}
}

func CheckRequestRecord(q *contract.RequestRecordDoc) []Problem {
	r := &rules{}
	if u := q.Usage; u != nil && u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		r.add("/usage/total_tokens", "total_tokens %d != prompt_tokens %d + completion_tokens %d", u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
	if u := q.Usage; u != nil && u.ReasoningTokens != nil && *u.ReasoningTokens > u.CompletionTokens {
		r.add("/usage/reasoning_tokens", "reasoning_tokens %d > completion_tokens %d: reasoning is counted inside the completion", *u.ReasoningTokens, u.CompletionTokens)
	}
	for i := 1; i < len(q.Events); i++ {
		if q.Events[i].TNs < q.Events[i-1].TNs {
			r.add(ptr("events", i, "t_ns"), "event times must not decrease")
		}
	}
	r.sessionRecord(q)
	if q.TSendNs != nil && *q.TSendNs < q.TSchedNs {
		r.add("/t_send_ns", "t_send_ns is before t_sched_ns")
	}
	if q.TSentNs != nil && (q.TSendNs == nil || *q.TSentNs < *q.TSendNs) {
		r.add("/t_sent_ns", "t_sent_ns needs t_send_ns and is not before it: the write returns after it began")
	}
	if q.Error == nil && (q.Usage == nil || q.TSendNs == nil || q.TEndNs == nil) {
		r.add("/error", "a request without error needs t_send_ns, t_end_ns and usage")
	}
	return r.out
}

func CheckLifecycleRecord(l *contract.LifecycleRecordDoc) []Problem {
	r := &rules{}
	if l.Launch != nil {
		for i, e := range l.Launch.Environment {
			switch {
			case e.Redacted && e.Value != nil:
				r.add(fmt.Sprintf("/launch/environment/%d/value", i), "%s is redacted but its value is recorded", e.Name)
			case !e.Redacted && e.Value == nil:
				r.add(fmt.Sprintf("/launch/environment/%d/value", i), "%s is not redacted: its value is recorded", e.Name)
			}
		}
	}
	if (l.Verdict == contract.RecordVerdictPassed) != (len(l.Failures) == 0) {
		r.add("/verdict", "verdict %s does not match %d failures", l.Verdict, len(l.Failures))
	}
	if l.Verdict == contract.RecordVerdictPassed {
		switch {
		case l.Launch == nil || l.Readiness == nil || l.Listener == nil || l.Shutdown == nil:
			r.add("/verdict", "a passed lifecycle record needs launch, readiness, listener and shutdown")
		case !l.Readiness.Ready:
			r.add("/readiness/ready", "passed without readiness")
		case !l.Listener.Owned:
			r.add("/listener/owned", "passed with an unowned listener")
		case l.Shutdown.Forced:
			r.add("/shutdown/forced", "passed with a forced shutdown")
		case !l.Shutdown.Acceptable:
			r.add("/shutdown/acceptable", "passed with an unacceptable exit")
		}
		if !l.Port.FreeBeforeLaunch {
			r.add("/port/free_before_launch", "passed with the port taken before launch")
		}
		if len(l.Residue.Processes) > 0 || len(l.Residue.Listeners) > 0 {
			r.add("/residue", "passed with residue")
		}
	}
	return r.out
}

func CheckReceipt(rc *contract.ReceiptDoc) []Problem {
	r := &rules{}
	type key struct {
		id  string
		rep int64
	}
	seen := map[key]bool{}
	requiredFailed := false
	for i, res := range rc.Results {
		k := key{res.ID, res.Repetition}
		if seen[k] {
			r.add(ptr("results", i), "result %q repetition %d repeats", res.ID, res.Repetition)
		}
		seen[k] = true
		if res.Required && res.Status != contract.StatusPassed {
			requiredFailed = true
		}
		r.uniqueMetrics(ptr("results", i, "metrics"), res.Metrics)
	}
	r.uniqueMetrics("/metrics", rc.Metrics)
	q := rc.Qualification
	start, err1 := time.Parse(time.RFC3339Nano, q.StartedAt)
	end, err2 := time.Parse(time.RFC3339Nano, q.FinishedAt)
	if err1 == nil && err2 == nil {
		// A declared wall-clock step explains a difference between the wall-clock span and the
		// monotonic duration (a backwards step can put finished_at before started_at); a step
		// within the tolerance is not one to declare.
		step := q.WallClockStepSeconds
		d := end.Sub(start).Seconds()
		switch {
		case step != 0 && math.Abs(step) <= MaxDurationSkewSeconds:
			r.add("/qualification/wall_clock_step_seconds", "a wall-clock step of %.3f s is declared, but steps within %.0f s are not declared", step, MaxDurationSkewSeconds)
		case step == 0 && end.Before(start):
			r.add("/qualification/finished_at", "finished_at is before started_at")
		case math.Abs(d-step-q.DurationSeconds) > MaxDurationSkewSeconds && step == 0:
			r.add("/qualification/duration_seconds", "duration %.3f s differs from finished − started = %.3f s by more than %.0f s", q.DurationSeconds, d, MaxDurationSkewSeconds)
		case math.Abs(d-step-q.DurationSeconds) > MaxDurationSkewSeconds:
			r.add("/qualification/duration_seconds", "duration %.3f s differs from finished − started − the declared wall-clock step = %.3f − %.3f s by more than %.0f s", q.DurationSeconds, d, step, MaxDurationSkewSeconds)
		}
	}
	if created, err := time.Parse(time.RFC3339Nano, rc.CreatedAt); err == nil && err2 == nil && created.Before(end) {
		r.add("/created_at", "created_at is before qualification.finished_at")
	}
	type artifactKey struct{ kind, path string }
	arts := map[artifactKey]bool{}
	for i, a := range rc.Artifacts {
		k := artifactKey{string(a.Kind), a.Path}
		if arts[k] {
			r.add(ptr("artifacts", i), "artifact %s %s repeats", a.Kind, a.Path)
		}
		arts[k] = true
	}
	lifecycleFailed := rc.Lifecycle != nil && rc.Lifecycle.Verdict == contract.LifecycleRefVerdictFailed
	if q.Verdict == contract.QualificationVerdictPassed {
		if !rc.Source.Clean {
			r.add("/qualification/verdict", "a passed receipt needs a clean source tree")
		}
		if requiredFailed {
			r.add("/qualification/verdict", "a passed receipt has a failed or skipped required result")
		}
		if lifecycleFailed {
			r.add("/qualification/verdict", "a passed receipt has a failed lifecycle")
		}
	} else if q.Verdict == contract.QualificationVerdictInterrupted {
		if q.Interruption == nil {
			r.add("/qualification/interruption", "an interrupted receipt names the signal and the phase (interruption)")
		}
	} else if !requiredFailed && !lifecycleFailed {
		r.add("/qualification/verdict", "a failed receipt needs a failed or skipped required result or a failed lifecycle")
	}
	if q.Interruption != nil && q.Verdict != contract.QualificationVerdictInterrupted {
		r.add("/qualification/interruption", "interruption is only for an interrupted receipt, not a %s one", q.Verdict)
	}
	if rc.Publishable {
		if q.Verdict != contract.QualificationVerdictPassed || !rc.Source.Clean || rc.Source.OriginMain == nil || *rc.Source.OriginMain != rc.Source.Commit {
			r.add("/publishable", "publishable needs a passed verdict, a clean source and origin_main == commit")
		}
		if len(rc.UnpublishableReasons) > 0 {
			r.add("/unpublishable_reasons", "a publishable receipt has no unpublishable reasons")
		}
	} else if len(rc.UnpublishableReasons) == 0 {
		r.add("/unpublishable_reasons", "say why the receipt is not publishable")
	}
	r.devices(rc.Environment)
	return r.out
}

// CheckOrder is the protocol order of publication checks.
var CheckOrder = []string{"schemas", "source", "hashes", "signature", "cleanup", "tolerances", "comparability", "scope"}

func CheckReport(rep *contract.VerificationReportDoc) []Problem {
	r := &rules{}
	last := -1
	findings := 0
	for i, c := range rep.Checks {
		at := -1
		for j, n := range CheckOrder {
			if n == string(c.Name) {
				at = j
			}
		}
		if at <= last {
			r.add(ptr("checks", i, "name"), "check %q is out of protocol order or repeated", c.Name)
		}
		last = at
		findings += len(c.Findings)
		for j, f := range c.Findings {
			if f.Check != c.Name {
				r.add(ptr("checks", i, "findings", j, "check"), "finding of check %q filed under %q", f.Check, c.Name)
			}
		}
	}
	if (rep.Verdict == contract.ReportVerdictVerified) != (findings == 0) {
		r.add("/verdict", "verdict %s does not match %d findings", rep.Verdict, findings)
	}
	return r.out
}

func CheckRuntimeManifest(m *contract.RuntimeManifestDoc) []Problem {
	r := &rules{}
	names := make([]string, len(m.Packages))
	for i, p := range m.Packages {
		names[i] = p.Name
	}
	r.sortedUnique("/packages", names, "package name")
	return r.out
}
