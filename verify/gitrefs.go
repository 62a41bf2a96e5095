package verify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/qualkit/qualkit/schemas/evidence"
)

// checkout is what the evidence root's git metadata says, read from files (verify runs no git).
type checkout struct {
	head       string // commit of HEAD
	originMain string // commit of refs/remotes/origin/main; "" when absent
	objects    string // the object database directory
}

var objectName = regexp.MustCompile(`^[0-9a-f]{40}$`)

// readCheckout reads HEAD and refs/remotes/origin/main of the git repository at root, if root is
// one. It returns nil when root has no .git; an error when the metadata is there but unreadable.
func readCheckout(root string) (*checkout, error) {
	gitDir := filepath.Join(root, ".git")
	st, err := os.Stat(gitDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	common := gitDir
	if !st.IsDir() {
		// A worktree or submodule: .git is a file "gitdir: PATH".
		b, err := evidence.ReadFileLimited(gitDir, MaxGitRefBytes)
		if err != nil {
			return nil, err
		}
		rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
		if !ok {
			return nil, fmt.Errorf("%s: not a gitdir file", gitDir)
		}
		if !filepath.IsAbs(rest) {
			rest = filepath.Join(root, rest)
		}
		gitDir, common = rest, rest
		if c, err := evidence.ReadFileLimited(filepath.Join(gitDir, "commondir"), MaxGitRefBytes); err == nil {
			cd := strings.TrimSpace(string(c))
			if !filepath.IsAbs(cd) {
				cd = filepath.Join(gitDir, cd)
			}
			common = cd
		}
	}
	head, err := resolveRef(gitDir, common, "HEAD", 0)
	if err != nil {
		return nil, fmt.Errorf("read HEAD of %s: %w", root, err)
	}
	co := &checkout{head: head, objects: filepath.Join(common, "objects")}
	if om, err := resolveRef(gitDir, common, "refs/remotes/origin/main", 0); err == nil {
		co.originMain = om
	}
	return co, nil
}

// resolveRef follows symbolic refs (at most 5 deep) through loose refs and packed-refs.
func resolveRef(gitDir, common, name string, depth int) (string, error) {
	if depth > 5 {
		return "", fmt.Errorf("ref %s: too many symbolic references", name)
	}
	dir := common
	if name == "HEAD" {
		dir = gitDir
	}
	if b, err := evidence.ReadFileLimited(filepath.Join(dir, filepath.FromSlash(name)), MaxGitRefBytes); err == nil {
		v := strings.TrimSpace(string(b))
		if target, ok := strings.CutPrefix(v, "ref: "); ok {
			return resolveRef(gitDir, common, target, depth+1)
		}
		if objectName.MatchString(v) {
			return v, nil
		}
		return "", fmt.Errorf("ref %s: %q is not an object name", name, v)
	}
	b, err := evidence.ReadFileLimited(filepath.Join(common, "packed-refs"), MaxGitRefBytes)
	if err != nil {
		return "", fmt.Errorf("ref %s not found", name)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "^") {
			continue
		}
		if obj, ref, ok := strings.Cut(line, " "); ok && ref == name && objectName.MatchString(obj) {
			return obj, nil
		}
	}
	return "", fmt.Errorf("ref %s not found", name)
}
