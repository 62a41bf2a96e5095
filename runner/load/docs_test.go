package load

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSyntheticWordsDocumented: docs/metrics.md lists exactly the generator's word list.
func TestSyntheticWordsDocumented(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	page := string(doc)
	i := strings.Index(page, "```\nable ")
	if i < 0 {
		t.Fatal("no word list in docs/metrics.md")
	}
	block := page[i+4:]
	block = block[:strings.Index(block, "```")]
	if got := strings.Fields(block); strings.Join(got, " ") != strings.Join(syntheticWords[:], " ") {
		t.Fatalf("docs/metrics.md lists %d words that differ from the generator's", len(got))
	}
	if !strings.Contains(page, "`act door half`, `again end hot mile` and\n`life letter need laugh`") {
		t.Fatal("the documented example is not the generator's")
	}
}
