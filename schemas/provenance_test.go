package schemas

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// evidenceContracts are the contracts whose every field must declare its provenance: what a
// campaign or a verification writes and a verifier reads (docs/verification.md "Provenance").
var evidenceContracts = []string{
	contract.CaseResult, contract.FleetManifest, contract.LifecycleRecord, contract.Receipt,
	contract.RequestRecord, contract.TelemetrySample, contract.VerificationReport,
	// the driver results and the worker output they are built from: signed subjects
	contract.NextTokenResult, contract.PathAttribution, contract.LayerAttribution, contract.DriverWorkerOutput,
	// written into the run directory and bound by the receipt
	contract.EffectiveRunConfig,
}

const provHowTo = `add @prov(KIND, "RULE") at the end of the field's line in cue/ (KIND: derived, bound, observed or descriptive; RULE names the formula, the input or the plausibility rules and the finding code; gap="..." says what the verifier does not check yet), then run make generate`

// TestEvidenceProvenanceComplete: every field of every evidence contract (every property its
// exported JSON Schema has, at any depth) has a provenance row generated from a @prov attribute,
// with one of the four kinds, and a rule for every kind but descriptive.
func TestEvidenceProvenanceComplete(t *testing.T) {
	for _, name := range evidenceContracts {
		rows, ok := contract.Provenance[name]
		if !ok {
			t.Errorf("%s: no provenance table: its CUE definition needs @evidence() beside @jsonschema, then make generate", name)
			continue
		}
		raw, err := SchemaJSON(name)
		if err != nil {
			t.Fatal(err)
		}
		paths, err := schemaPaths(raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		byPath := map[string]contract.FieldProvenance{}
		for _, r := range rows {
			byPath[r.Path] = r
		}
		for _, p := range paths {
			r, ok := byPath[p]
			switch {
			case !ok:
				t.Errorf("%s %s: a field of the exported schema without a provenance row (make generate not run?): %s", name, p, provHowTo)
			case r.Kind == "":
				t.Errorf("%s %s (%s): no @prov: %s", name, p, r.Where, provHowTo)
			}
		}
		for _, r := range rows {
			if !slices.Contains(paths, r.Path) {
				t.Errorf("%s %s (%s): a provenance row for no field of the exported schema: run make generate", name, r.Path, r.Where)
			}
			if msg := provProblem(r); msg != "" {
				t.Errorf("%s %s (%s): %s", name, r.Path, r.Where, msg)
			}
		}
	}
	for name := range contract.Provenance {
		if !slices.Contains(evidenceContracts, name) {
			t.Errorf("%s carries @evidence() but is not among the evidence contracts of this test: add it to evidenceContracts", name)
		}
	}
}

// provProblem says what is wrong with a row's kind and rule ("" when nothing).
func provProblem(r contract.FieldProvenance) string {
	switch r.Kind {
	case "":
		return "" // reported as a missing @prov
	case contract.ProvenanceDerived, contract.ProvenanceBound, contract.ProvenanceObserved:
		if strings.TrimSpace(r.Rule) == "" {
			return fmt.Sprintf("@prov(%s) without a rule: name the formula, the input or the plausibility rules, @prov(%s, \"RULE\")", r.Kind, r.Kind)
		}
	case contract.ProvenanceDescriptive:
		if r.Gap != "" {
			return "a descriptive field has no gap: nothing reads it"
		}
	default:
		return fmt.Sprintf("kind %q is none of derived, bound, observed, descriptive", r.Kind)
	}
	return ""
}

func TestProvProblem(t *testing.T) {
	for _, tc := range []struct {
		row  contract.FieldProvenance
		want string // a substring; "" for no problem
	}{
		{contract.FieldProvenance{Kind: contract.ProvenanceDerived, Rule: "metric.RowSummary (row_mismatch)"}, ""},
		{contract.FieldProvenance{Kind: contract.ProvenanceBound, Rule: " "}, "without a rule"},
		{contract.FieldProvenance{Kind: contract.ProvenanceObserved}, "without a rule"},
		{contract.FieldProvenance{Kind: contract.ProvenanceDescriptive}, ""},
		{contract.FieldProvenance{Kind: contract.ProvenanceDescriptive, Gap: "x"}, "descriptive field has no gap"},
		{contract.FieldProvenance{Kind: "measured", Rule: "x"}, "none of derived"},
	} {
		got := provProblem(tc.row)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("provProblem(%+v) = %q, want %q", tc.row, got, tc.want)
		}
	}
}

// schemaPaths lists the property paths of an exported JSON Schema the way schemagen names them:
// "/name" for a property, "/*" for the items of an array and the values of a map whose values are
// objects with properties; $ref, anyOf, oneOf, allOf and the then and else of a union are followed.
func schemaPaths(raw []byte) ([]string, error) {
	var root map[string]any
	if err := json.Unmarshal(raw, &root); err != nil {
		return nil, err
	}
	defs, _ := root["$defs"].(map[string]any)
	var out []string
	seen := map[string]bool{}
	var walk func(n any, path string, depth int) error
	walk = func(n any, path string, depth int) error {
		if depth > 64 {
			return fmt.Errorf("%s: schema nesting deeper than 64", path)
		}
		m, ok := n.(map[string]any)
		if !ok {
			return nil
		}
		if ref, ok := m["$ref"].(string); ok {
			def, ok := defs[strings.TrimPrefix(ref, "#/$defs/")]
			if !ok {
				return fmt.Errorf("%s: unresolved $ref %s", path, ref)
			}
			if err := walk(def, path, depth+1); err != nil {
				return err
			}
		}
		for _, k := range []string{"anyOf", "oneOf", "allOf"} {
			alts, _ := m[k].([]any)
			for _, a := range alts {
				if err := walk(a, path, depth+1); err != nil {
					return err
				}
			}
		}
		for _, k := range []string{"then", "else"} { // a discriminated union (if is its condition)
			if err := walk(m[k], path, depth+1); err != nil {
				return err
			}
		}
		if props, ok := m["properties"].(map[string]any); ok {
			names := make([]string, 0, len(props))
			for k := range props {
				names = append(names, k)
			}
			slices.Sort(names)
			for _, k := range names {
				p := path + "/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(k)
				if !seen[p] {
					seen[p] = true
					out = append(out, p)
				}
				if err := walk(props[k], p, depth+1); err != nil {
					return err
				}
			}
		}
		if items, ok := m["items"]; ok {
			if err := walk(items, path+"/*", depth+1); err != nil {
				return err
			}
		}
		var values []any
		if ap, ok := m["additionalProperties"].(map[string]any); ok {
			values = append(values, ap)
		}
		if pp, ok := m["patternProperties"].(map[string]any); ok {
			for _, v := range pp {
				values = append(values, v)
			}
		}
		for _, v := range values {
			if hasProperties(v, defs) {
				if err := walk(v, path+"/*", depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(root, "", 0); err != nil {
		return nil, err
	}
	return out, nil
}

// hasProperties reports a schema of objects with named properties (a map of records, not an open
// tree such as #Config, whose field carries the provenance of all of it).
func hasProperties(n any, defs map[string]any) bool {
	m, ok := n.(map[string]any)
	if !ok {
		return false
	}
	if ref, ok := m["$ref"].(string); ok {
		return hasProperties(defs[strings.TrimPrefix(ref, "#/$defs/")], defs)
	}
	_, ok = m["properties"]
	return ok
}

// TestEvidenceProvenanceDocs: each evidence contract's page carries its generated provenance
// section (the generator writes it; make check-generate catches a stale one).
func TestEvidenceProvenanceDocs(t *testing.T) {
	for _, name := range evidenceContracts {
		page, err := os.ReadFile(filepath.Join("..", "docs", "contracts", name+".md"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		s := string(page)
		if !strings.Contains(s, "<!-- provenance: generated by schemagen") || !strings.Contains(s, "## Provenance") {
			t.Errorf("docs/contracts/%s.md: no generated provenance section: run make generate", name)
			continue
		}
		for _, r := range contract.Provenance[name] {
			if !strings.Contains(s, "| `"+r.Path+"` | ") {
				t.Errorf("docs/contracts/%s.md: no provenance row for %s: run make generate", name, r.Path)
			}
		}
	}
}
