package gitobj

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"

	"github.com/qualkit/qualkit/schemas/evidence"
)

// Checkout is what the evidence root's git metadata says, read from files (verify runs no git).
type Checkout struct {
	Head       string // commit of HEAD
	OriginMain string // commit of refs/remotes/origin/main; "" when absent
	CommonDir  string // the common git directory, whose objects/ is the object database
}

// ObjectName matches a git object name (SHA-1, lower-case hex).
var ObjectName = regexp.MustCompile(`^[0-9a-f]{40}$`)

// MaxRefBytes caps a git ref file or packed-refs file read to find HEAD and origin/main.
const MaxRefBytes = 16 << 20

// ErrMetadata is wrapped when the git metadata of an evidence root breaks a rule of the
// reader: a ref file that is neither an object name nor a symbolic ref, a symbolic ref to a name
// that is not a ref, a .git that is neither a directory nor a gitdir file. The message names the
// file, its size and the rule, never the file's bytes (they may be any local file's).
var ErrMetadata = errors.New("git metadata the verifier does not follow")

// refName is a ref name the resolver follows: HEAD, or refs/ and components of letters, digits,
// '.', '_', '-' and '+', none empty or starting with '.' (so never "..", never outside the git
// directory), none ending in ".lock".
var refName = regexp.MustCompile(`^(HEAD|refs(/[A-Za-z0-9_+\-][A-Za-z0-9._+\-]*)+)$`)

func validRefName(s string) bool {
	if !refName.MatchString(s) {
		return false
	}
	for _, c := range strings.Split(s, "/") {
		if strings.HasSuffix(c, ".lock") || strings.HasSuffix(c, ".") {
			return false
		}
	}
	return true
}

// gitDirs are the opened git directory (HEAD lives there) and the common directory (refs,
// packed-refs, objects); for a plain checkout they are both root/.git. Every path read in them is
// opened beneath them (evidence.OpenBeneath: openat2 RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS), so a
// symbolic ref or a symlink cannot make the verifier read a file outside them.
type gitDirs struct {
	git, common         *os.File
	gitPath, commonPath string
}

func (g *gitDirs) close() {
	g.git.Close()
	if g.common != g.git {
		g.common.Close()
	}
}

// openDir opens path as a directory, not following a symbolic link in its last component.
func openDir(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0)
}

// ReadCheckout reads HEAD and refs/remotes/origin/main of the git repository at root, if root is
// one. It returns nil when root has no .git; an error when the metadata is there but unreadable or
// breaks a rule (ErrMetadata). root/.git is a directory, or (a linked worktree, a submodule) a
// regular file "gitdir: PATH" naming the git directory, whose commondir file names the common
// directory as git writes it; neither is followed through a symbolic link.
func ReadCheckout(root string) (*Checkout, error) {
	dirs, err := openGitDirs(root)
	if dirs == nil || err != nil {
		return nil, err
	}
	defer dirs.close()
	head, err := dirs.resolveRef("HEAD", 0)
	if err != nil {
		return nil, fmt.Errorf("read HEAD of %s: %w", root, err)
	}
	co := &Checkout{Head: head, CommonDir: dirs.commonPath}
	if om, err := dirs.resolveRef("refs/remotes/origin/main", 0); err == nil {
		co.OriginMain = om
	}
	return co, nil
}

func openGitDirs(root string) (*gitDirs, error) {
	dotgit := filepath.Join(root, ".git")
	st, err := os.Lstat(dotgit)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		d, err := openDir(dotgit)
		if err != nil {
			return nil, err
		}
		return &gitDirs{git: d, common: d, gitPath: dotgit, commonPath: dotgit}, nil
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is %s, neither a directory nor a gitdir file: %w", dotgit, st.Mode().Type(), ErrMetadata)
	}
	rootDir, err := openDir(root)
	if err != nil {
		return nil, err
	}
	b, err := evidence.ReadBeneath(rootDir, ".git", MaxRefBytes)
	rootDir.Close()
	if err != nil {
		return nil, err
	}
	rest, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || rest == "" || strings.ContainsAny(rest, "\x00\n") {
		return nil, fmt.Errorf("%s (%d bytes) is not \"gitdir: PATH\": %w", dotgit, len(b), ErrMetadata)
	}
	if !filepath.IsAbs(rest) {
		rest = filepath.Join(root, rest)
	}
	gd, err := openDir(rest)
	if err != nil {
		return nil, fmt.Errorf("the git directory %s names: %w", dotgit, err)
	}
	dirs := &gitDirs{git: gd, common: gd, gitPath: rest, commonPath: rest}
	c, err := evidence.ReadBeneath(gd, "commondir", MaxRefBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dirs, nil
	case err != nil:
		gd.Close()
		return nil, fmt.Errorf("%s: %w", rest, err)
	}
	cd := strings.TrimSpace(string(c))
	if cd == "" || strings.ContainsAny(cd, "\x00\n") {
		gd.Close()
		return nil, fmt.Errorf("%s (%d bytes) is not a path: %w", filepath.Join(rest, "commondir"), len(c), ErrMetadata)
	}
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(rest, cd)
	}
	cf, err := openDir(cd)
	if err != nil {
		gd.Close()
		return nil, fmt.Errorf("the common directory %s names: %w", filepath.Join(rest, "commondir"), err)
	}
	dirs.common, dirs.commonPath = cf, cd
	return dirs, nil
}

// resolveRef follows symbolic refs (at most 5 deep) through loose refs and packed-refs. A name is
// followed only when it is a ref name (validRefName), and read beneath its directory.
func (g *gitDirs) resolveRef(name string, depth int) (string, error) {
	if depth > 5 {
		return "", fmt.Errorf("ref %s: too many symbolic references: %w", name, ErrMetadata)
	}
	dir, dirPath := g.common, g.commonPath
	if name == "HEAD" {
		dir, dirPath = g.git, g.gitPath
	}
	b, err := evidence.ReadBeneath(dir, name, MaxRefBytes)
	switch {
	case err == nil:
		file := filepath.Join(dirPath, filepath.FromSlash(name))
		v := strings.TrimSpace(string(b))
		if target, ok := strings.CutPrefix(v, "ref: "); ok {
			if !validRefName(target) {
				return "", fmt.Errorf("%s (%d bytes) is a symbolic ref to a name that is not a ref (HEAD or refs/... without '.'-led or empty components): %w", file, len(b), ErrMetadata)
			}
			return g.resolveRef(target, depth+1)
		}
		if ObjectName.MatchString(v) {
			return v, nil
		}
		return "", fmt.Errorf("%s (%d bytes) is neither an object name (40 lowercase hex digits) nor \"ref: \" and a ref name: %w", file, len(b), ErrMetadata)
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("ref %s: %w", name, err)
	}
	b, err = evidence.ReadBeneath(g.common, "packed-refs", MaxRefBytes)
	if err != nil {
		return "", fmt.Errorf("ref %s not found", name)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, MaxRefBytes)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.HasPrefix(line, "^") {
			continue
		}
		if obj, ref, ok := strings.Cut(line, " "); ok && ref == name && ObjectName.MatchString(obj) {
			return obj, nil
		}
	}
	return "", fmt.Errorf("ref %s not found", name)
}
