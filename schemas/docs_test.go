package schemas

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

var exampleBlock = regexp.MustCompile("(?s)Example \\(([^)]+)\\):\\s*\n```json\n(.*?)```")

// TestContractDocsExamples: every contract has a page under docs/contracts; each page's example
// is byte-identical to the corpus document it names, and that document passes the whole check.
func TestContractDocsExamples(t *testing.T) {
	for _, c := range Contracts() {
		page := filepath.Join("..", "docs", "contracts", c.Name+".md")
		doc, err := os.ReadFile(page)
		if err != nil {
			t.Errorf("%s: no page: %v", c.Name, err)
			continue
		}
		m := exampleBlock.FindAllSubmatch(doc, -1)
		if len(m) == 0 {
			t.Errorf("%s: no `Example (path):` block", page)
		}
		for _, ex := range m {
			file, err := os.ReadFile(filepath.Join("..", string(ex[1])))
			if err != nil {
				t.Errorf("%s: example names %s: %v", page, ex[1], err)
				continue
			}
			if !bytes.Equal(file, ex[2]) {
				t.Errorf("%s: the example differs from %s", page, ex[1])
			}
			out, err := CheckDocument(ex[2])
			if err != nil || !out.Valid() || out.Contract.Name != c.Name {
				t.Errorf("%s: example is not a valid %s: %v %v", page, c.Name, err, out.Violations)
			}
		}
	}
}
