package qualgguf_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/tools/internal/qualgguf"
)

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := qualgguf.Main(append([]string{"qualgguf"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func TestWriteThenInspect(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tiny.gguf")
	code, out, errs := run("write", "--output", path)
	if code != 0 || !strings.HasPrefix(out, path+": sha256:") || !strings.Contains(out, "vocabulary ") {
		t.Fatalf("write: exit %d\n%s%s", code, out, errs)
	}
	digest := strings.Fields(out)[1]
	digest = strings.TrimSuffix(digest, ",")
	// Writing again replaces the file with the same bytes and leaves no temporary file behind.
	before, _ := os.ReadFile(path)
	if code, out2, errs := run("write", "--output", path); code != 0 || out2 != out {
		t.Fatalf("second write: exit %d\n%s%s", code, out2, errs)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(before, after) {
		t.Fatal("the second write changed the bytes")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("directory holds %d entries, want only the model", len(entries))
	}

	code, out, errs = run("inspect", "--json", path)
	if code != 0 {
		t.Fatalf("inspect: exit %d\n%s%s", code, out, errs)
	}
	var s qualgguf.Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("inspect --json: %v\n%s", err, out)
	}
	if s.Digest != digest || s.Version != 3 || s.Alignment != 32 || len(s.Tensors) != 3+4*9 || int(s.Bytes) != len(before) {
		t.Fatalf("inspect: %+v", s)
	}
	code, out, _ = run("inspect", path)
	if code != 0 || !strings.Contains(out, "GGUF v3") || !strings.Contains(out, "tokenizer.ggml.tokens") || !strings.Contains(out, "tensor output.weight") {
		t.Fatalf("inspect text: exit %d\n%s", code, out)
	}

	// A different seed gives a different file.
	other := filepath.Join(dir, "other.gguf")
	if code, out3, _ := run("write", "--output", other, "--seed", "7"); code != 0 || strings.Contains(out3, digest) {
		t.Fatalf("write --seed 7: exit %d\n%s", code, out3)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	notGGUF := filepath.Join(dir, "x.gguf")
	if err := os.WriteFile(notGGUF, []byte("GGML not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "name a command"},
		{[]string{"frobnicate"}, 2, "unknown command"},
		{[]string{"write"}, 2, "needs --output"},
		{[]string{"write", "--output", filepath.Join(dir, "no", "such", "dir", "m.gguf")}, 2, "--output"},
		{[]string{"write", "--output", filepath.Join(dir, "m.gguf"), "--heads", "3"}, 2, "divisible"},
		{[]string{"write", "--output", filepath.Join(dir, "m.gguf"), "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"inspect"}, 2, "needs one FILE"},
		{[]string{"inspect", filepath.Join(dir, "absent.gguf")}, 2, "no such file"},
		{[]string{"inspect", notGGUF}, 1, `magic "GGML"`},
	} {
		code, out, errs := run(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("qualgguf %v: exit %d, stderr %q (stdout %q); want exit %d mentioning %q", tc.args, code, errs, out, tc.code, tc.want)
		}
	}
}
