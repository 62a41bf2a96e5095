package source

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// isolateGitConfig keeps the user's and the system's git configuration (global excludes, say)
// out of a test.
func isolateGitConfig(t testing.TB) {
	t.Helper()
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, ".config"))
}

type testRepo struct {
	t    testing.TB
	dir  string
	repo *git.Repository
}

// newRepo makes an empty repository (branch main) in a temp dir with go-git.
func newRepo(t testing.TB) *testRepo {
	t.Helper()
	dir := t.TempDir()
	r, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Resolve the temp dir the way go-git reports worktree roots (symlinked /tmp, say).
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &testRepo{t: t, dir: real, repo: r}
}

func (tr *testRepo) path(rel string) string { return filepath.Join(tr.dir, filepath.FromSlash(rel)) }

func (tr *testRepo) write(rel, content string) {
	tr.t.Helper()
	p := tr.path(rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		tr.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		tr.t.Fatal(err)
	}
}

func (tr *testRepo) add(rels ...string) {
	tr.t.Helper()
	wt, err := tr.repo.Worktree()
	if err != nil {
		tr.t.Fatal(err)
	}
	for _, rel := range rels {
		if _, err := wt.Add(rel); err != nil {
			tr.t.Fatalf("add %s: %v", rel, err)
		}
	}
}

var commitClock = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func (tr *testRepo) commit(msg string) plumbing.Hash {
	tr.t.Helper()
	wt, err := tr.repo.Worktree()
	if err != nil {
		tr.t.Fatal(err)
	}
	commitClock = commitClock.Add(time.Minute)
	sig := &object.Signature{Name: "Test", Email: "test@example.com", When: commitClock}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: sig, Committer: sig, AllowEmptyCommits: true})
	if err != nil {
		tr.t.Fatal(err)
	}
	return h
}

// writeCommit writes, adds and commits files given as path, content pairs.
func (tr *testRepo) writeCommit(pairs ...string) plumbing.Hash {
	tr.t.Helper()
	for i := 0; i < len(pairs); i += 2 {
		tr.write(pairs[i], pairs[i+1])
		tr.add(pairs[i])
	}
	return tr.commit("commit")
}

func haveGit() bool {
	_, err := exec.LookPath("git")
	return err == nil
}

// gitCLI runs the git command in dir and returns its trimmed stdout.
func gitCLI(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(gitEnv(os.Environ()),
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// backends lists the status backends a test runs against (the git one only when git is installed).
func backends(t *testing.T) []StatusBackend {
	if haveGit() {
		return []StatusBackend{StatusGit, StatusGoGit}
	}
	t.Log("git command not found: testing the go-git status backend only")
	return []StatusBackend{StatusGoGit}
}
