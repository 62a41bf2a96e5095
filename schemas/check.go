package schemas

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Outcome is the result of checking one document.
type Outcome struct {
	// Contract is the contract detected from the schema field; zero when none was recognised.
	Contract Contract
	// Violations lists every problem found; empty means the document is valid.
	Violations []Violation
}

// Valid reports whether the document had no violation.
func (o Outcome) Valid() bool { return len(o.Violations) == 0 }

// CheckDocument parses data strictly, detects its contract from the schema field, validates it
// against the exported JSON Schema and then against the semantic rules of that contract.
// Historical evidence (Kiln version-1 results carrying a machine-specific temperature policy) is
// refused with one ErrHistorical violation per marker found. The error is non-nil only when the
// check could not be carried out (e.g. the embedded schemas do not compile).
func CheckDocument(data []byte, opts ...DecodeOption) (Outcome, error) {
	doc, err := Parse(data, opts...)
	if err != nil {
		var de *DecodeError
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
	out := Outcome{Contract: c}
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
	case Workload:
		var d WorkloadDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckWorkload(&d)), nil
	case LaunchRecipe:
		var d LaunchRecipeDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckLaunchRecipe(&d)), nil
	case CaseResult:
		var d CaseResultDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckCaseResult(&d)), nil
	case RequestRecord:
		var d RequestRecordDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckRequestRecord(&d)), nil
	case TelemetrySample:
		var d TelemetrySampleDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return nil, nil
	case LifecycleRecord:
		var d LifecycleRecordDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckLifecycleRecord(&d)), nil
	case Receipt:
		var d ReceiptDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckReceipt(&d)), nil
	case VerificationReport:
		var d VerificationReportDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckReport(&d)), nil
	case RuntimeManifest:
		var d RuntimeManifestDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckRuntimeManifest(&d)), nil
	case DriverSpec:
		var d DriverSpecDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckDriverSpec(&d)), nil
	case DriverRequest:
		var d DriverRequestDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckDriverRequest(&d)), nil
	case DriverWorkerOutput:
		var d DriverWorkerOutputDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckWorkerOutput(&d)), nil
	case NextTokenResult:
		var d NextTokenResultDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckNextTokenResult(doc, &d)), nil
	case PathAttribution:
		var d PathAttributionDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckPathAttribution(doc, &d)), nil
	case LayerAttribution:
		var d LayerAttributionDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckLayerAttribution(doc, &d)), nil
	case ReportView:
		var d ReportViewDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckReportView(&d)), nil
	case Comparison:
		var d ComparisonDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return semantic(CheckComparison(&d)), nil
	case EffectiveRunConfig:
		// Every rule of an effective run configuration is in its schema (and the integer check above).
		var d EffectiveRunConfigDoc
		if err := decode(&d); err != nil {
			return nil, err
		}
		return nil, nil
	}
	return nil, fmt.Errorf("%w: %s", ErrUnknownContract, name)
}

// docTypes maps each contract to its Go type.
var docTypes = map[string]reflect.Type{
	Workload:           reflect.TypeFor[WorkloadDoc](),
	LaunchRecipe:       reflect.TypeFor[LaunchRecipeDoc](),
	RuntimeManifest:    reflect.TypeFor[RuntimeManifestDoc](),
	CaseResult:         reflect.TypeFor[CaseResultDoc](),
	RequestRecord:      reflect.TypeFor[RequestRecordDoc](),
	LifecycleRecord:    reflect.TypeFor[LifecycleRecordDoc](),
	Receipt:            reflect.TypeFor[ReceiptDoc](),
	VerificationReport: reflect.TypeFor[VerificationReportDoc](),
	DriverSpec:         reflect.TypeFor[DriverSpecDoc](),
	DriverRequest:      reflect.TypeFor[DriverRequestDoc](),
	DriverWorkerOutput: reflect.TypeFor[DriverWorkerOutputDoc](),
	NextTokenResult:    reflect.TypeFor[NextTokenResultDoc](),
	PathAttribution:    reflect.TypeFor[PathAttributionDoc](),
	LayerAttribution:   reflect.TypeFor[LayerAttributionDoc](),
	ReportView:         reflect.TypeFor[ReportViewDoc](),
	Comparison:         reflect.TypeFor[ComparisonDoc](),
	EffectiveRunConfig: reflect.TypeFor[EffectiveRunConfigDoc](),
	TelemetrySample:    reflect.TypeFor[TelemetrySampleDoc](),
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
				out = append(out, integerLiterals(e, t.Elem(), at+"/"+escapePointerToken(k))...)
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
					out = append(out, integerLiterals(e, f.Type, at+"/"+escapePointerToken(name))...)
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
				p := at + "/" + escapePointerToken(k)
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
func CheckAs(raw []byte, name, contract string) error {
	out, err := CheckDocument(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !out.Valid() {
		lines := make([]string, 0, len(out.Violations))
		for _, v := range out.Violations {
			lines = append(lines, name+": "+v.Error())
		}
		return errors.New(strings.Join(lines, "\n"))
	}
	if out.Contract.Name != contract {
		return fmt.Errorf("%s is a %s, not a qualkit.%s", name, out.Contract.SchemaID, contract)
	}
	return nil
}

// semantic wraps the problems a contract's semantic rules found as violations carrying ErrSemantic.
func semantic(ps []Problem) []Violation {
	if len(ps) == 0 {
		return nil
	}
	out := make([]Violation, len(ps))
	for i, p := range ps {
		out[i] = Violation{Pointer: p.Pointer, Err: fmt.Errorf("%w: %w", ErrSemantic, p.Err)}
	}
	return out
}
