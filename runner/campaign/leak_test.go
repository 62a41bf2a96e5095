package campaign

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/qualkit/qualkit/runner/artifact"
)

// TestTokenLeaks finds the token wherever it lies in a file, across the chunk boundary too, and
// only in the files that hold it.
func TestTokenLeaks(t *testing.T) {
	const token = "qk-leak-Tok3n-77"
	root := t.TempDir()
	write := func(rel string, data []byte) artifact.File {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, rel)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, rel), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return artifact.File{Path: rel, Abs: filepath.Join(root, rel)}
	}
	pad := func(n int) []byte { return bytes.Repeat([]byte("x"), n) }
	var files []artifact.File
	var want []string
	for _, at := range []int{0, 100, leakChunk - len(token), leakChunk - 5, leakChunk, leakChunk + 3, 3*leakChunk - 1 - len(token)} {
		rel := filepath.Join("run", "hit", string(rune('a'+len(files))))
		files = append(files, write(rel, append(append(pad(at), token...), pad(7)...)))
		want = append(want, rel)
	}
	files = append(files,
		write("run/clean/big", pad(3*leakChunk+11)),
		write("run/clean/partial", append(append(pad(leakChunk-5), token[:len(token)-1]...), pad(9)...)),
		write("run/clean/empty", nil),
		artifact.File{Path: "run/clean/missing", Abs: filepath.Join(root, "run/clean/missing")},
	)
	files = append(files, files[0]) // listed twice, reported once
	got, err := tokenLeaks(root, files, token)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("leaks %v, want %v", got, want)
	}
	if got, err := tokenLeaks(root, files, ""); got != nil || err != nil {
		t.Fatalf("no token: %v %v", got, err)
	}
	if found, err := fileContains(filepath.Join(root, "run/hit/a"), []byte("q")); !found || err != nil {
		t.Fatalf("one-byte needle: %v %v", found, err)
	}
}
