package schemas

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var updateSelfHash = flag.Bool("update-selfhash", false, "rewrite result_sha256 in the valid driver result corpus documents")

// TestDriverCorpusSelfHashes: every valid driver result in the corpus carries its own self-hash.
// With -update-selfhash the recorded value is replaced by the computed one (nothing else changes).
func TestDriverCorpusSelfHashes(t *testing.T) {
	n := 0
	for _, name := range DriverResults {
		files, _ := filepath.Glob(filepath.Join("testdata", name, "valid", "*.json"))
		for _, f := range files {
			n++
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			doc, err := Parse(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			want, err := SelfHash(doc, ResultSelfHashField)
			if err != nil {
				t.Fatal(err)
			}
			got := doc.(map[string]any)[ResultSelfHashField].(string)
			if got == want {
				continue
			}
			if !*updateSelfHash {
				t.Errorf("%s: result_sha256 %s, computed %s (run with -update-selfhash)", f, got, want)
				continue
			}
			fixed := bytes.Replace(data, []byte(`"`+got+`"`), []byte(`"`+want+`"`), 1)
			if err := os.WriteFile(f, fixed, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n < len(DriverResults) {
		t.Errorf("only %d valid driver results in the corpus", n)
	}
}
