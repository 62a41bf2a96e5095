package verify

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsListEveryReason: docs/verification.md names every finding code, and Reasons() lists
// every Reason declared in internal/reason/reason.go.
func TestDocsListEveryReason(t *testing.T) {
	doc, err := os.ReadFile("../docs/verification.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("internal/reason/reason.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := regexp.MustCompile(`(?m)^\s*(var\s+)?Err\w+ += define\(`).FindAll(src, -1)
	if len(declared) != len(Reasons()) {
		t.Fatalf("internal/reason/reason.go declares %d reasons, Reasons() lists %d", len(declared), len(Reasons()))
	}
	seen := map[string]bool{}
	for _, r := range Reasons() {
		if seen[r.Code()] {
			t.Errorf("code %s repeats", r.Code())
		}
		seen[r.Code()] = true
		if !strings.Contains(string(doc), "`"+r.Code()+"`") {
			t.Errorf("docs/verification.md does not name finding code %s", r.Code())
		}
	}
}

// TestDocsPolicyExample: the policy example of docs/verification.md parses.
func TestDocsPolicyExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/verification.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "A release pipeline's policy, for example:\n\n```json\n")
	if !ok {
		t.Fatal("no policy example")
	}
	example, _, _ := strings.Cut(rest, "```")
	dir := t.TempDir()
	pub, _ := os.ReadFile(filepath.Join(frozenRoot, "frozen.pub"))
	os.MkdirAll(filepath.Join(dir, "keys"), 0o755)
	mustWrite(t, filepath.Join(dir, "keys/release.pub"), pub)
	p, err := ParsePolicy([]byte(example), dir)
	if err != nil {
		t.Fatal(err)
	}
	if !p.RequirePublishable || len(p.Keys) != 1 || len(p.AllowedRelaxations) != 0 || len(p.Metrics) != 1 {
		t.Fatalf("policy %+v", p)
	}
}
