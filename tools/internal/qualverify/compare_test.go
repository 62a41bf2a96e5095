package qualverify

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// TestCompareJSONIsAComparisonReport: compare --json prints a valid qualkit.comparison.v1 for an
// ok comparison, a failed rule and a refused pair, with the exit code of each, and qualverify
// schema accepts the file it was written to.
func TestCompareJSONIsAComparisonReport(t *testing.T) {
	f := frozen + "/.qualification/receipts/"
	key := frozen + "/frozen.pub"
	dir := t.TempDir()
	for _, c := range []struct {
		name, base, cand string
		exit             int
		ok               bool
		mode             any
	}{
		{"declared ab ok", "a-1.json", "b-1.json", exitcode.OK, true, "declared_ab_variants"},
		{"same environment, a rule failed", "a-1.json", "a-2.json", exitcode.Rejected, false, "same_environment_performance"},
		{"reversed pair refused", "b-1.json", "a-1.json", exitcode.Rejected, false, "declared_ab_variants"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := Main([]string{"qualverify", "compare", f + c.base, f + c.cand, "--key", key, "--json"}, &stdout, &stderr); got != c.exit {
				t.Fatalf("exit %d, want %d\n%s%s", got, c.exit, stdout.String(), stderr.String())
			}
			requireContract(t, stdout.Bytes(), contract.Comparison)
			var doc map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc["ok"] != c.ok || doc["mode"] != c.mode {
				t.Errorf("ok %v mode %v", doc["ok"], doc["mode"])
			}
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			if err := os.WriteFile(path, stdout.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if got := Main([]string{"qualverify", "schema", path}, &out, &stderr); got != exitcode.OK || !strings.HasSuffix(out.String(), ": valid qualkit.comparison.v1\n") {
				t.Errorf("qualverify schema: exit %d, %q", got, out.String())
			}
		})
	}
}
