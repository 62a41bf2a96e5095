package campaign

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"syscall"
	"testing"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/redact"
)

// TestSecretLeaks finds each secret wherever it lies in a file, across the chunk boundary too,
// in its JSON-escaped form too, and only in the files that hold it.
func TestSecretLeaks(t *testing.T) {
	const token = "qk-leak-Tok3n-77"
	const hf = "hf_<angle>&amp-secret"
	red := redact.New(redact.Secret{Name: "QK_BEARER", Value: token}, redact.Secret{Name: "HF_TOKEN", Value: hf})
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
		write("run/hf/json", []byte(`{"details":"hf_\u003cangle\u003e\u0026amp-secret"}`)),
	)
	files = append(files, files[0]) // listed twice, reported once
	got, err := secretLeaks(files, red)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, map[string][]string{"QK_BEARER": want, "HF_TOKEN": {"run/hf/json"}}) {
		t.Fatalf("leaks %v, want %v and run/hf/json", got, want)
	}
	if got, err := secretLeaks(files, redact.New()); got != nil || err != nil {
		t.Fatalf("no secrets: %v %v", got, err)
	}
	// A FIFO among the files is refused, not waited on.
	fifo := filepath.Join(root, "run/fifo")
	if err := mkfifo(fifo); err != nil {
		t.Skip(err)
	}
	if _, err := secretLeaks([]artifact.File{{Path: "run/fifo", Abs: fifo}}, red); err == nil {
		t.Error("a FIFO was searched")
	}
}

func mkfifo(path string) error { return syscall.Mkfifo(path, 0o600) }
