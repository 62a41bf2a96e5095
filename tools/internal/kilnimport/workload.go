package kilnimport

import (
	"encoding/json"
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Kiln's workload v1 (qualification/schema/workload-v1.schema.json): closed objects. Its
// determinism and variables are qualkit's; its variants are qualkit's with command cases that
// lack the kind member.
type kilnWorkload struct {
	SchemaVersion    json.Number           `json:"schema_version"`
	WorkloadID       string                `json:"workload_id"`
	Kind             contract.Kind         `json:"kind"`
	Description      string                `json:"description"`
	Determinism      contract.Determinism  `json:"determinism"`
	Variables        []contract.Variable   `json:"variables"`
	Variants         []variant[kilnCase]   `json:"variants"`
	ComparisonPolicy *kilnComparisonPolicy `json:"comparison_policy"`
}

// variant is a workload variant with cases of type C: Kiln's (kilnCase) and the converted command
// cases (commandCase) share every other member.
type variant[C any] struct {
	ID                string                            `json:"id"`
	Description       string                            `json:"description"`
	Backend           contract.Backend                  `json:"backend"`
	DeviceRequirement contract.VariantDeviceRequirement `json:"device_requirement"`
	SkipPolicy        contract.VariantSkipPolicy        `json:"skip_policy"`
	EffectiveConfig   contract.Config                   `json:"effective_config"`
	Cases             []C                               `json:"cases"`
}

// kilnCase is a Kiln case: a qualkit command case without the kind member.
type kilnCase struct {
	ID                string                     `json:"id"`
	Description       string                     `json:"description"`
	Required          bool                       `json:"required"`
	Command           []string                   `json:"command"`
	WorkingDirectory  string                     `json:"working_directory"`
	Environment       map[string]string          `json:"environment"`
	TimeoutSeconds    int64                      `json:"timeout_seconds"`
	ExpectedExitCodes []int64                    `json:"expected_exit_codes"`
	OutputAssertions  []contract.OutputAssertion `json:"output_assertions"`
	ResultProtocol    contract.ResultProtocol    `json:"result_protocol"`
}

type kilnComparisonPolicy struct {
	Mode         contract.ComparisonPolicyMode `json:"mode"`
	VariantPairs []contract.VariantPair        `json:"variant_pairs"`
	BackendPairs []contract.BackendPair        `json:"backend_pairs"`
	MetricRules  []kilnMetricRule              `json:"metric_rules"`
}

type kilnMetricRule struct {
	Scope             contract.MetricRuleScope       `json:"scope"`
	ResultID          string                         `json:"result_id"`
	Metric            string                         `json:"metric"`
	MetricClass       contract.MetricRuleMetricClass `json:"metric_class"`
	Unit              string                         `json:"unit"`
	Aggregation       contract.Aggregation           `json:"aggregation"`
	LowerIsBetter     bool                           `json:"lower_is_better"`
	Operator          contract.MetricRuleOperator    `json:"operator"`
	AbsoluteTolerance float64                        `json:"absolute_tolerance"`
	RelativeTolerance float64                        `json:"relative_tolerance"`
	Required          bool                           `json:"required"`
}

// Kiln's case-result protocol, and qualkit's.
const (
	kilnResultFormat = "qualification-case-result-v1"
	kilnResultEnv    = "KILN_QUALIFICATION_CASE_RESULT"
	resultFormat     = contract.ResultProtocolFormat
	resultEnv        = "QUALKIT_CASE_RESULT"
)

// workloadDoc is qualkit.workload.v1 with command cases written whole: contract.Case omits an
// empty environment, which a command case requires, so the converted cases are Kiln's cases with
// the kind member first (commandCase), not contract.Case.
type workloadDoc struct {
	Schema           string                     `json:"schema"`
	ID               string                     `json:"id"`
	Kind             contract.Kind              `json:"kind"`
	Description      string                     `json:"description"`
	Determinism      contract.Determinism       `json:"determinism"`
	Variables        []contract.Variable        `json:"variables"`
	Variants         []variant[commandCase]     `json:"variants"`
	ComparisonPolicy *contract.ComparisonPolicy `json:"comparison_policy"`
}

// commandCase is a converted command case: kind "command", then Kiln's members.
type commandCase struct {
	Kind contract.CaseKind `json:"kind"`
	kilnCase
}

func convertWorkload(raw []byte) (*Result, error) {
	var k kilnWorkload
	if err := strictDecode(raw, &k); err != nil {
		return nil, err
	}
	if k.SchemaVersion.String() != "1" {
		return nil, fmt.Errorf("schema_version %s: only Kiln workload version 1 is imported", k.SchemaVersion)
	}
	var m []Mapping
	add := func(from, to, note string) { m = append(m, Mapping{From: from, To: to, Note: note}) }
	out := workloadDoc{Schema: contract.WorkloadSchema, ID: k.WorkloadID, Kind: k.Kind, Description: k.Description,
		Determinism: k.Determinism, Variables: k.Variables}
	add("/schema_version", "/schema", `1 becomes "qualkit.workload.v1"`)
	add("/workload_id", "/id", "same value")
	add("/kind", "/kind", "same value")
	add("/description", "/description", "same value")
	add("/determinism", "/determinism", "same members and values (network_access forbidden: command cases get no network)")
	add("/variables", "/variables", "same typed variables and constraints")
	if out.Variables == nil {
		out.Variables = []contract.Variable{}
	}
	for i, v := range k.Variants {
		vp := fmt.Sprintf("/variants/%d", i)
		ov := variant[commandCase]{ID: v.ID, Description: v.Description, Backend: v.Backend, DeviceRequirement: v.DeviceRequirement,
			SkipPolicy: v.SkipPolicy, EffectiveConfig: v.EffectiveConfig}
		if ov.EffectiveConfig == nil {
			ov.EffectiveConfig = contract.Config{}
		}
		add(vp, vp, "id, description, backend, device_requirement, skip_policy and effective_config kept as they are")
		for j, c := range v.Cases {
			cp := fmt.Sprintf("%s/cases/%d", vp, j)
			if c.Environment == nil {
				c.Environment = map[string]string{}
			}
			rp := &c.ResultProtocol
			if rp.Format != kilnResultFormat || rp.PathEnvironmentVariable != kilnResultEnv {
				return nil, fmt.Errorf("%s/result_protocol: format %q with %s: want Kiln's %q with %s", cp, rp.Format, rp.PathEnvironmentVariable, kilnResultFormat, kilnResultEnv)
			}
			rp.Format, rp.PathEnvironmentVariable = resultFormat, resultEnv
			if rp.DeclaredMetrics == nil {
				rp.DeclaredMetrics = []string{}
			}
			if c.OutputAssertions == nil {
				c.OutputAssertions = []contract.OutputAssertion{}
			}
			ov.Cases = append(ov.Cases, commandCase{Kind: contract.CaseKindCommand, kilnCase: c})
			add(cp, cp+"/kind", `a Kiln case is a command case: kind "command"; its other members are kept`)
			add(cp+"/result_protocol/format", cp+"/result_protocol/format", fmt.Sprintf("%q becomes %q (the same members)", kilnResultFormat, resultFormat))
			add(cp+"/result_protocol/path_environment_variable", cp+"/result_protocol/path_environment_variable",
				fmt.Sprintf("%s becomes %s: a command that writes its result must read the path from $%s", kilnResultEnv, resultEnv, resultEnv))
		}
		out.Variants = append(out.Variants, ov)
	}
	if cp := k.ComparisonPolicy; cp != nil {
		pol := &contract.ComparisonPolicy{Mode: cp.Mode, VariantPairs: cp.VariantPairs, BackendPairs: cp.BackendPairs, MetricRules: []contract.MetricRule{}}
		if pol.VariantPairs == nil {
			pol.VariantPairs = []contract.VariantPair{}
		}
		if pol.BackendPairs == nil {
			pol.BackendPairs = []contract.BackendPair{}
		}
		add("/comparison_policy", "/comparison_policy", "mode, variant_pairs and backend_pairs kept")
		for i, r := range cp.MetricRules {
			rp := fmt.Sprintf("/comparison_policy/metric_rules/%d", i)
			dir := contract.DirectionHigherIsBetter
			if r.LowerIsBetter {
				dir = contract.DirectionLowerIsBetter
			}
			formula := "kiln." + r.Metric + ".v1"
			pol.MetricRules = append(pol.MetricRules, contract.MetricRule{Scope: r.Scope, ResultID: r.ResultID, Metric: r.Metric,
				MetricClass: r.MetricClass, Unit: r.Unit, Aggregation: r.Aggregation, Direction: dir, Formula: formula,
				Operator: r.Operator, AbsoluteTolerance: r.AbsoluteTolerance, RelativeTolerance: r.RelativeTolerance, Required: r.Required})
			add(rp+"/lower_is_better", rp+"/direction", fmt.Sprintf("%v becomes %q", r.LowerIsBetter, dir))
			add(rp, rp+"/formula", fmt.Sprintf("Kiln rules name no formula: %q, which the command's case result must give the metric", formula))
		}
		out.ComparisonPolicy = pol
	} else {
		add("/comparison_policy", "/comparison_policy", "null kept")
	}
	doc, err := encode(out)
	if err != nil {
		return nil, err
	}
	return &Result{Kind: KindWorkload, Contract: contract.Workload, Doc: doc, Mappings: m}, nil
}
