package record

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkParseRecord runs the fast path (Parse) over every request record of the frozen
// evidence (verify/testdata/frozen/v1): the parser alone, without reading or hashing a file.
func BenchmarkParseRecord(b *testing.B) {
	files, err := filepath.Glob("../../testdata/frozen/v1/.qualification/runs/*/cases/*/rows/*.jsonl")
	if err != nil || len(files) == 0 {
		b.Fatalf("no frozen records: %v", err)
	}
	var lines [][]byte
	size := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			b.Fatal(err)
		}
		for l := range bytes.Lines(data) {
			l = bytes.TrimSuffix(l, []byte("\n"))
			if _, ok := Parse(l); !ok {
				b.Fatalf("%s: the fast path declines %.80q", f, l)
			}
			lines = append(lines, l)
			size += len(l)
		}
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		for _, l := range lines {
			if _, ok := Parse(l); !ok {
				b.Fatal("declined")
			}
		}
	}
}
