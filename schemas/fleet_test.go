package schemas

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFleetPlanRowRules: the two rules a fleet plan's schema cannot express are reported as
// semantic violations at the offending row (the documents are valid against the schema, so they
// live under testdata/rules, outside the corpus ajv checks).
func TestFleetPlanRowRules(t *testing.T) {
	for _, tc := range []struct {
		file, pointer, says string
	}{
		{"fleet-plan-row-index-not-position.json", "/rows/2/index", "row index is 3 but the row is rows[2]"},
		{"fleet-plan-row-repeats.json", "/rows/1", "row repeats /rows/0"},
	} {
		data, err := os.ReadFile(filepath.Join("testdata", "rules", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		out, err := CheckDocument(data)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, v := range out.Violations {
			if v.Pointer == tc.pointer && errors.Is(v, ErrSemantic) && strings.Contains(v.Error(), tc.says) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: want a semantic violation at %s saying %q, got %v", tc.file, tc.pointer, tc.says, out.Violations)
		}
	}
}
