package gitobj

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegularFileDigest: the digest of a regular file of the commit's tree (executable too);
// none for a symbolic link, a directory, a missing path or a path through a file.
func TestRegularFileDigest(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	if err := os.MkdirAll(filepath.Join(dir, "configs"), 0o755); err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"ttft":"2ms"}`)
	if err := os.WriteFile(filepath.Join(dir, "configs/sim.json"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("configs/sim.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "c")
	g, err := Open(filepath.Join(dir, ".git"))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	tree, err := g.CommitTree(git("rev-parse", "HEAD"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(body)
	for p, want := range map[string]string{
		"configs/sim.json":       "sha256:" + hex.EncodeToString(sum[:]),
		"link.json":              "",
		"configs":                "",
		"configs/none.json":      "",
		"configs/sim.json/inner": "",
	} {
		got, err := g.RegularFileDigest(tree, p)
		if err != nil || got != want {
			t.Errorf("RegularFileDigest(%s) = %q, %v; want %q", p, got, err, want)
		}
	}
	if got, err := g.RegularFileDigest(tree, "run.sh"); err != nil || got == "" {
		t.Errorf("RegularFileDigest(run.sh) = %q, %v: an executable is a regular file", got, err)
	}
}
