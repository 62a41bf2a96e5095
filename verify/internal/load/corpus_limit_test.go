package load

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/verify/internal/limits"
)

// TestCorpusReadToTheRunnersBound: a corpus artifact larger than a JSON document (a trace of
// 65 MiB; the runner replays traces up to 256 MiB) is read whole and bound by its digest, not
// refused as unreadable; one past MaxCorpusFileBytes (sparse) is refused without being read.
func TestCorpusReadToTheRunnersBound(t *testing.T) {
	dir := t.TempDir()
	line := []byte(`{"timestamp":0,"input_length":1,"output_length":1}` + "\n")
	big := bytes.Repeat(line, (limits.MaxDocumentBytes+1<<20)/len(line))
	if err := os.WriteFile(filepath.Join(dir, "trace.jsonl"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	huge, err := os.Create(filepath.Join(dir, "huge.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if err := huge.Truncate(limits.MaxCorpusFileBytes + 1); err != nil {
		t.Fatal(err)
	}
	huge.Close()
	root, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	f := &File{Path: "trace.jsonl", Kind: contract.ArtifactKindCorpus, Local: true, wantBytes: -1}
	if err := readFile(context.Background(), root, f); err != nil || f.ReadErr != nil || !f.Present || f.Digest != evidence.DigestOf(big) || len(f.Raw) != len(big) {
		t.Fatalf("a %d-byte corpus: err %v, read error %v, present %v", len(big), err, f.ReadErr, f.Present)
	}
	f = &File{Path: "huge.jsonl", Kind: contract.ArtifactKindCorpus, Local: true, wantBytes: -1}
	if err := readFile(context.Background(), root, f); err != nil || f.ReadErr == nil || f.Present {
		t.Fatalf("a corpus past the bound: err %v, read error %v, present %v", err, f.ReadErr, f.Present)
	}
}
