package schemas

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRowEndedRules: the semantic rules of a case result's rows[].ended. A passed result may
// hold the cut requests of a duration row and the failures of a row a stop rule ended, never
// other failures; ended.cut is at most the row's failures.
func TestRowEndedRules(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "case-result.v1", "valid", "serving-row-ended.json"))
	if err != nil {
		t.Fatal(err)
	}
	// mutate sets the first row's counts and ended, and the result's status.
	mutate := func(status string, failures int, reason string, cut int) []byte {
		var d map[string]any
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		row := d["rows"].([]any)[0].(map[string]any)
		n := row["requests"].(float64)
		row["failures"], row["successes"] = failures, int(n)-failures
		row["ended"] = map[string]any{"reason": reason, "after_seconds": 0.3, "cut": cut}
		d["status"] = status
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		name, status, reason string
		failures, cut        int
		want                 string // "" = valid
	}{
		{"duration row with its cut requests, passed", "passed", "duration", 2, 2, ""},
		{"duration row with a failure beyond its cut, passed", "passed", "duration", 2, 1, "status passed with a failed request in a row"},
		{"stopped row with failures, passed", "passed", "error_fraction", 3, 0, ""},
		{"row stopped for saturation with failures, passed", "passed", "saturation", 3, 0, ""},
		{"row stopped by consecutive failures, passed", "passed", "consecutive_failures", 3, 0, ""},
		{"requests row with a failure, passed", "passed", "requests", 1, 0, "status passed with a failed request in a row"},
		{"cut beyond the failures", "failed", "duration", 1, 2, "cut 2 exceeds the row's failures 1"},
	} {
		out, err := CheckDocument(mutate(tc.status, tc.failures, tc.reason, tc.cut))
		if err != nil {
			t.Fatal(err)
		}
		var msgs []string
		for _, v := range out.Violations {
			msgs = append(msgs, v.Pointer+": "+v.Err.Error())
			if !errors.Is(v.Err, ErrSemantic) {
				t.Errorf("%s: %s is not a semantic violation", tc.name, v.Pointer)
			}
		}
		got := strings.Join(msgs, "; ")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: violations %q, want %q", tc.name, got, tc.want)
		}
	}
}
