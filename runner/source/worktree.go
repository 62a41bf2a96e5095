package source

import (
	"bytes"
	"context"
	"crypto/sha1"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// "clean" means the bytes are HEAD's. git status trusts the index, and the index can be told to
// look away: `git update-index --skip-worktree` or `--assume-unchanged` on a file makes git status
// silent about its changes, a sparse checkout leaves files out, and an fsmonitor hook answers
// "nothing changed" for git. So besides git status, Inspect compares the working-tree bytes of
// every file of HEAD's tree with HEAD's blob (by git blob id, streamed) and its executable bit
// and symlink target; a difference is dirty, and its entry names the index flags that hid it.

// Index flags that make git status look away from a file.
const (
	FlagSkipWorktree    = "skip-worktree"
	FlagAssumeUnchanged = "assume-unchanged"
)

// worktreeDiffs compares the working tree at root with HEAD's tree: one entry per differing path,
// "<path> (<how>[; hidden from git status by <flags>])", sorted.
func worktreeDiffs(ctx context.Context, r *git.Repository, root string, tree plumbing.Hash, flags map[string][]string, sparse bool) ([]string, error) {
	var entries []treeEntry
	if err := walkTree(ctx, r, tree, "", 0, &entries); err != nil {
		return nil, err
	}
	var out []string
	h := sha1.New()
	buf := make([]byte, 64<<10)
	for _, e := range entries {
		if e.mode == filemode.Submodule {
			continue // git status compares the submodule's commit
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		how, err := compareEntry(ctx, root, e, func() int64 { return blobSize(r, e.hash) }, h, buf)
		if err != nil {
			return nil, fmt.Errorf("compare %s with HEAD: %w", e.path, err)
		}
		if how == "" {
			continue
		}
		var hidden []string
		hidden = append(hidden, flags[e.path]...)
		if sparse && how == "missing from the working tree" {
			hidden = append(hidden, "sparse checkout")
		}
		if len(hidden) > 0 {
			how += "; hidden from git status by " + strings.Join(hidden, ", ")
		}
		out = append(out, e.path+" ("+how+")")
	}
	sort.Strings(out)
	return out, nil
}

// blobSize is the size of HEAD's blob id as the object store gives it from the object's header,
// without reading its bytes; -1 when the store cannot say, and the bytes then decide alone.
func blobSize(r *git.Repository, id plumbing.Hash) int64 {
	sz, ok := r.Storer.(interface {
		EncodedObjectSize(plumbing.Hash) (int64, error)
	})
	if !ok {
		return -1
	}
	n, err := sz.EncodedObjectSize(id)
	if err != nil {
		return -1
	}
	return n
}

// sizeFirstAbove is the working-tree file size above which compareEntry asks HEAD's blob size
// before it reads the file: a header read costs about as much as hashing a small file (asking
// it of every file doubled BenchmarkInspect5000's loose run), and saves the read of a large one.
const sizeFirstAbove = 1 << 20

// compareEntry says how the working-tree file differs from the tree entry ("" when it does not).
// size gives the entry's blob size (-1 unknown): a regular file over sizeFirstAbove bytes of
// another size differs without being read, so a huge file in the working tree costs no read.
func compareEntry(ctx context.Context, root string, e treeEntry, size func() int64, h interface {
	io.Writer
	Sum([]byte) []byte
	Reset()
}, buf []byte) (string, error) {
	full := filepath.Join(root, filepath.FromSlash(e.path))
	if err := noSymlinkParents(root, e.path); err != nil {
		return "not a file of the working tree: " + err.Error(), nil
	}
	st, err := os.Lstat(full)
	if errors.Is(err, fs.ErrNotExist) {
		return "missing from the working tree", nil
	}
	if err != nil {
		return "", err
	}
	if e.mode == filemode.Symlink {
		if st.Mode()&os.ModeSymlink == 0 {
			return "a symlink in HEAD, not in the working tree", nil
		}
		target, err := os.Readlink(full)
		if err != nil {
			return "", err
		}
		if blobID(h, []byte(target)) != e.hash {
			return "symlink target differs from HEAD", nil
		}
		return "", nil
	}
	if !st.Mode().IsRegular() {
		return "not a regular file in the working tree", nil
	}
	if isExec := st.Mode().Perm()&0o100 != 0; isExec != (e.mode == filemode.Executable) {
		return "executable bit differs from HEAD", nil
	}
	if st.Size() > sizeFirstAbove {
		if n := size(); n >= 0 && n != st.Size() {
			return "working-tree bytes differ from HEAD", nil
		}
	}
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fst, err := f.Stat()
	if err != nil {
		return "", err
	}
	if !fst.Mode().IsRegular() {
		return "not a regular file in the working tree", nil
	}
	h.Reset()
	io.WriteString(h, "blob "+strconv.FormatInt(fst.Size(), 10)+"\x00")
	n, err := io.CopyBuffer(h, ctxReader{ctx, io.LimitReader(f, fst.Size()+1)}, buf)
	if err != nil {
		return "", err
	}
	if n != fst.Size() {
		return "changed while it was read", nil
	}
	var id plumbing.Hash
	copy(id[:], h.Sum(nil))
	if id != e.hash {
		return "working-tree bytes differ from HEAD", nil
	}
	return "", nil
}

// ctxReader stops a long read when ctx ends (a signal during preflight).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func blobID(h interface {
	io.Writer
	Sum([]byte) []byte
	Reset()
}, b []byte) plumbing.Hash {
	h.Reset()
	io.WriteString(h, "blob "+strconv.Itoa(len(b))+"\x00")
	h.Write(b)
	var id plumbing.Hash
	copy(id[:], h.Sum(nil))
	return id
}

// noSymlinkParents refuses a path whose directories in the working tree are not plain directories.
func noSymlinkParents(root, rel string) error {
	parts := strings.Split(rel, "/")
	cur := root
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		st, err := os.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // the file is then missing
		}
		if err != nil {
			return err
		}
		if !st.IsDir() {
			return fmt.Errorf("%s is not a directory", cur)
		}
	}
	return nil
}

// indexFlags lists, per path, the index flags that hide changes from git status, and whether a
// sparse checkout is configured. With the git command it reads `git ls-files -v` (lowercase tag:
// assume-unchanged; S: skip-worktree); without it, go-git's index (skip-worktree only: go-git does
// not decode assume-unchanged, which the byte comparison catches regardless).
func indexFlags(ctx context.Context, r *git.Repository, root string, o options) (map[string][]string, bool) {
	flags := map[string][]string{}
	sparse := false
	if cfg, err := r.Config(); err == nil && cfg.Raw != nil {
		sparse = strings.EqualFold(cfg.Raw.Section("core").Option("sparseCheckout"), "true")
	}
	gitPath := o.git
	if gitPath == "" {
		gitPath = "git"
	}
	if p, err := exec.LookPath(gitPath); err == nil && o.status != StatusGoGit {
		cmd := exec.CommandContext(ctx, p, "-C", root, "-c", "core.fsmonitor=false", "ls-files", "-v", "-z")
		cmd.Env = gitEnv(os.Environ())
		var stdout bytes.Buffer
		cmd.Stdout = &stdout
		if cmd.Run() == nil {
			for _, rec := range bytes.Split(stdout.Bytes(), []byte{0}) {
				if len(rec) < 3 || rec[1] != ' ' {
					continue
				}
				tag, path := rec[0], string(rec[2:])
				if tag == 'S' || tag == 's' {
					flags[path] = append(flags[path], FlagSkipWorktree)
				}
				if tag >= 'a' && tag <= 'z' {
					flags[path] = append(flags[path], FlagAssumeUnchanged)
				}
			}
			return flags, sparse
		}
	}
	if idx, err := r.Storer.Index(); err == nil {
		for _, e := range idx.Entries {
			if e.SkipWorktree {
				flags[e.Name] = append(flags[e.Name], FlagSkipWorktree)
			}
		}
	}
	return flags, sparse
}
