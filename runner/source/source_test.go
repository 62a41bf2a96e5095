package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
)

var (
	hex40      = regexp.MustCompile(`^[0-9a-f]{40}$`)
	treeHashRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

func inspect(t *testing.T, dir string, opts ...Option) *Identity {
	t.Helper()
	id, err := Inspect(context.Background(), dir, opts...)
	if err != nil {
		t.Fatalf("Inspect(%s): %v", dir, err)
	}
	return id
}

func TestInspectClean(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	tr.write(".gitignore", "*.log\n")
	h := tr.writeCommit("README.md", "hello\n", "cmd/main.go", "package main\n", ".gitignore", "*.log\n")
	for _, b := range backends(t) {
		t.Run(b.String(), func(t *testing.T) {
			id := inspect(t, tr.dir, WithStatusBackend(b))
			if !id.Clean || len(id.Dirty) != 0 {
				t.Fatalf("fresh commit: Clean=%v Dirty=%q", id.Clean, id.Dirty)
			}
			if id.StatusBackend != b.String() {
				t.Errorf("StatusBackend = %q, want %q", id.StatusBackend, b)
			}
			if id.Commit != h.String() || !hex40.MatchString(id.Commit) || !hex40.MatchString(id.Tree) {
				t.Errorf("Commit %q (want %s), Tree %q", id.Commit, h, id.Tree)
			}
			if !treeHashRE.MatchString(id.TreeHash) {
				t.Errorf("TreeHash %q does not match %s", id.TreeHash, treeHashRE)
			}
			if id.Repository != tr.dir {
				t.Errorf("Repository = %q, want the worktree root %q (no origin)", id.Repository, tr.dir)
			}
			if id.OriginMain != nil || id.AtOriginMain() {
				t.Errorf("OriginMain = %v without an origin", id.OriginMain)
			}
			s := id.Schema()
			if s.TreeHashFormat != "qualkit-source-tree-v1" || s.Commit != id.Commit || s.Tree != id.Tree || s.TreeHash != id.TreeHash || !s.Clean || s.OriginMain != nil {
				t.Errorf("Schema() = %+v", s)
			}
		})
	}
	if haveGit() {
		if got := gitCLI(t, tr.dir, "rev-parse", "HEAD^{tree}"); got != inspect(t, tr.dir).Tree {
			t.Errorf("Tree differs from git rev-parse HEAD^{tree} = %s", got)
		}
	}
	// The auto backend picks the git command when it is installed.
	want := "go-git"
	if haveGit() {
		want = "git"
	}
	if got := inspect(t, tr.dir).StatusBackend; got != want {
		t.Errorf("auto backend used %q, want %q", got, want)
	}
	if got := inspect(t, tr.dir, WithGitCommand(filepath.Join(t.TempDir(), "no-git"))).StatusBackend; got != "go-git" {
		t.Errorf("auto backend without a git command used %q, want go-git", got)
	}
}

func TestInspectDirty(t *testing.T) {
	isolateGitConfig(t)
	for _, b := range backends(t) {
		for _, tc := range []struct {
			name   string
			change func(tr *testRepo)
			want   []string
		}{
			{"modified", func(tr *testRepo) { tr.write("a.txt", "changed\n") }, []string{"a.txt"}},
			{"staged", func(tr *testRepo) { tr.write("dir/b.txt", "staged\n"); tr.add("dir/b.txt") }, []string{"dir/b.txt"}},
			{"staged new file", func(tr *testRepo) { tr.write("new.txt", "x"); tr.add("new.txt") }, []string{"new.txt"}},
			{"deleted", func(tr *testRepo) { os.Remove(tr.path("a.txt")) }, []string{"a.txt"}},
			{"untracked", func(tr *testRepo) { tr.write("deep/er/u.txt", "u") }, []string{"deep/er/u.txt"}},
			{"untracked with space", func(tr *testRepo) { tr.write("has space.txt", "u") }, []string{"has space.txt"}},
			{"exec bit", func(tr *testRepo) { os.Chmod(tr.path("a.txt"), 0o755) }, []string{"a.txt"}},
			{"all at once", func(tr *testRepo) {
				tr.write("a.txt", "changed\n")
				tr.write("dir/b.txt", "staged\n")
				tr.add("dir/b.txt")
				os.Remove(tr.path("dir/c.txt"))
				tr.write("z-untracked", "u")
			}, []string{"a.txt", "dir/b.txt", "dir/c.txt", "z-untracked"}},
		} {
			t.Run(b.String()+"/"+tc.name, func(t *testing.T) {
				tr := newRepo(t)
				tr.writeCommit("a.txt", "a\n", "dir/b.txt", "b\n", "dir/c.txt", "c\n")
				tc.change(tr)
				id := inspect(t, tr.dir, WithStatusBackend(b))
				if id.Clean || !slices.Equal(id.Dirty, tc.want) {
					t.Errorf("Clean=%v Dirty=%q, want %q", id.Clean, id.Dirty, tc.want)
				}
			})
		}
	}
}

// TestIgnoredFilesAreNotDirty: files ignored by .gitignore (also nested), .git/info/exclude or
// the repository's core.excludesFile do not make the worktree unclean, for both backends.
func TestIgnoredFilesAreNotDirty(t *testing.T) {
	isolateGitConfig(t)
	for _, b := range backends(t) {
		t.Run(b.String(), func(t *testing.T) {
			tr := newRepo(t)
			tr.writeCommit(".gitignore", "*.log\nbuild/\n", "sub/.gitignore", "*.tmp\n", "a.txt", "a")
			tr.write("run.log", "x")
			tr.write("build/out/bin", "x")
			tr.write("sub/x.tmp", "x")
			if err := os.MkdirAll(filepath.Join(tr.dir, ".git", "info"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(tr.dir, ".git", "info", "exclude"), []byte("# local\nsecret.tmp\nscratch/\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tr.write("secret.tmp", "x")
			tr.write("scratch/notes.md", "x")
			excl := filepath.Join(t.TempDir(), "excludes")
			if err := os.WriteFile(excl, []byte("*.swp\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, err := tr.repo.Config()
			if err != nil {
				t.Fatal(err)
			}
			cfg.Raw.Section("core").SetOption("excludesfile", excl)
			if err := tr.repo.SetConfig(cfg); err != nil {
				t.Fatal(err)
			}
			tr.write(".a.txt.swp", "x")
			id := inspect(t, tr.dir, WithStatusBackend(b))
			if !id.Clean {
				t.Fatalf("ignored files made the worktree dirty: %q", id.Dirty)
			}
			tr.write("visible.tmp", "x") // *.tmp is ignored only under sub/
			id = inspect(t, tr.dir, WithStatusBackend(b))
			if !slices.Equal(id.Dirty, []string{"visible.tmp"}) {
				t.Errorf("Dirty = %q, want [visible.tmp]", id.Dirty)
			}
		})
	}
}

func TestOriginMain(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	first := tr.writeCommit("a.txt", "a")
	ref := plumbing.NewHashReference(plumbing.NewRemoteReferenceName("origin", "main"), first)
	if err := tr.repo.Storer.SetReference(ref); err != nil {
		t.Fatal(err)
	}
	id := inspect(t, tr.dir)
	if id.OriginMain == nil || *id.OriginMain != first.String() || !id.AtOriginMain() {
		t.Fatalf("HEAD == origin/main: OriginMain=%v AtOriginMain=%v", id.OriginMain, id.AtOriginMain())
	}
	if s := id.Schema(); s.OriginMain == nil || *s.OriginMain != first.String() {
		t.Errorf("Schema().OriginMain = %v", s.OriginMain)
	}
	tr.writeCommit("b.txt", "b") // a local commit not on origin/main
	id = inspect(t, tr.dir)
	if id.OriginMain == nil || *id.OriginMain != first.String() || id.AtOriginMain() {
		t.Errorf("HEAD ahead of origin/main: OriginMain=%v AtOriginMain=%v", id.OriginMain, id.AtOriginMain())
	}
}

func TestRepositoryLabelRedactsOrigin(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	tr.writeCommit("a.txt", "a")
	if _, err := tr.repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://user:s3cret@example.com/org/repo.git?token=abc"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := inspect(t, tr.dir).Repository, "https://example.com/org/repo.git"; got != want {
		t.Errorf("Repository = %q, want %q", got, want)
	}
}

func TestRedactURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"https://github.com/org/repo.git", "https://github.com/org/repo.git"},
		{"https://ghp_TOKEN@github.com/org/repo.git", "https://github.com/org/repo.git"},
		{"https://user:pass@github.com/org/repo.git", "https://github.com/org/repo.git"},
		{"http://x:y@host:8080/r?access_token=z#frag", "http://host:8080/r"},
		{"ssh://git@github.com/org/repo.git", "ssh://git@github.com/org/repo.git"},
		{"ssh://git:pw@github.com/org/repo.git", "ssh://git@github.com/org/repo.git"},
		{"git@github.com:org/repo.git", "git@github.com:org/repo.git"},
		{"/srv/git/repo.git", "/srv/git/repo.git"},
		{"file:///srv/git/repo.git", "file:///srv/git/repo.git"},
		{"https://tok%zz@host/r", "https://host/r"}, // unparseable escape: user info cut by pattern
	} {
		if got := RedactURL(tc.in); got != tc.want {
			t.Errorf("RedactURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestDetachedHead(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	first := tr.writeCommit("a.txt", "a")
	tr.writeCommit("a.txt", "b")
	wt, err := tr.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: first}); err != nil {
		t.Fatal(err)
	}
	head, err := tr.repo.Head()
	if err != nil || head.Name() != plumbing.HEAD {
		t.Fatalf("HEAD is not detached: %v %v", head, err)
	}
	for _, b := range backends(t) {
		id := inspect(t, tr.dir, WithStatusBackend(b))
		if id.Commit != first.String() || !id.Clean {
			t.Errorf("%s: detached HEAD: Commit=%s (want %s) Clean=%v Dirty=%q", b, id.Commit, first, id.Clean, id.Dirty)
		}
	}
}

func TestInspectFromSubdirectory(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	tr.writeCommit("deep/dir/a.txt", "a")
	sub := tr.path("deep/dir")
	root, err := Root(sub)
	if err != nil || root != tr.dir {
		t.Fatalf("Root(%s) = %q, %v; want %q", sub, root, err, tr.dir)
	}
	if a, b := inspect(t, sub), inspect(t, tr.dir); a.Commit != b.Commit || a.TreeHash != b.TreeHash || !a.Clean {
		t.Errorf("from subdirectory: %+v, from root: %+v", a, b)
	}
}

func TestInspectErrors(t *testing.T) {
	isolateGitConfig(t)
	ctx := context.Background()
	plain := t.TempDir()
	if _, err := Inspect(ctx, plain); !errors.Is(err, ErrNotRepository) {
		t.Errorf("plain directory: %v, want ErrNotRepository", err)
	}
	if _, err := Root(plain); !errors.Is(err, ErrNotRepository) {
		t.Errorf("Root of plain directory: %v, want ErrNotRepository", err)
	}
	if _, err := Inspect(ctx, filepath.Join(plain, "missing")); err == nil {
		t.Error("missing directory: no error")
	}
	empty := newRepo(t)
	if _, err := Inspect(ctx, empty.dir); !errors.Is(err, ErrNoCommit) {
		t.Errorf("unborn HEAD: %v, want ErrNoCommit", err)
	}
	bare := t.TempDir()
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	if _, err := Inspect(ctx, bare); !errors.Is(err, ErrNoWorktree) {
		t.Errorf("bare repository: %v, want ErrNoWorktree", err)
	}
	tr := newRepo(t)
	tr.writeCommit("a.txt", "a")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Inspect(cancelled, tr.dir); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
	if _, err := Inspect(ctx, tr.dir, WithStatusBackend(StatusGit), WithGitCommand(filepath.Join(plain, "no-git"))); err == nil {
		t.Error("StatusGit without a git command: no error")
	}
}

func TestCheckTracked(t *testing.T) {
	isolateGitConfig(t)
	ctx := context.Background()
	tr := newRepo(t)
	tr.writeCommit("workloads/w.json", "{}\n", "workloads/x.json", "{}\n", "workloads/gone.json", "{}\n")
	tr.write("workloads/untracked.json", "{}\n")
	tr.write("workloads/x.json", "{\"changed\":true}\n")
	os.Remove(tr.path("workloads/gone.json"))
	if err := os.Symlink("w.json", tr.path("workloads/link.json")); err != nil {
		t.Fatal(err)
	}
	tr.add("workloads/link.json")
	tr.commit("link")
	for _, tc := range []struct {
		rel  string
		want error
	}{
		{"workloads/w.json", nil},
		{"workloads/untracked.json", ErrNotTracked},
		{"workloads/x.json", ErrModified},
		{"workloads/gone.json", ErrModified},
		{"workloads", ErrNotTracked},
		{"workloads/link.json", ErrNotTracked},
		{"nope/w.json", ErrNotTracked},
		{"../w.json", nil},
		{"/abs/w.json", nil},
		{"workloads/./w.json", nil},
		{"", nil},
	} {
		err := CheckTracked(ctx, tr.path("workloads"), tc.rel)
		switch {
		case tc.want == nil && tc.rel == "workloads/w.json":
			if err != nil {
				t.Errorf("CheckTracked(%q) = %v, want nil", tc.rel, err)
			}
		case tc.want == nil:
			if err == nil {
				t.Errorf("CheckTracked(%q): no error for a path that is not clean and relative", tc.rel)
			}
		case !errors.Is(err, tc.want):
			t.Errorf("CheckTracked(%q) = %v, want %v", tc.rel, err, tc.want)
		}
		if err != nil && tc.rel != "" && !regexp.MustCompile(regexp.QuoteMeta(tc.rel)).MatchString(err.Error()) {
			t.Errorf("error %q does not name %q", err, tc.rel)
		}
	}
	// A symlinked directory component is refused even when the file behind it matches.
	tr2 := newRepo(t)
	tr2.writeCommit("d/w.json", "{}\n")
	os.Rename(tr2.path("d"), tr2.path("real"))
	if err := os.Symlink("real", tr2.path("d")); err != nil {
		t.Fatal(err)
	}
	if err := CheckTracked(ctx, tr2.dir, "d/w.json"); !errors.Is(err, ErrModified) {
		t.Errorf("symlinked directory: %v, want ErrModified", err)
	}
}
