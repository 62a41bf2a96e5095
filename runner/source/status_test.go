package source

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParsePorcelainV2(t *testing.T) {
	rec := func(s ...string) []byte { return []byte(strings.Join(s, "\x00") + "\x00") }
	for _, tc := range []struct {
		name string
		out  []byte
		want []string
	}{
		{"empty", nil, []string{}},
		{"ordinary", rec("1 .M N... 100644 100644 100644 aaaa bbbb src/a b.go"), []string{"src/a b.go"}},
		{"staged new", rec("1 A. N... 000000 100644 100644 0000 cccc new.txt"), []string{"new.txt"}},
		{"rename", rec("2 R. N... 100644 100644 100644 aaaa aaaa R100 new name.txt", "old name.txt"), []string{"new name.txt", "old name.txt"}},
		{"unmerged", rec("u UU N... 100644 100644 100644 100644 a b c conflict.txt"), []string{"conflict.txt"}},
		{"untracked and ignored", rec("? dir/u.txt", "! ignored.log"), []string{"dir/u.txt"}},
		{"header and duplicates", rec("# branch.oid abc", "? z", "1 .M N... 100644 100644 100644 a b z", "? a"), []string{"a", "z"}},
	} {
		got, err := parsePorcelainV2(tc.out)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"X what\x00", "1 .M short\x00"} {
		if _, err := parsePorcelainV2([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestStatusFallback: with StatusAuto a git command that fails gives way to go-git; with
// StatusGit its failure is the error, quoting git's stderr.
func TestStatusFallback(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	tr.writeCommit("a.txt", "a")
	tr.write("u.txt", "untracked")
	fake := filepath.Join(t.TempDir(), "git")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho 'fatal: detected dubious ownership' >&2\nexit 128\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	id := inspect(t, tr.dir, WithGitCommand(fake))
	if id.StatusBackend != "go-git" || !slices.Equal(id.Dirty, []string{"u.txt"}) {
		t.Errorf("auto with a failing git: backend %s, Dirty %q", id.StatusBackend, id.Dirty)
	}
	_, err := Inspect(t.Context(), tr.dir, WithStatusBackend(StatusGit), WithGitCommand(fake))
	if err == nil || !strings.Contains(err.Error(), "dubious ownership") {
		t.Errorf("StatusGit with a failing git: %v", err)
	}
}

func TestGitEnvDropsGitVariables(t *testing.T) {
	got := gitEnv([]string{"HOME=/h", "GIT_DIR=/elsewhere", "GIT_INDEX_FILE=x", "PATH=/bin", "XGIT_DIR=kept"})
	want := []string{"HOME=/h", "PATH=/bin", "XGIT_DIR=kept", "GIT_TERMINAL_PROMPT=0"}
	if !slices.Equal(got, want) {
		t.Errorf("gitEnv = %q, want %q", got, want)
	}
}
