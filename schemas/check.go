package schemas

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

// Outcome is the result of checking one document.
type Outcome struct {
	// Contract is the contract detected from the schema field; zero when none was recognised.
	Contract Contract
	// Violations lists every problem found; empty means the document is valid.
	Violations []Violation
	// Tree is the parsed document (as jsonstrict.Parse returns it) when it parsed as a JSON object
	// of a known contract; nil otherwise.
	Tree map[string]any
}

// Valid reports whether the document had no violation.
func (o Outcome) Valid() bool { return len(o.Violations) == 0 }

// CheckDocument parses data strictly, detects its contract from the schema field, validates it
// against the exported JSON Schema and then against the semantic rules of that contract.
// Historical evidence (Kiln version-1 results carrying a machine-specific temperature policy) is
// refused with one ErrHistorical violation per marker found. The error is non-nil only when the
// check could not be carried out (e.g. the embedded schemas do not compile).
func CheckDocument(data []byte, opts ...jsonstrict.DecodeOption) (Outcome, error) {
	doc, err := jsonstrict.Parse(data, opts...)
	if err != nil {
		var de *jsonstrict.DecodeError
		if errors.As(err, &de) {
			return Outcome{Violations: []Violation{{Pointer: de.Pointer, Err: de}}}, nil
		}
		return Outcome{}, err
	}
	obj, ok := doc.(map[string]any)
	if !ok {
		return Outcome{Violations: []Violation{violationf("", ErrUnknownContract, "the document is not a JSON object")}}, nil
	}
	if markers := HistoricalMarkers(obj); len(markers) > 0 {
		out := Outcome{}
		for _, m := range markers {
			out.Violations = append(out.Violations, violationf(m.Pointer, ErrHistorical, "marker %s: version-1 evidence with a machine-specific temperature policy (kept for audit display only)", m.Name))
		}
		return out, nil
	}
	id, _ := obj["schema"].(string)
	c, ok := Lookup(id)
	if !ok {
		switch {
		case obj["schema"] == nil && obj["schema_version"] != nil:
			return Outcome{Violations: []Violation{violationf("/schema_version", ErrUnknownContract, "a Kiln schema_version document is not a qualkit contract; qualkit contracts carry \"schema\": \"qualkit.<name>.v<major>\"")}}, nil
		case obj["schema"] == nil:
			return Outcome{Violations: []Violation{violationf("/schema", ErrUnknownContract, "missing schema field; known: %s", strings.Join(schemaIDs(), ", "))}}, nil
		default:
			return Outcome{Violations: []Violation{violationf("/schema", ErrUnknownContract, "%v; known: %s", obj["schema"], strings.Join(schemaIDs(), ", "))}}, nil
		}
	}
	out := Outcome{Contract: c, Tree: obj}
	vs, err := ValidateSchema(c.Name, doc)
	if err != nil {
		return Outcome{}, err
	}
	if len(vs) > 0 {
		out.Violations = vs
		return out, nil
	}
	out.Violations, err = CheckSemantics(c.Name, doc)
	return out, err
}

func schemaIDs() []string {
	var ids []string
	for _, c := range Contracts() {
		ids = append(ids, c.SchemaID)
	}
	return ids
}

// CheckSemantics applies the rules of the named contract that its JSON Schema cannot express to a
// parsed document that already satisfies the schema.
func CheckSemantics(name string, doc any) ([]Violation, error) {
	if t, ok := docTypes[name]; ok {
		// JSON Schema's "integer" admits 1.0 and 1e0; CUE and the Go types do not. Say where.
		if vs := integerLiterals(doc, t, ""); len(vs) > 0 {
			return vs, nil
		}
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("re-encode %s document: %w", name, err)
	}
	decode := func(v any) error {
		if err := json.Unmarshal(raw, v); err != nil {
			return fmt.Errorf("decode %s document: %w", name, err)
		}
		return nil
	}
	switch name {
	case contract.Workload:
		var d contract.WorkloadDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckWorkload(&d)), nil
	case contract.LaunchRecipe:
		var d contract.LaunchRecipeDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckLaunchRecipe(&d)), nil
	case contract.CaseResult:
		var d contract.CaseResultDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckCaseResult(&d)), nil
	case contract.RequestRecord:
		var d contract.RequestRecordDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckRequestRecord(&d)), nil
	case contract.TelemetrySample:
		var d contract.TelemetrySampleDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return nil, nil
	case contract.ConversationSession:
		var d contract.ConversationSessionDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return nil, nil
	case contract.LifecycleRecord:
		var d contract.LifecycleRecordDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckLifecycleRecord(&d)), nil
	case contract.Receipt:
		var d contract.ReceiptDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckReceipt(&d)), nil
	case contract.VerificationReport:
		var d contract.VerificationReportDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckReport(&d)), nil
	case contract.RuntimeManifest:
		var d contract.RuntimeManifestDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckRuntimeManifest(&d)), nil
	case contract.DriverSpec:
		var d contract.DriverSpecDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckDriverSpec(&d)), nil
	case contract.DriverRequest:
		var d contract.DriverRequestDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckDriverRequest(&d)), nil
	case contract.DriverWorkerOutput:
		var d contract.DriverWorkerOutputDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckWorkerOutput(&d)), nil
	case contract.NextTokenResult:
		var d contract.NextTokenResultDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckNextTokenResult(doc, &d)), nil
	case contract.PathAttribution:
		var d contract.PathAttributionDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckPathAttribution(doc, &d)), nil
	case contract.LayerAttribution:
		var d contract.LayerAttributionDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckLayerAttribution(doc, &d)), nil
	case contract.ReportView:
		var d contract.ReportViewDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckReportView(&d)), nil
	case contract.Comparison:
		var d contract.ComparisonDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckComparison(&d)), nil
	case contract.FleetPlan:
		var d contract.FleetPlanDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(rules.CheckFleetPlan(&d)), nil
	case contract.EffectiveRunConfig:
		// Every rule of an effective run configuration is in its schema (and the integer check above).
		var d contract.EffectiveRunConfigDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return nil, nil
	case contract.FleetManifest:
		// The manifest's derived members (counts, statistics, outliers) are recomputed from the plan
		// and the receipts by qualverify fleet --check (verify.CheckFleetManifest), not here.
		var d contract.FleetManifestDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownContract, name)
}

// docTypes maps each contract to its Go type.
var docTypes = map[string]reflect.Type{
	contract.Workload:            reflect.TypeFor[contract.WorkloadDoc](),
	contract.LaunchRecipe:        reflect.TypeFor[contract.LaunchRecipeDoc](),
	contract.RuntimeManifest:     reflect.TypeFor[contract.RuntimeManifestDoc](),
	contract.CaseResult:          reflect.TypeFor[contract.CaseResultDoc](),
	contract.RequestRecord:       reflect.TypeFor[contract.RequestRecordDoc](),
	contract.LifecycleRecord:     reflect.TypeFor[contract.LifecycleRecordDoc](),
	contract.Receipt:             reflect.TypeFor[contract.ReceiptDoc](),
	contract.VerificationReport:  reflect.TypeFor[contract.VerificationReportDoc](),
	contract.DriverSpec:          reflect.TypeFor[contract.DriverSpecDoc](),
	contract.DriverRequest:       reflect.TypeFor[contract.DriverRequestDoc](),
	contract.DriverWorkerOutput:  reflect.TypeFor[contract.DriverWorkerOutputDoc](),
	contract.NextTokenResult:     reflect.TypeFor[contract.NextTokenResultDoc](),
	contract.PathAttribution:     reflect.TypeFor[contract.PathAttributionDoc](),
	contract.LayerAttribution:    reflect.TypeFor[contract.LayerAttributionDoc](),
	contract.ReportView:          reflect.TypeFor[contract.ReportViewDoc](),
	contract.Comparison:          reflect.TypeFor[contract.ComparisonDoc](),
	contract.EffectiveRunConfig:  reflect.TypeFor[contract.EffectiveRunConfigDoc](),
	contract.TelemetrySample:     reflect.TypeFor[contract.TelemetrySampleDoc](),
	contract.ConversationSession: reflect.TypeFor[contract.ConversationSessionDoc](),
	contract.FleetPlan:           reflect.TypeFor[contract.FleetPlanDoc](),
	contract.FleetManifest:       reflect.TypeFor[contract.FleetManifestDoc](),
}

// integerLiterals reports every number that lands in an integer field of t but is written with a
// fraction or an exponent (1.0, 1e0): contracts write integers as integers.
func integerLiterals(v any, t reflect.Type, at string) []Violation {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []Violation
	switch x := v.(type) {
	case json.Number:
		switch t.Kind() {
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			if strings.ContainsAny(x.String(), ".eE") {
				out = append(out, violationf(at, ErrSemantic, "integer written as %s: write it without a fraction or exponent", x))
			}
		}
	case []any:
		if t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
			for i, e := range x {
				out = append(out, integerLiterals(e, t.Elem(), fmt.Sprintf("%s/%d", at, i))...)
			}
		}
	case map[string]any:
		switch t.Kind() {
		case reflect.Map:
			for k, e := range x {
				out = append(out, integerLiterals(e, t.Elem(), at+"/"+jsonstrict.EscapePointerToken(k))...)
			}
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				if name == "" && f.Anonymous {
					// An embedded struct's members are promoted into this object.
					out = append(out, integerLiterals(x, f.Type, at)...)
					continue
				}
				if e, ok := x[name]; ok {
					out = append(out, integerLiterals(e, f.Type, at+"/"+jsonstrict.EscapePointerToken(name))...)
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// Marker is one sign of historical evidence, found at Pointer.
type Marker struct {
	Pointer string
	Name    string
}

// historicalSchemas are schema values of Kiln records that carry a machine-specific temperature
// policy (version-1 evidence results, their containment records and host policies).
var historicalSchemas = map[string]bool{
	"kiln.rocm-hf-next-token-oracle.v1":        true,
	"kiln.rocm-hf-path-attribution-result.v1":  true,
	"kiln.rocm-hf-path-attribution.v1":         true,
	"kiln.rocm-hf-layer-attribution-result.v1": true,
	"kiln.hf-thermal-containment.v1":           true,
	"kiln.host-thermal-policy.v1":              true,
	"kiln.wsl2-thermal-policy.v1":              true,
	"kiln.wsl2-thermal-policy.v2":              true,
}

// historicalKeys are member names that only version-1 temperature-era evidence carries.
var historicalKeys = map[string]bool{
	"supervisor_sha256":       true,
	"memory_max_gib":          true,
	"swap_max_bytes":          true,
	"rocm_archs":              true,
	"thermal":                 true,
	"thermal_policy":          true,
	"host_thermal":            true,
	"prelaunch_cooldown":      true,
	"idle_boundary_cooldowns": true,
	"thermally_sustainable_output_token_throughput_per_s": true,
}

// HistoricalMarkers lists every marker of version-1 machine-specific temperature policy found in a
// parsed document, sorted by pointer: historical schema values and the member names that only that
// era's records carry. Such documents still parse, for audit display, but current validators refuse them.
func HistoricalMarkers(doc any) []Marker {
	var out []Marker
	var walk func(n any, at string)
	walk = func(n any, at string) {
		switch n := n.(type) {
		case map[string]any:
			if s, ok := n["schema"].(string); ok && historicalSchemas[s] {
				out = append(out, Marker{Pointer: at + "/schema", Name: s})
			}
			for k, v := range n {
				p := at + "/" + jsonstrict.EscapePointerToken(k)
				if historicalKeys[k] {
					out = append(out, Marker{Pointer: p, Name: k})
				}
				walk(v, p)
			}
		case []any:
			for i, v := range n {
				walk(v, fmt.Sprintf("%s/%d", at, i))
			}
		}
	}
	walk(doc, "")
	sort.Slice(out, func(i, j int) bool { return out[i].Pointer < out[j].Pointer })
	return out
}

// CheckAs checks raw bytes as a document of one contract (strict JSON, schema and semantic
// rules) and refuses a valid document of another contract. The error names the document (name,
// usually its path) on every violation, one per line.
func CheckAs(raw []byte, name, contractID string) error {
	out, err := CheckDocument(raw)
	return out.errorAs(err, name, contractID)
}

// errorAs turns the outcome of checking the document label as the contract contractID into one
// error: nil when it is a valid document of that contract.
func (o Outcome) errorAs(err error, label, contractID string) error {
	if err != nil {
		return fmt.Errorf("%s: %w", label, err)
	}
	if !o.Valid() {
		lines := make([]string, 0, len(o.Violations))
		for _, v := range o.Violations {
			lines = append(lines, label+": "+v.Error())
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	if o.Contract.Name != contractID {
		return fmt.Errorf("%s is a %s, not a qualkit.%s", label, o.Contract.SchemaID, contractID)
	}
	return nil
}

// Decode checks raw as a document of the contract contractID, as CheckAs does, and decodes it
// into T: the bytes are parsed strictly once (the typed value is what jsonstrict.DecodeInto gives,
// numbers in open maps as json.Number). The error names the document (label) on every violation.
func Decode[T any](raw []byte, label, contractID string, opts ...jsonstrict.DecodeOption) (*T, error) {
	out, err := CheckDocument(raw, opts...)
	if err := out.errorAs(err, label, contractID); err != nil {
		return nil, err
	}
	doc, err := DecodeChecked[T](raw, out)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", label, err)
	}
	return doc, nil
}

// DecodeChecked decodes raw, which CheckDocument found valid with outcome out, into T without
// parsing it strictly again. It refuses an outcome with violations.
func DecodeChecked[T any](raw []byte, out Outcome) (*T, error) {
	if !out.Valid() || out.Tree == nil {
		return nil, fmt.Errorf("decode %s document: it has %d violations", out.Contract.Name, len(out.Violations))
	}
	var doc T
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode %s document: %w", out.Contract.Name, err)
	}
	return &doc, nil
}

// semantic wraps the problems a contract's semantic rules found as violations carrying ErrSemantic.
func semantic(ps []rules.Problem) []Violation {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Violation, len(ps))
	for i, p := range ps {
		out[i] = Violation{Pointer: p.Pointer, Err: fmt.Errorf("%w: %w", ErrSemantic, p.Err)}
	}
	return out
}
