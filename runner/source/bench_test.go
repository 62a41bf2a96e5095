package source

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// benchRepo builds a committed repository of n files of about 15 KiB each (n=5000: ~75 MB, the
// size measured in shared/reference/attest-libs.md §8.3) with the git command.
func benchRepo(b *testing.B, n int) string {
	b.Helper()
	if !haveGit() {
		b.Skip("git command not found")
	}
	isolateGitConfig(b)
	dir := b.TempDir()
	gitCLI(b, dir, "init", "-q", "-b", "main")
	rng := rand.New(rand.NewPCG(1, 2))
	buf := make([]byte, 15<<10)
	for i := range n {
		for j := range buf {
			buf[j] = 'a' + byte(rng.IntN(26))
			if j%80 == 79 {
				buf[j] = '\n'
			}
		}
		p := filepath.Join(dir, fmt.Sprintf("d%02d", i%50), fmt.Sprintf("f%05d.txt", i))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitCLI(b, dir, "add", "-A")
	gitCLI(b, dir, "commit", "-q", "-m", "bench")
	gitCLI(b, dir, "status", "--porcelain") // refresh the index stat cache, as any git status would
	return dir
}

// BenchmarkStatus5000 compares the two clean-check backends on a clean 5,000-file repository
// (go test -run '^$' -bench Status5000 ./runner/source/).
func BenchmarkStatus5000(b *testing.B) {
	dir := benchRepo(b, 5000)
	r, root, err := open(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for _, be := range []StatusBackend{StatusGit, StatusGoGit} {
		b.Run(be.String(), func(b *testing.B) {
			for b.Loop() {
				dirty, _, err := status(ctx, r, root, options{status: be})
				if err != nil || len(dirty) != 0 {
					b.Fatalf("status: %v, dirty %d", err, len(dirty))
				}
			}
		})
	}
}

// BenchmarkTreeHash5000 measures the qualkit-source-tree-v1 hash of a 5,000-file HEAD tree.
func BenchmarkTreeHash5000(b *testing.B) {
	dir := benchRepo(b, 5000)
	r, root, err := open(dir)
	if err != nil {
		b.Fatal(err)
	}
	head, err := headCommit(r, root)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := treeHash(context.Background(), r, root, head.TreeHash); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkInspect5000 is the whole identity (open, HEAD, tree hash, origin/main, clean check),
// on loose objects (as after `git commit`) and on a packed repository (as after a clone or gc).
func BenchmarkInspect5000(b *testing.B) {
	dir := benchRepo(b, 5000)
	run := func(b *testing.B) {
		for b.Loop() {
			if _, err := Inspect(context.Background(), dir); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("loose", run)
	gitCLI(b, dir, "gc", "-q")
	b.Run("packed", run)
}
