package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

func loadView(t *testing.T, name string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", contract.ReportView, "valid", name))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestReportViewRules breaks one rule of the report view per case, on a valid document of its
// corpus, and expects a semantic violation at the pointer (and no other kind of violation).
func TestReportViewRules(t *testing.T) {
	const three, one, tampered, drivers = "frozen-three-receipts.json", "frozen-one-receipt.json", "unverified-tampered.json", "driver-sections.json"
	for _, tc := range []struct {
		name, base, pointer string
		mutate              func(t *testing.T, d map[string]any)
	}{
		{"verdict verified with findings", tampered, "/receipts/0/verification/verdict", func(t *testing.T, d map[string]any) {
			set(t, d, "/receipts/0/verification/verdict", "verified")
		}},
		{"verdict rejected without findings", one, "/receipts/0/verification/verdict", func(t *testing.T, d map[string]any) {
			set(t, d, "/receipts/0/verification/verdict", "rejected")
			set(t, d, "/verified", false)
		}},
		{"verified with a rejected receipt", tampered, "/verified", func(t *testing.T, d map[string]any) {
			set(t, d, "/verified", true)
			set(t, d, "/unverified", false)
		}},
		{"not verified though every receipt verified", one, "/verified", func(t *testing.T, d map[string]any) {
			set(t, d, "/verified", false)
		}},
		{"unverified view of verified evidence", one, "/unverified", func(t *testing.T, d map[string]any) {
			set(t, d, "/unverified", true)
		}},
		{"a comparison missing", three, "/comparisons", func(t *testing.T, d map[string]any) {
			d["comparisons"] = d["comparisons"].([]any)[:1]
		}},
		{"a comparison too many", one, "/comparisons", func(t *testing.T, d map[string]any) {
			d["comparisons"] = loadView(t, three)["comparisons"].([]any)[:1]
		}},
		{"baseline not the first receipt", three, "/comparisons/1/baseline", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparisons/1/baseline", ".qualification/receipts/a-2.json")
		}},
		{"candidate out of order", three, "/comparisons/0/candidate", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparisons/0/candidate", ".qualification/receipts/b-1.json")
		}},
		{"ok but incompatible", three, "/comparisons/1/ok", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparisons/1/compatible", false)
		}},
		{"compatible with a rejected difference", three, "/comparisons/0/compatible", func(t *testing.T, d map[string]any) {
			set(t, d, "/comparisons/0/rejected", []any{map[string]any{"path": "workload.seed", "code": "workload_mismatch", "message": "the workload binding differs"}})
		}},
		{"next-token section with a path attribution", drivers, "/receipts/0/cases/0/driver/path_attribution", func(t *testing.T, d map[string]any) {
			pa, _ := at(t, d, "/receipts/0/cases/1/driver/path_attribution")
			set(t, d, "/receipts/0/cases/0/driver/path_attribution", pa.(map[string]any)["path_attribution"])
		}},
		{"next-token section without its oracle", drivers, "/receipts/0/cases/0/driver/next_token", func(t *testing.T, d map[string]any) {
			set(t, d, "/receipts/0/cases/0/driver/next_token", nil)
		}},
		{"layer verdict with an attribution", drivers, "/receipts/0/cases/2/driver/verdict/attribution", func(t *testing.T, d map[string]any) {
			set(t, d, "/receipts/0/cases/2/driver/verdict/attribution", "embed")
		}},
		{"path verdict without its attribution", drivers, "/receipts/0/cases/1/driver/verdict/attribution", func(t *testing.T, d map[string]any) {
			set(t, d, "/receipts/0/cases/1/driver/verdict/attribution", nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := loadView(t, tc.base)
			tc.mutate(t, doc)
			out, err := CheckDocument(roundTrip(t, doc))
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, v := range out.Violations {
				if !errors.Is(v, ErrSemantic) {
					t.Errorf("unexpected non-semantic violation %v", v)
				}
				if v.Pointer == tc.pointer {
					found = true
				}
			}
			if !found {
				t.Errorf("want a semantic violation at %s, got %v", tc.pointer, out.Violations)
			}
		})
	}
}

// TestReportViewCorpusIsValid: every valid document of the corpus obeys the semantic rules too.
func TestReportViewCorpusIsValid(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", contract.ReportView, "valid", "*.json"))
	if len(files) < 4 {
		t.Fatalf("%d valid documents", len(files))
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out, err := CheckDocument(data)
		if err != nil || !out.Valid() || out.Contract.Name != contract.ReportView {
			t.Errorf("%s: %v %v", f, err, out.Violations)
		}
	}
}
