package source

import (
	"context"
	"crypto/sha1"
	"os"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
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

// TestSizeDecidesBeforeReading: a large working-tree file of another size than HEAD's blob
// differs without being read (an 8 GiB sparse file in the tree cost seconds of hashing before it
// was refused), from loose objects and from a pack with deltas alike; a file of the same size,
// or a small one, is still read and hashed. The read is seen through a cancelled context: only a
// read fails on it.
func TestSizeDecidesBeforeReading(t *testing.T) {
	if !haveGit() {
		t.Skip("packs with the git command")
	}
	for _, packed := range []bool{false, true} {
		tr := newRepo(t)
		tr.writeCommit("a.txt", strings.Repeat("first version of the file\n", 40), "b.txt", "bbbb\n")
		head := tr.writeCommit("a.txt", strings.Repeat("first version of the file\n", 40)+"and a second\n")
		if packed {
			gitCLI(t, tr.dir, "gc", "-q", "--aggressive")
			r, err := git.PlainOpen(tr.dir) // the pack is new to the open repository
			if err != nil {
				t.Fatal(err)
			}
			tr.repo = r
		}
		id, err := Inspect(context.Background(), tr.dir)
		if err != nil || !id.Clean {
			t.Fatalf("packed %v: clean %v, dirty %v, %v", packed, id != nil && id.Clean, id, err)
		}
		commit, err := tr.repo.CommitObject(head)
		if err != nil {
			t.Fatal(err)
		}
		var entries []treeEntry
		if err := walkTree(context.Background(), tr.repo, commit.TreeHash, "", 0, &entries); err != nil {
			t.Fatal(err)
		}
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		buf := make([]byte, 64<<10)
		for _, e := range entries {
			size := blobSize(tr.repo, e.hash)
			if want := map[string]int64{"a.txt": 40*26 + 13, "b.txt": 5}[e.path]; size != want {
				t.Fatalf("packed %v: %s: blob size %d, want %d", packed, e.path, size, want)
			}
			sizeOf := func() int64 { return size }
			if err := os.Truncate(tr.path(e.path), sizeFirstAbove+1); err != nil {
				t.Fatal(err)
			}
			how, err := compareEntry(cancelled, tr.dir, e, sizeOf, sha1.New(), buf)
			if err != nil || how != "working-tree bytes differ from HEAD" {
				t.Errorf("packed %v: %s, large, of another size: %q, %v (read, or not found to differ)", packed, e.path, how, err)
			}
			tr.write(e.path, "x")
			if how, err := compareEntry(cancelled, tr.dir, e, sizeOf, sha1.New(), buf); err == nil {
				t.Errorf("packed %v: %s, small, was not read: %q", packed, e.path, how)
			}
			tr.write(e.path, strings.Repeat("y", int(size)))
			if how, err := compareEntry(cancelled, tr.dir, e, sizeOf, sha1.New(), buf); err == nil {
				t.Errorf("packed %v: %s of the same size was not read: %q", packed, e.path, how)
			}
		}
	}
}
