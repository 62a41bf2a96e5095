package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

func sha(b string) string {
	s := sha256.Sum256([]byte(b))
	return hex.EncodeToString(s[:])
}

// referenceTreeHash is the qualkit-source-tree-v1 definition written out independently: records
// are (mode, content id, path) triples.
func referenceTreeHash(records [][3]string) string {
	sort.Slice(records, func(i, j int) bool { return records[i][2] < records[j][2] })
	var b strings.Builder
	b.WriteString("qualkit-source-tree-v1\x00")
	for _, r := range records {
		fmt.Fprintf(&b, "%s %s %s\x00", r[0], r[1], r[2])
	}
	return "sha256:" + sha(b.String())
}

// exampleRepo builds the repository of the worked example in docs/source-identity.md.
func exampleRepo(t *testing.T) *testRepo {
	tr := newRepo(t)
	tr.write("README.md", "hello\n")
	tr.write("bin/run", "#!/bin/sh\necho run\n")
	if err := os.Chmod(tr.path("bin/run"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("README.md", tr.path("docs")); err != nil {
		t.Fatal(err)
	}
	tr.add("README.md", "bin/run", "docs")
	tr.commit("example")
	return tr
}

// exampleTreeHash is the value docs/source-identity.md states for the worked example.
const exampleTreeHash = "sha256:4e891375a4d2cedbee42c75e520337f3a8ebcc509df94055ded04c1a618b971b"

func TestTreeHashKnownAnswer(t *testing.T) {
	isolateGitConfig(t)
	tr := exampleRepo(t)
	want := referenceTreeHash([][3]string{
		{"100644", "sha256:" + sha("hello\n"), "README.md"},
		{"100755", "sha256:" + sha("#!/bin/sh\necho run\n"), "bin/run"},
		{"120000", "sha256:" + sha("README.md"), "docs"},
	})
	got := inspect(t, tr.dir).TreeHash
	if got != want {
		t.Fatalf("TreeHash = %s, want %s", got, want)
	}
	if got != exampleTreeHash {
		t.Errorf("TreeHash = %s, but exampleTreeHash (and docs/source-identity.md) say %s", got, exampleTreeHash)
	}
	doc, err := os.ReadFile("../../docs/source-identity.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(doc, []byte(got)) {
		t.Errorf("docs/source-identity.md does not state the worked example's hash %s", got)
	}
}

func TestTreeHashFollowsContent(t *testing.T) {
	isolateGitConfig(t)
	tr := newRepo(t)
	tr.writeCommit("src/a.go", "package a\n", "b.txt", "b\n")
	h1 := inspect(t, tr.dir).TreeHash

	tr.write("src/a.go", "package a // edited\n")
	if got := inspect(t, tr.dir); got.TreeHash != h1 || got.Clean {
		t.Errorf("an uncommitted edit changed the HEAD tree hash (%s -> %s) or left the tree clean", h1, got.TreeHash)
	}
	tr.add("src/a.go")
	tr.commit("edit")
	h2 := inspect(t, tr.dir).TreeHash
	if h2 == h1 {
		t.Error("committing an edit to a tracked file did not change the tree hash")
	}

	tr.write("src/a.go", "package a\n")
	tr.add("src/a.go")
	tr.commit("revert")
	if h3 := inspect(t, tr.dir).TreeHash; h3 != h1 {
		t.Errorf("same content, different history: %s != %s", h3, h1)
	}

	if err := os.Chmod(tr.path("b.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := inspect(t, tr.dir); got.TreeHash != h1 {
		t.Error("an uncommitted exec-bit change changed the HEAD tree hash")
	}
	tr.add("b.txt")
	tr.commit("chmod")
	if h4 := inspect(t, tr.dir).TreeHash; h4 == h1 {
		t.Error("a committed exec-bit change did not change the tree hash")
	}

	tr.writeCommit("c.txt", "")
	if h5 := inspect(t, tr.dir).TreeHash; h5 == h1 {
		t.Error("adding an empty file did not change the tree hash")
	}
}

func TestTreeHashDeterministic(t *testing.T) {
	isolateGitConfig(t)
	files := []string{"a/b", "a.b", "a-b", "a0", "z/y/x", "ab", "A", "ü.txt", "sp ace"}
	build := func(order []string) string {
		tr := newRepo(t)
		for i, f := range order {
			tr.writeCommit(f, "content of "+f)
			if i%3 == 0 {
				tr.commit("empty")
			}
		}
		id := inspect(t, tr.dir)
		if again := inspect(t, tr.dir); again.TreeHash != id.TreeHash {
			t.Fatalf("two Inspects differ: %s, %s", id.TreeHash, again.TreeHash)
		}
		if !treeHashRE.MatchString(id.TreeHash) {
			t.Fatalf("TreeHash %q", id.TreeHash)
		}
		return id.TreeHash
	}
	rev := append([]string(nil), files...)
	sort.Sort(sort.Reverse(sort.StringSlice(rev)))
	h1, h2 := build(files), build(rev)
	if h1 != h2 {
		t.Errorf("same files committed in another order and history: %s != %s", h1, h2)
	}
	var recs [][3]string
	for _, f := range files {
		recs = append(recs, [3]string{"100644", "sha256:" + sha("content of "+f), f})
	}
	if want := referenceTreeHash(recs); h1 != want {
		t.Errorf("TreeHash %s, reference %s", h1, want)
	}
}

// TestTreeHashMatchesGitCLI recomputes the hash from `git ls-tree -r` and `git cat-file`, with a
// submodule (gitlink) entry that only the git command can add here.
func TestTreeHashMatchesGitCLI(t *testing.T) {
	if !haveGit() {
		t.Skip("git command not found")
	}
	isolateGitConfig(t)
	tr := newRepo(t)
	tr.writeCommit("x/1.txt", "one", "x/2.txt", "two", "same1", "dup", "same2", "dup", "e", "")
	sub := strings.Repeat("ab", 20)
	gitCLI(t, tr.dir, "update-index", "--add", "--cacheinfo", "160000,"+sub+",vendor/sub")
	gitCLI(t, tr.dir, "commit", "-q", "-m", "gitlink")
	out := gitCLI(t, tr.dir, "ls-tree", "-r", "-z", "HEAD")
	var recs [][3]string
	for _, rec := range strings.Split(strings.TrimRight(out, "\x00"), "\x00") {
		meta, path, _ := strings.Cut(rec, "\t")
		f := strings.Fields(meta) // mode type object
		id := "commit:" + f[2]
		if f[1] == "blob" {
			content, err := exec.Command("git", "-C", tr.dir, "cat-file", "blob", f[2]).Output()
			if err != nil {
				t.Fatal(err)
			}
			id = "sha256:" + sha(string(content))
		}
		recs = append(recs, [3]string{f[0], id, path})
	}
	if len(recs) != 6 {
		t.Fatalf("ls-tree gave %d entries: %q", len(recs), out)
	}
	r, root, err := open(tr.dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := headCommit(r, root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := treeHash(context.Background(), r, root, head.TreeHash)
	if err != nil {
		t.Fatal(err)
	}
	if want := referenceTreeHash(recs); got != want {
		t.Errorf("treeHash = %s, from git ls-tree = %s", got, want)
	}
}

// TestTreeHashDocScript runs the Python recomputation printed in docs/source-identity.md against
// the worked example: the documented way for an auditor to check a tree hash must agree.
func TestTreeHashDocScript(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil || !haveGit() {
		t.Skip("python3 or git not found")
	}
	isolateGitConfig(t)
	doc, err := os.ReadFile("../../docs/source-identity.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "### Recomputing it")
	if !ok {
		t.Fatal("docs/source-identity.md has no \"Recomputing it\" section")
	}
	_, rest, ok = strings.Cut(rest, "```python\n")
	script, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no python block in the \"Recomputing it\" section")
	}
	tr := exampleRepo(t)
	cmd := exec.Command(py, "-")
	cmd.Dir = tr.dir
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = gitEnv(os.Environ())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("doc script: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != exampleTreeHash {
		t.Errorf("doc script prints %s, want %s", got, exampleTreeHash)
	}
}
