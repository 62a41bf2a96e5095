package verify

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// gitCmd runs git in dir with a fixed identity and no user configuration.
func gitCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// treeHashByGit computes qualkit-source-tree-v1 of a commit with the git command line, as
// docs/source-identity.md defines it: an implementation independent of the verifier's reader.
func treeHashByGit(t *testing.T, dir, commit string) string {
	t.Helper()
	var lines []string
	for _, l := range strings.Split(gitCmd(t, dir, "ls-tree", "-r", "--full-tree", commit), "\n") {
		meta, path, _ := strings.Cut(l, "\t")
		f := strings.Fields(meta) // mode type object
		id := "commit:" + f[2]
		if f[1] == "blob" {
			cmd := exec.Command("git", "cat-file", "blob", f[2])
			cmd.Dir = dir
			b, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			id = "sha256:" + hex.EncodeToString(sum[:])
		}
		lines = append(lines, fmt.Sprintf("%06s %s %s\x00", f[0], id, path))
	}
	sort.Slice(lines, func(i, j int) bool {
		return strings.SplitN(lines[i], " ", 3)[2] < strings.SplitN(lines[j], " ", 3)[2]
	})
	h := sha256.New()
	h.Write([]byte("qualkit-source-tree-v1\x00"))
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// TestTreeHashRecomputed: in a real git checkout, the receipt's tree and tree hash are recomputed
// from the commit's objects, loose and (after git repack, with deltas) packed; a tree hash
// edited and re-signed is rejected; a commit the checkout lacks is said, not silently skipped.
func TestTreeHashRecomputed(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	const receipt = ".qualification/receipts/a-1.json"
	root := copyTree(t, frozenRoot)
	gitCmd(t, root, "init", "-q", "-b", "main")
	// The commit the campaign ran from: everything but the receipts and run directories (which
	// a campaign writes after it inspected the source). A second commit of a changed workload
	// description gives the packer something to delta against.
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte(".qualification/\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitCmd(t, root, "add", "-A")
	gitCmd(t, root, "commit", "-q", "-m", "campaign source")
	commit := gitCmd(t, root, "rev-parse", "HEAD")
	tree := gitCmd(t, root, "rev-parse", "HEAD^{tree}")
	want := treeHashByGit(t, root, commit)
	k := newTestKey(t)
	editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
		src := rc["source"].(map[string]any)
		src["commit"], src["tree"], src["tree_hash"], src["origin_main"] = commit, tree, want, commit
	})
	reseal(t, root, receipt, k)
	p := k.policy()
	p.RequirePublishable = false

	check := func(t *testing.T, what string) {
		t.Helper()
		res := verifyAt(t, root, receipt, p)
		if res.Verdict != Verified {
			t.Fatalf("%s: rejected:%s", what, findingsOf(res))
		}
		if n := res.Check(CheckSource).Note; strings.Contains(n, "not recomputed") {
			t.Fatalf("%s: %s", what, n)
		}
	}
	check(t, "loose objects")

	// Edited and re-signed: recomputation finds it.
	editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
		rc["source"].(map[string]any)["tree_hash"] = "sha256:" + strings.Repeat("0", 64)
	})
	reseal(t, root, receipt, k)
	res := verifyAt(t, root, receipt, p)
	if !hasFinding(res, CheckSource, ErrTreeHashMismatch, want) {
		t.Fatalf("no tree_hash_mismatch naming %s:%s", want, findingsOf(res))
	}
	editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) { rc["source"].(map[string]any)["tree_hash"] = want })
	reseal(t, root, receipt, k)

	// Packed, with deltas: the same hash.
	wl := filepath.Join(root, "workloads/frozen.json")
	b, _ := os.ReadFile(wl)
	mustWrite(t, wl, bytes.Replace(b, []byte(`"description": "`), []byte(`"description": "(edited) `), 1))
	gitCmd(t, root, "commit", "-q", "-am", "later")
	gitCmd(t, root, "repack", "-a", "-d", "-f", "-q", "--depth=10", "--window=50")
	if packs, _ := filepath.Glob(filepath.Join(root, ".git/objects/pack/*.pack")); len(packs) == 0 {
		t.Fatal("git repack made no pack")
	}
	if loose, _ := filepath.Glob(filepath.Join(root, ".git/objects/??/*")); len(loose) != 0 {
		t.Fatalf("loose objects remain after repack: %v", loose)
	}
	mustWrite(t, wl, b) // the workload as the receipt binds it
	check(t, "packed objects")

	// The commit the checkout lacks: a warning, never a silent pass.
	editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
		rc["source"].(map[string]any)["commit"] = strings.Repeat("1", 40)
		rc["source"].(map[string]any)["origin_main"] = strings.Repeat("1", 40)
	})
	reseal(t, root, receipt, k)
	res = verifyAt(t, root, receipt, p)
	said := false
	for _, w := range res.Warnings {
		said = said || strings.Contains(w, "source tree hash not recomputed: commit "+strings.Repeat("1", 40))
	}
	if !said || !strings.Contains(res.Check(CheckSource).Note, "not recomputed") {
		t.Fatalf("a missing commit is not said: warnings %q, note %q", res.Warnings, res.Check(CheckSource).Note)
	}
}
