package schemas

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestTypesMatchSchemas walks each Go type against its contract's exported JSON Schema: every
// schema property has a field, every field is a property, and a property required by every branch
// of its object has no omitempty. Nested objects are followed through $ref, allOf/anyOf and
// if/then/else branches.
func TestTypesMatchSchemas(t *testing.T) {
	types := map[string]any{
		contract.Workload:            contract.WorkloadDoc{},
		contract.LaunchRecipe:        contract.LaunchRecipeDoc{},
		contract.RuntimeManifest:     contract.RuntimeManifestDoc{},
		contract.CaseResult:          contract.CaseResultDoc{},
		contract.RequestRecord:       contract.RequestRecordDoc{},
		contract.LifecycleRecord:     contract.LifecycleRecordDoc{},
		contract.Receipt:             contract.ReceiptDoc{},
		contract.VerificationReport:  contract.VerificationReportDoc{},
		contract.DriverSpec:          contract.DriverSpecDoc{},
		contract.DriverRequest:       contract.DriverRequestDoc{},
		contract.DriverWorkerOutput:  contract.DriverWorkerOutputDoc{},
		contract.NextTokenResult:     contract.NextTokenResultDoc{},
		contract.PathAttribution:     contract.PathAttributionDoc{},
		contract.LayerAttribution:    contract.LayerAttributionDoc{},
		contract.ReportView:          contract.ReportViewDoc{},
		contract.Comparison:          contract.ComparisonDoc{},
		contract.EffectiveRunConfig:  contract.EffectiveRunConfigDoc{},
		contract.TelemetrySample:     contract.TelemetrySampleDoc{},
		contract.ConversationSession: contract.ConversationSessionDoc{},
		contract.FleetPlan:           contract.FleetPlanDoc{},
		contract.FleetManifest:       contract.FleetManifestDoc{},
	}
	for _, c := range Contracts() {
		typ, ok := types[c.Name]
		if !ok {
			t.Errorf("%s: no Go type", c.Name)
			continue
		}
		raw, err := SchemaJSON(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		var root map[string]any
		if err := json.Unmarshal(raw, &root); err != nil {
			t.Fatal(err)
		}
		w := &typeWalker{t: t, defs: root["$defs"].(map[string]any), seen: map[string]bool{}}
		w.compare(c.Name, reflect.TypeOf(typ), []map[string]any{root})
	}
}

type typeWalker struct {
	t    *testing.T
	defs map[string]any
	seen map[string]bool
}

// objects expands a schema into the object schemas it may stand for (following $ref, allOf,
// anyOf, oneOf, then and else), skipping "if" conditions.
func (w *typeWalker) objects(s map[string]any) []map[string]any {
	var out []map[string]any
	if ref, ok := s["$ref"].(string); ok {
		if d, ok := w.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
			out = append(out, w.objects(d)...)
		}
	}
	if _, ok := s["properties"]; ok {
		out = append(out, s)
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		if list, ok := s[k].([]any); ok {
			for _, x := range list {
				if m, ok := x.(map[string]any); ok {
					out = append(out, w.objects(m)...)
				}
			}
		}
	}
	for _, k := range []string{"then", "else"} {
		if m, ok := s[k].(map[string]any); ok {
			out = append(out, w.objects(m)...)
		}
	}
	return out
}

// items expands an array schema (possibly behind $ref/anyOf) to its item schemas.
func (w *typeWalker) items(s map[string]any) []map[string]any {
	var out []map[string]any
	if ref, ok := s["$ref"].(string); ok {
		if d, ok := w.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any); ok {
			out = append(out, w.items(d)...)
		}
	}
	if it, ok := s["items"].(map[string]any); ok {
		out = append(out, it)
	}
	for _, k := range []string{"allOf", "anyOf"} {
		if list, ok := s[k].([]any); ok {
			for _, x := range list {
				if m, ok := x.(map[string]any); ok {
					out = append(out, w.items(m)...)
				}
			}
		}
	}
	return out
}

func (w *typeWalker) compare(where string, typ reflect.Type, schemas []map[string]any) {
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		if typ.Kind() == reflect.Slice {
			var its []map[string]any
			for _, s := range schemas {
				its = append(its, w.items(s)...)
			}
			schemas = its
		}
		typ = typ.Elem()
	}
	if typ.Kind() != reflect.Struct {
		return
	}
	key := where + "|" + typ.String()
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	var objs []map[string]any
	for _, s := range schemas {
		objs = append(objs, w.objects(s)...)
	}
	if len(objs) == 0 {
		w.t.Errorf("%s: Go type %s has no object schema", where, typ)
		return
	}
	props := map[string][]map[string]any{} // property name -> its schemas
	requiredEverywhere := map[string]bool{}
	for i, o := range objs {
		req := map[string]bool{}
		if list, ok := o["required"].([]any); ok {
			for _, r := range list {
				req[r.(string)] = true
			}
		}
		ps, _ := o["properties"].(map[string]any)
		for name, p := range ps {
			if m, ok := p.(map[string]any); ok {
				props[name] = append(props[name], m)
			}
		}
		for name := range ps {
			if i == 0 {
				requiredEverywhere[name] = req[name]
			} else if _, inAll := requiredEverywhere[name]; !inAll || !req[name] {
				requiredEverywhere[name] = false
			}
		}
		for name := range requiredEverywhere {
			if !req[name] {
				requiredEverywhere[name] = false
			}
		}
	}
	fields := map[string]reflect.StructField{}
	var collect func(t reflect.Type)
	collect = func(t reflect.Type) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
				collect(f.Type) // embedded: its members are promoted
				continue
			}
			if name == "" || name == "-" {
				w.t.Errorf("%s: field %s.%s has no json name", where, t, f.Name)
				continue
			}
			if _, dup := fields[name]; dup {
				w.t.Errorf("%s: %s has two fields named %q", where, typ, name)
			}
			fields[name] = f
		}
	}
	collect(typ)
	var names []string
	for n := range props {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f, ok := fields[n]
		if !ok {
			w.t.Errorf("%s: schema property %q has no field in %s", where, n, typ)
			continue
		}
		if requiredEverywhere[n] && strings.Contains(f.Tag.Get("json"), "omitempty") {
			w.t.Errorf("%s: %s.%s is required by the schema but tagged omitempty", where, typ, f.Name)
		}
		w.compare(where+"/"+n, f.Type, props[n])
	}
	for n := range fields {
		if _, ok := props[n]; !ok {
			w.t.Errorf("%s: field %s.%s (%q) is not a schema property", where, typ, fields[n].Name, n)
		}
	}
}
