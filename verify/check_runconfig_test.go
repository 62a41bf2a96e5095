package verify

import (
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"path/filepath"
	"testing"
)

// TestRunConfigBoundResealed: the run configuration's qualrun version, --model-id and --model-dir
// and the receipt's environment say what the rest of the evidence says; each edit, re-bound and
// re-signed, verified on 38f126b.
func TestRunConfigBoundResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	k := newTestKey(t)
	config := func(edit func(m map[string]any)) func(t *testing.T, root, run string) {
		return func(t *testing.T, root, run string) {
			editJSON(t, filepath.Join(root, run, "effective-run-config.json"), edit)
		}
	}
	cases := []struct {
		name  string
		edit  func(t *testing.T, root, run string)
		check Check
		want  *Reason
		text  string
	}{
		{"qualrun version", config(func(m map[string]any) { m["qualrun"].(map[string]any)["version"] = "v9.9.9" }), CheckComparability, ErrConfigMismatch, "qualrun/version"},
		{"a --model-id the server was not ready for", config(func(m map[string]any) { m["model_id"] = "other-model" }), CheckCleanup, ErrLifecycleMismatch, "--model-id is other-model"},
		{"a --model-dir without model files", config(func(m map[string]any) { m["model_dir"] = "models/m" }), CheckComparability, ErrConfigMismatch, "binds no model file"},
		{"the environment's qualrun", func(t *testing.T, root, _ string) {
			editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
				rc["environment"].(map[string]any)["runtime"].(map[string]any)["qualrun"] = "v9.9.9"
			})
		}, CheckComparability, ErrConfigMismatch, "the environment names qualrun v9.9.9"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			run := runDirOf(t, root, receipt)
			tc.edit(t, root, run)
			reseal(t, root, receipt, k)
			res := verifyAt(t, root, receipt, k.policy())
			if !hasFinding(res, tc.check, tc.want, tc.text) {
				t.Fatalf("not rejected (%s %q):%s", tc.want.Code(), tc.text, findingsOf(res))
			}
		})
	}
}

// TestModelIDOverrideHonest: a campaign run with --model-id waits for that model, not the recipe's:
// its readiness model is compared with the override (before, an honest override was refused).
func TestModelIDOverrideHonest(t *testing.T) {
	s := frozenSnapshot(t)
	ctx := check.LifecycleContextOf(s)
	ctx.ModelID = "served-as-other"
	s.Lifecycle.Readiness.ModelID = "served-as-other"
	c := &finding.Collector{Check: CheckCleanup}
	check.CleanupRecord(c, "lifecycle.json", s.Lifecycle, ctx)
	for _, f := range c.Out {
		if f.Pointer == "/readiness/model_id" {
			t.Fatalf("an honest --model-id refused: %v", f)
		}
	}
}
