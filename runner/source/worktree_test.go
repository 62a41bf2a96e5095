package source

import (
	"context"
	"os"
	"strings"
	"testing"
)

// TestHiddenChangesAreDirty: a change git status is told to ignore (skip-worktree,
// assume-unchanged), a file a sparse checkout leaves out, a flipped executable bit and a
// retargeted symlink all make the worktree unclean, with both status backends; the entry names
// the path and the index flag that hid it. Without the flags' changes, a flagged file is clean.
func TestHiddenChangesAreDirty(t *testing.T) {
	if !haveGit() {
		t.Skip("the index flags are set with the git command")
	}
	for _, b := range backends(t) {
		t.Run(b.String(), func(t *testing.T) {
			tr := newRepo(t)
			tr.writeCommit("configs/server.yaml", "port: 18080\n", "configs/other.yaml", "a: 1\n", "run.sh", "#!/bin/sh\n", "keep.txt", "x\n")
			gitCLI(t, tr.dir, "update-index", "--skip-worktree", "configs/server.yaml")
			gitCLI(t, tr.dir, "update-index", "--assume-unchanged", "configs/other.yaml")
			id, err := Inspect(context.Background(), tr.dir, WithStatusBackend(b))
			if err != nil {
				t.Fatal(err)
			}
			if !id.Clean {
				t.Fatalf("flags without changes: dirty %v", id.Dirty)
			}
			tr.write("configs/server.yaml", "port: 18123\n")
			tr.write("configs/other.yaml", "a: 2\n")
			if out := gitCLI(t, tr.dir, "status", "--porcelain"); out != "" {
				t.Fatalf("git status sees the changes (the flags do not hide them here): %q", out)
			}
			id, err = Inspect(context.Background(), tr.dir, WithStatusBackend(b))
			if err != nil {
				t.Fatal(err)
			}
			want := []string{
				"configs/other.yaml (working-tree bytes differ from HEAD; hidden from git status by assume-unchanged)",
				"configs/server.yaml (working-tree bytes differ from HEAD; hidden from git status by skip-worktree)",
			}
			if b == StatusGoGit {
				// go-git's status does not honour assume-unchanged (nor decode it): it lists the path.
				want[0] = "configs/other.yaml"
			}
			if id.Clean || strings.Join(id.Dirty, "\n") != strings.Join(want, "\n") {
				t.Errorf("dirty %q, want %q", id.Dirty, want)
			}
		})
	}
}

func TestModeSymlinkAndSparseAreDirty(t *testing.T) {
	if !haveGit() {
		t.Skip("needs the git command")
	}
	tr := newRepo(t)
	tr.writeCommit("run.sh", "#!/bin/sh\n", "keep.txt", "x\n", "other.txt", "y\n")
	if err := os.Symlink("keep.txt", tr.path("link")); err != nil {
		t.Fatal(err)
	}
	tr.add("link")
	tr.commit("link")
	gitCLI(t, tr.dir, "update-index", "--skip-worktree", "run.sh", "link", "other.txt")
	if err := os.Chmod(tr.path("run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(tr.path("link"))
	if err := os.Symlink("other.txt", tr.path("link")); err != nil {
		t.Fatal(err)
	}
	os.Remove(tr.path("other.txt"))
	id, err := Inspect(context.Background(), tr.dir, WithStatusBackend(StatusGit))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"link (symlink target differs from HEAD; hidden from git status by skip-worktree)",
		"other.txt (missing from the working tree; hidden from git status by skip-worktree)",
		"run.sh (executable bit differs from HEAD; hidden from git status by skip-worktree)",
	}
	if strings.Join(id.Dirty, "\n") != strings.Join(want, "\n") {
		t.Errorf("dirty %q, want %q", id.Dirty, want)
	}

	// A sparse checkout that leaves a file out: the tree run from is not HEAD's.
	sp := newRepo(t)
	sp.writeCommit("docs/a.md", "a\n", "src/b.go", "package b\n")
	// The classic way (git sparse-checkout set also turns on extensions.worktreeConfig, which
	// go-git refuses to open at all).
	gitCLI(t, sp.dir, "config", "core.sparseCheckout", "true")
	if err := os.MkdirAll(sp.path(".git/info"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sp.path(".git/info/sparse-checkout"), []byte("/src/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCLI(t, sp.dir, "read-tree", "-mu", "HEAD")
	id, err = Inspect(context.Background(), sp.dir, WithStatusBackend(StatusGit))
	if err != nil {
		t.Fatal(err)
	}
	want = []string{"docs/a.md (missing from the working tree; hidden from git status by skip-worktree, sparse checkout)"}
	if strings.Join(id.Dirty, "\n") != strings.Join(want, "\n") {
		t.Errorf("sparse checkout: dirty %q, want %q", id.Dirty, want)
	}
}
