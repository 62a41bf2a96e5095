package schemas_test

import (
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/internal/gencheck"
)

// TestGeneratedTypesMatchHandWritten walks every hand-written contract type beside the type
// tools/schemagen generates from cue/ (into schemas/internal/gencheck until the generated types
// replace the hand-written ones): the same type names, field names, json tags and Go kinds, in
// the same order; an enum type counts as string.
func TestGeneratedTypesMatchHandWritten(t *testing.T) {
	pairs := []struct{ hand, gen any }{
		{schemas.CaseResultDoc{}, gencheck.CaseResultDoc{}},
		{schemas.ComparisonDoc{}, gencheck.ComparisonDoc{}},
		{schemas.DriverRequestDoc{}, gencheck.DriverRequestDoc{}},
		{schemas.DriverSpecDoc{}, gencheck.DriverSpecDoc{}},
		{schemas.EffectiveRunConfigDoc{}, gencheck.EffectiveRunConfigDoc{}},
		{schemas.LaunchRecipeDoc{}, gencheck.LaunchRecipeDoc{}},
		{schemas.LifecycleRecordDoc{}, gencheck.LifecycleRecordDoc{}},
		{schemas.ReceiptDoc{}, gencheck.ReceiptDoc{}},
		{schemas.ReportViewDoc{}, gencheck.ReportViewDoc{}},
		{schemas.RequestRecordDoc{}, gencheck.RequestRecordDoc{}},
		{schemas.RuntimeManifestDoc{}, gencheck.RuntimeManifestDoc{}},
		{schemas.TelemetrySampleDoc{}, gencheck.TelemetrySampleDoc{}},
		{schemas.VerificationReportDoc{}, gencheck.VerificationReportDoc{}},
		{schemas.WorkloadDoc{}, gencheck.WorkloadDoc{}},
	}
	w := &pairWalker{seen: map[[2]reflect.Type]bool{}}
	for _, p := range pairs {
		w.walk(reflect.TypeOf(p.hand).Name(), reflect.TypeOf(p.hand), reflect.TypeOf(p.gen))
	}
	sort.Strings(w.problems)
	for _, p := range w.problems {
		t.Error(p)
	}
	t.Logf("%d problems", len(w.problems))
}

type pairWalker struct {
	seen     map[[2]reflect.Type]bool
	problems []string
}

func (w *pairWalker) fail(format string, args ...any) {
	w.problems = append(w.problems, fmt.Sprintf(format, args...))
}

func (w *pairWalker) walk(where string, h, g reflect.Type) {
	if w.seen[[2]reflect.Type{h, g}] {
		return
	}
	w.seen[[2]reflect.Type{h, g}] = true
	if h.Kind() != g.Kind() {
		w.fail("%s: hand-written %s, generated %s", where, h, g)
		return
	}
	if h.Name() != "" && g.Name() != "" && h.Name() != g.Name() && !(h.Kind() == reflect.String && h.Name() == "string") {
		w.fail("%s: type name: hand-written %s, generated %s", where, h.Name(), g.Name())
	}
	switch h.Kind() {
	case reflect.Pointer, reflect.Slice:
		w.walk(where+"[]", h.Elem(), g.Elem())
	case reflect.Map:
		w.walk(where+"{}", h.Elem(), g.Elem())
	case reflect.Struct:
		hf, gf := fields(h), fields(g)
		for i := 0; i < len(hf) || i < len(gf); i++ {
			switch {
			case i >= len(hf):
				w.fail("%s: generated has extra field %s %s", where, gf[i].Name, gf[i].Tag)
			case i >= len(gf):
				w.fail("%s: generated lacks field %s %s", where, hf[i].Name, hf[i].Tag)
			case hf[i].Name != gf[i].Name || hf[i].Tag.Get("json") != gf[i].Tag.Get("json"):
				w.fail("%s: field %d: hand-written %s %q, generated %s %q", where, i, hf[i].Name, hf[i].Tag.Get("json"), gf[i].Name, gf[i].Tag.Get("json"))
			default:
				w.walk(where+"."+hf[i].Name, hf[i].Type, gf[i].Type)
			}
		}
	}
}

func fields(t reflect.Type) []reflect.StructField {
	out := make([]reflect.StructField, t.NumField())
	for i := range out {
		out[i] = t.Field(i)
	}
	return out
}
