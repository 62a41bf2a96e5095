package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/qualkit/qualkit/schemas/contract"
)

// Sentinel errors; every error that carries one names the operation and the path.
var (
	// ErrNotRepository: the directory is not inside a git worktree.
	ErrNotRepository = errors.New("not a git repository")
	// ErrNoWorktree: the repository is bare.
	ErrNoWorktree = errors.New("repository has no worktree")
	// ErrNoCommit: HEAD does not point at a commit yet (unborn branch).
	ErrNoCommit = errors.New("HEAD has no commit")
	// ErrNotTracked: a path is not a regular file in HEAD's tree.
	ErrNotTracked = errors.New("not tracked in HEAD")
	// ErrModified: a tracked file's working-tree bytes differ from HEAD (or it is gone).
	ErrModified = errors.New("differs from HEAD")
)

// TreeHashFormat names the definition of Identity.TreeHash (docs/source-identity.md).
const TreeHashFormat = "qualkit-source-tree-v1"

// Identity is the identity of the source tree a campaign runs from.
type Identity struct {
	// Repository is the origin URL with any credentials removed, or the absolute worktree root
	// when there is no origin remote.
	Repository string
	// Commit is HEAD's commit, 40 lowercase hex.
	Commit string
	// Tree is HEAD's tree, 40 lowercase hex.
	Tree string
	// TreeHash is the qualkit-source-tree-v1 hash of HEAD's tree, "sha256:<64 hex>".
	TreeHash string
	// OriginMain is the commit of refs/remotes/origin/main as the last fetch left it, nil if absent.
	OriginMain *string
	// Clean is true when Dirty is empty.
	Clean bool
	// Dirty lists every path that makes the worktree unclean: modified, staged, deleted, untracked
	// (not ignored by .gitignore, .git/info/exclude or core.excludesFile), sorted and unique.
	Dirty []string
	// StatusBackend says what computed Clean and Dirty: "git" (the git command) or "go-git".
	StatusBackend string
}

// Schema returns the receipt's source block.
func (id *Identity) Schema() contract.Source {
	var om *string
	if id.OriginMain != nil {
		s := *id.OriginMain
		om = &s
	}
	return contract.Source{
		Repository:     id.Repository,
		Commit:         id.Commit,
		Tree:           id.Tree,
		TreeHashFormat: TreeHashFormat,
		TreeHash:       id.TreeHash,
		OriginMain:     om,
		Clean:          id.Clean,
	}
}

// AtOriginMain reports whether HEAD is exactly refs/remotes/origin/main (performance publication
// requires it). It does not fetch: origin/main is what the last fetch recorded.
func (id *Identity) AtOriginMain() bool {
	return id.OriginMain != nil && *id.OriginMain == id.Commit
}

// StatusBackend selects how Inspect decides whether the worktree is clean.
type StatusBackend int

const (
	// StatusAuto uses the git command when it is on PATH and works for this repository, else go-git.
	StatusAuto StatusBackend = iota
	// StatusGit uses the git command only (an error when it is missing or fails).
	StatusGit
	// StatusGoGit uses go-git only.
	StatusGoGit
)

func (b StatusBackend) String() string {
	switch b {
	case StatusGit:
		return "git"
	case StatusGoGit:
		return "go-git"
	}
	return "auto"
}

// Option configures Inspect.
type Option func(*options)

type options struct {
	status StatusBackend
	git    string
}

// WithStatusBackend selects the implementation of the clean check (default StatusAuto).
func WithStatusBackend(b StatusBackend) Option { return func(o *options) { o.status = b } }

// WithGitCommand sets the git executable used by the git status backend (default: "git" on PATH).
func WithGitCommand(path string) Option { return func(o *options) { o.git = path } }

// Inspect reads the identity of the worktree that contains repoDir (any directory inside it).
func Inspect(ctx context.Context, repoDir string, opts ...Option) (*Identity, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, root, err := open(repoDir)
	if err != nil {
		return nil, err
	}
	commit, err := headCommit(r, root)
	if err != nil {
		return nil, err
	}
	th, err := treeHash(ctx, r, root, commit.TreeHash)
	if err != nil {
		return nil, fmt.Errorf("hash tree %s of %s: %w", commit.TreeHash, root, err)
	}
	id := &Identity{
		Repository: repositoryLabel(r, root),
		Commit:     commit.Hash.String(),
		Tree:       commit.TreeHash.String(),
		TreeHash:   th,
	}
	ref, err := r.Reference(plumbing.NewRemoteReferenceName("origin", "main"), true)
	switch {
	case err == nil:
		s := ref.Hash().String()
		id.OriginMain = &s
	case !errors.Is(err, plumbing.ErrReferenceNotFound):
		return nil, fmt.Errorf("read refs/remotes/origin/main in %s: %w", root, err)
	}
	dirty, backend, err := status(ctx, r, root, o)
	if err != nil {
		return nil, err
	}
	// git status trusts the index; the bytes decide (worktree.go).
	flags, sparse := indexFlags(ctx, r, root, o)
	diffs, err := worktreeDiffs(ctx, r, root, commit.TreeHash, flags, sparse)
	if err != nil {
		return nil, fmt.Errorf("compare the working tree of %s with HEAD: %w", root, err)
	}
	dirty = mergeDirty(dirty, diffs)
	id.Dirty, id.Clean, id.StatusBackend = dirty, len(dirty) == 0, backend
	return id, nil
}

// mergeDirty adds the byte comparison's entries ("path (how)") for paths git status did not
// list, and replaces a listed path by its entry when index flags are involved (the entry names them).
func mergeDirty(dirty, diffs []string) []string {
	listed := map[string]int{}
	for i, d := range dirty {
		listed[d] = i
	}
	for _, d := range diffs {
		p, _, _ := strings.Cut(d, " (")
		i, ok := listed[p]
		switch {
		case !ok:
			dirty = append(dirty, d)
		case strings.Contains(d, "hidden from git status by"):
			dirty[i] = d
		}
	}
	sort.Strings(dirty)
	return dirty
}

// Root returns the root of the worktree that contains repoDir.
func Root(repoDir string) (string, error) {
	_, root, err := open(repoDir)
	return root, err
}

// open opens the repository whose worktree contains dir and returns it with the worktree root.
func open(dir string) (*git.Repository, string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, "", fmt.Errorf("open repository %s: %w", dir, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		return nil, "", fmt.Errorf("open repository %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, "", fmt.Errorf("open repository %s: not a directory", dir)
	}
	r, err := git.PlainOpenWithOptions(abs, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		// A bare repository has no .git to detect; say so rather than "not a repository".
		if b, berr := git.PlainOpen(abs); berr == nil {
			if _, werr := b.Worktree(); errors.Is(werr, git.ErrIsBareRepository) {
				return nil, "", fmt.Errorf("open repository %s: %w", dir, ErrNoWorktree)
			}
		}
		return nil, "", fmt.Errorf("open repository %s: %w", dir, ErrNotRepository)
	}
	if err != nil {
		return nil, "", fmt.Errorf("open repository %s: %w", dir, err)
	}
	wt, err := r.Worktree()
	if errors.Is(err, git.ErrIsBareRepository) {
		return nil, "", fmt.Errorf("open repository %s: %w", dir, ErrNoWorktree)
	}
	if err != nil {
		return nil, "", fmt.Errorf("open worktree of %s: %w", dir, err)
	}
	return r, wt.Filesystem.Root(), nil
}

func headCommit(r *git.Repository, root string) (*headInfo, error) {
	head, err := r.Head()
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return nil, fmt.Errorf("read HEAD of %s: %w", root, ErrNoCommit)
	}
	if err != nil {
		return nil, fmt.Errorf("read HEAD of %s: %w", root, err)
	}
	c, err := r.CommitObject(head.Hash())
	if err != nil {
		return nil, fmt.Errorf("read HEAD commit %s of %s: %w", head.Hash(), root, err)
	}
	return &headInfo{Hash: c.Hash, TreeHash: c.TreeHash}, nil
}

type headInfo struct{ Hash, TreeHash plumbing.Hash }

// repositoryLabel is origin's first URL without credentials, or the worktree root.
func repositoryLabel(r *git.Repository, root string) string {
	rem, err := r.Remote("origin")
	if err != nil || len(rem.Config().URLs) == 0 || rem.Config().URLs[0] == "" {
		return root
	}
	return RedactURL(rem.Config().URLs[0])
}

var userinfo = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@`)

// RedactURL removes credentials from a remote URL: the whole user info of http(s) and ftp(s)
// URLs (tokens are often passed as the user name), the password of any other URL, and the query
// and fragment. scp-like addresses (git@host:path) and local paths are returned unchanged.
func RedactURL(raw string) string {
	if !strings.Contains(raw, "://") {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return userinfo.ReplaceAllString(raw, "$1")
	}
	switch strings.ToLower(u.Scheme) {
	case "http", "https", "ftp", "ftps":
		u.User = nil
	default:
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
	}
	u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = "", false, "", ""
	return u.String()
}
