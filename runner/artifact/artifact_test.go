package artifact

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(int) { removeBenchFiles() }))
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// pattern returns n bytes that differ at every offset modulo a prime, so a misplaced buffer shows.
func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i%251) ^ seed
	}
	return b
}

func TestModelKind(t *testing.T) {
	for _, tc := range []struct {
		name string
		want contract.ArtifactKind
	}{
		{"model.safetensors", contract.ArtifactKindModelWeight},
		{"model-00001-of-00002.safetensors", contract.ArtifactKindModelWeight},
		{"pytorch_model.bin", contract.ArtifactKindModelWeight},
		{"llama-3-8b.Q4_K_M.gguf", contract.ArtifactKindModelWeight},
		{"consolidated.00.pth", contract.ArtifactKindModelWeight},
		{"adapter.pt", contract.ArtifactKindModelWeight},
		{"MODEL.SAFETENSORS", contract.ArtifactKindModelWeight},
		{"config.json", contract.ArtifactKindModelConfig},
		{"generation_config.json", contract.ArtifactKindModelConfig},
		{"tokenizer.json", contract.ArtifactKindTokenizer},
		{"tokenizer.model", contract.ArtifactKindTokenizer},
		{"tokenizer_config.json", contract.ArtifactKindTokenizer},
		{"vocab.json", contract.ArtifactKindTokenizer},
		{"vocab.txt", contract.ArtifactKindTokenizer},
		{"merges.txt", contract.ArtifactKindTokenizer},
		{"special_tokens_map.json", contract.ArtifactKindTokenizer},
		{"chat_template.jinja", contract.ArtifactKindChatTemplate},
		{"chat_template.json", contract.ArtifactKindChatTemplate},
		{"tool_use.jinja", contract.ArtifactKindChatTemplate},
		{"model.safetensors.index.json", contract.ArtifactKindModelFile},
		{"pytorch_model.bin.index.json", contract.ArtifactKindModelFile},
		{"README.md", contract.ArtifactKindModelFile},
		{"LICENSE", contract.ArtifactKindModelFile},
		{"preprocessor_config.json", contract.ArtifactKindModelFile},
		{"my_config.json", contract.ArtifactKindModelFile},
	} {
		if got := ModelKind(tc.name); got != tc.want {
			t.Errorf("ModelKind(%q) = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestModelFiles(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors",
		"tokenizer.json", "original/consolidated.00.pth", "chat_template.jinja", "README.md",
		".gitattributes", ".cache/huggingface/download/x.lock"} {
		write(t, filepath.Join(dir, f), []byte(f))
	}
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	files, err := ModelFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, string(f.Kind)+" "+f.Path)
		if want := filepath.Join(dir, filepath.FromSlash(f.Path)); f.Abs != want {
			t.Errorf("%s: Abs %s, want %s", f.Path, f.Abs, want)
		}
	}
	want := []string{
		"model_file README.md",
		"chat_template chat_template.jinja",
		"model_config config.json",
		"model_weight model-00001-of-00002.safetensors",
		"model_weight model-00002-of-00002.safetensors",
		"model_weight original/consolidated.00.pth",
		"tokenizer tokenizer.json",
	}
	if !slices.Equal(got, want) {
		t.Errorf("ModelFiles:\n got %q\nwant %q", got, want)
	}

	// The directory itself may be reached through a symlink.
	link := filepath.Join(t.TempDir(), "model")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	if viaLink, err := ModelFiles(link); err != nil || len(viaLink) != len(files) {
		t.Errorf("ModelFiles through a symlinked directory: %d files, %v", len(viaLink), err)
	}
}

func TestModelFilesRefusals(t *testing.T) {
	symlinked := t.TempDir()
	write(t, filepath.Join(symlinked, "config.json"), []byte("{}"))
	if err := os.Mkdir(filepath.Join(symlinked, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../config.json", filepath.Join(symlinked, "sub", "model.safetensors")); err != nil {
		t.Fatal(err)
	}
	_, err := ModelFiles(symlinked)
	if err == nil || !strings.Contains(err.Error(), "sub/model.safetensors is a symlink") {
		t.Errorf("symlink inside the model directory: %v", err)
	}

	dirLink := t.TempDir()
	write(t, filepath.Join(dirLink, "config.json"), []byte("{}"))
	if err := os.Symlink(t.TempDir(), filepath.Join(dirLink, "weights")); err != nil {
		t.Fatal(err)
	}
	if _, err := ModelFiles(dirLink); err == nil || !strings.Contains(err.Error(), "weights is a symlink") {
		t.Errorf("symlinked subdirectory: %v", err)
	}

	fifo := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(fifo, "pipe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ModelFiles(fifo); err == nil || !strings.Contains(err.Error(), "pipe is not a regular file") {
		t.Errorf("fifo: %v", err)
	}

	if _, err := ModelFiles(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("empty directory: %v", err)
	}
	file := filepath.Join(t.TempDir(), "f")
	write(t, file, nil)
	if _, err := ModelFiles(file); err == nil {
		t.Error("a file as model directory: no error")
	}
	if _, err := ModelFiles(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

func TestHashMatchesSHA256(t *testing.T) {
	dir := t.TempDir()
	sizes := []int{0, 1, bufSize - 1, bufSize, bufSize + 1, 3*bufSize + 17, 8*bufSize + 5}
	var files []File
	var want []contract.Artifact
	for i, n := range sizes {
		data := pattern(n, byte(i))
		name := filepath.Join(dir, "f"+string(rune('a'+i)))
		write(t, name, data)
		files = append(files, File{Kind: "model_file", Path: "f" + string(rune('a'+i)), Abs: name})
		want = append(want, contract.Artifact{Kind: "model_file", Path: "f" + string(rune('a'+i)), Digest: sum(data), Bytes: int64(n)})
	}
	for _, workers := range []int{0, 1, 3, 64} {
		got, err := Hash(context.Background(), files, WithWorkers(workers))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("workers=%d:\n got %v\nwant %v", workers, got, want)
		}
	}
	if got, err := Hash(context.Background(), nil); err != nil || len(got) != 0 {
		t.Errorf("no files: %v, %v", got, err)
	}
	// schemas.DigestFile (go-digest) agrees.
	d, n, err := evidence.DigestFile(files[5].Abs)
	if err != nil || d != want[5].Digest || n != want[5].Bytes {
		t.Errorf("schemas.DigestFile = %s %d %v, want %s", d, n, err, want[5].Digest)
	}
}

func TestHashRefusals(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.bin")
	write(t, real, []byte("x"))
	link := filepath.Join(dir, "link.bin")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		file File
		want string
	}{
		{File{"server_binary", "link.bin", link}, "is a symlink"},
		{File{"config_file", "fifo", fifo}, "not a regular file"},
		{File{"config_file", "dir", dir}, "not a regular file"},
		{File{"workload", "workloads/missing.json", filepath.Join(dir, "missing.json")}, "no such file"},
		{File{"workload", "", real}, "needs a receipt path"},
	} {
		files := []File{{"model_file", "real.bin", real}, tc.file, {"model_file", "real.bin", real}}
		_, err := Hash(ctx, files)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file.Abs) {
			t.Errorf("Hash(%s) = %v, want an error naming %s and saying %q", tc.file.Path, err, tc.file.Abs, tc.want)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Hash(cancelled, []File{{"model_file", "real.bin", real}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestHashReportsFirstFailureInInputOrder(t *testing.T) {
	dir := t.TempDir()
	var files []File
	for i := range 20 {
		p := filepath.Join(dir, "f", string(rune('a'+i)))
		if i == 3 || i == 12 {
			p = filepath.Join(dir, "missing", string(rune('a'+i)))
		} else {
			write(t, p, pattern(bufSize*2, byte(i)))
		}
		files = append(files, File{"model_file", string(rune('a' + i)), p})
	}
	for range 5 {
		_, err := Hash(context.Background(), files, WithWorkers(4))
		if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing", "d")) {
			t.Fatalf("want the failure of file 3 (d), got %v", err)
		}
	}
}

func TestRecheck(t *testing.T) {
	dir := t.TempDir()
	var files []File
	for _, n := range []string{"config.json", "model.safetensors", "tokenizer.json", "gone.bin", "grown.bin"} {
		write(t, filepath.Join(dir, n), pattern(bufSize+100, n[0]))
		files = append(files, File{ModelKind(n), n, filepath.Join(dir, n)})
	}
	ctx := context.Background()
	was, err := Hash(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	if changes, err := Recheck(ctx, files, was); err != nil || len(changes) != 0 {
		t.Fatalf("unchanged files: %v, %v", changes, err)
	}

	modified := pattern(bufSize+100, 'm')
	modified[bufSize+50] ^= 1 // same size, one bit
	write(t, filepath.Join(dir, "model.safetensors"), modified)
	os.Remove(filepath.Join(dir, "gone.bin"))
	f, err := os.OpenFile(filepath.Join(dir, "grown.bin"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("more"))
	f.Close()

	changes, err := Recheck(ctx, files, was)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range changes {
		got = append(got, c.Artifact.Path)
		if !strings.Contains(c.Err.Error(), c.Artifact.Path) {
			t.Errorf("change error %q does not name %s", c.Err, c.Artifact.Path)
		}
	}
	if want := []string{"model.safetensors", "gone.bin", "grown.bin"}; !slices.Equal(got, want) {
		t.Fatalf("changes %q, want %q", got, want)
	}
	if c := changes[0]; !errors.Is(c.Err, ErrChanged) || c.Now != sum(modified) || c.Artifact != was[1] {
		t.Errorf("modified: %+v", c)
	}
	if c := changes[1]; !errors.Is(c.Err, ErrGone) || !errors.Is(c.Err, fs.ErrNotExist) || c.Now != "" {
		t.Errorf("gone: %+v", c)
	}
	if c := changes[2]; !errors.Is(c.Err, ErrChanged) || c.Now == "" || !strings.Contains(c.Err.Error(), "bytes") {
		t.Errorf("grown: %+v", c)
	}

	if _, err := Recheck(ctx, files[:2], was); err == nil {
		t.Error("mismatched lengths: no error")
	}
	swapped := slices.Clone(files)
	swapped[0], swapped[1] = swapped[1], swapped[0]
	if _, err := Recheck(ctx, swapped, was); err == nil {
		t.Error("misaligned lists: no error")
	}
}

// cancelAfter cancels a context once n bytes have been read through it.
type cancelAfter struct {
	r      *strings.Reader
	n      int
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.n -= n; c.n <= 0 {
		c.cancel()
	}
	return n, err
}

type failingReader struct{ after int }

func (f *failingReader) Read(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, errors.New("disk on fire")
	}
	n := min(len(p), f.after)
	f.after -= n
	return n, nil
}

// TestSequential: the chunked reader hashes every byte, stops on cancellation and on read errors.
func TestSequential(t *testing.T) {
	for _, n := range []int{0, 5, bufSize, 7*bufSize + 3} {
		data := pattern(n, 9)
		h := sha256.New()
		got, err := sequential(context.Background(), strings.NewReader(string(data)), h)
		if err != nil || got != int64(n) || "sha256:"+hex.EncodeToString(h.Sum(nil)) != sum(data) {
			t.Errorf("%d bytes: read %d, %v, or digest mismatch", n, got, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &cancelAfter{r: strings.NewReader(string(pattern(20*bufSize, 1))), n: 2 * bufSize, cancel: cancel}
	if _, err := sequential(ctx, r, sha256.New()); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled mid-stream: %v", err)
	}
	if _, err := sequential(context.Background(), &failingReader{after: 3*bufSize + 10}, sha256.New()); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("read error: %v", err)
	}
}
