package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CheckTracked checks that relPath (slash-separated, relative to the worktree root) is a regular
// file in HEAD's tree and that its working-tree bytes equal HEAD's blob. It returns an error
// wrapping ErrNotTracked or ErrModified, naming the path, when that is not so. No component of
// relPath may be a symlink in the worktree.
func CheckTracked(ctx context.Context, repoDir, relPath string) error {
	if err := validRelPath(relPath); err != nil {
		return fmt.Errorf("check %q: %w", relPath, err)
	}
	r, root, err := open(repoDir)
	if err != nil {
		return err
	}
	head, err := headCommit(r, root)
	if err != nil {
		return err
	}
	tree, err := r.TreeObject(head.TreeHash)
	if err != nil {
		return fmt.Errorf("read HEAD tree of %s: %w", root, err)
	}
	entry, err := tree.FindEntry(relPath)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) || errors.Is(err, object.ErrFileNotFound) {
		return fmt.Errorf("check %s: %w", relPath, ErrNotTracked)
	}
	if err != nil {
		return fmt.Errorf("check %s: %w", relPath, err)
	}
	if entry.Mode != filemode.Regular && entry.Mode != filemode.Executable && entry.Mode != filemode.Deprecated {
		return fmt.Errorf("check %s: %w: HEAD has a %s, not a regular file", relPath, ErrNotTracked, modeName(entry.Mode))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := openNoSymlink(root, relPath)
	if err != nil {
		return fmt.Errorf("check %s: %w: %v", relPath, ErrModified, err)
	}
	defer f.Close()
	blob, err := r.BlobObject(entry.Hash)
	if err != nil {
		return fmt.Errorf("check %s: read blob %s: %w", relPath, entry.Hash, err)
	}
	br, err := blob.Reader()
	if err != nil {
		return fmt.Errorf("check %s: read blob %s: %w", relPath, entry.Hash, err)
	}
	defer br.Close()
	same, err := sameBytes(f, br)
	if err != nil {
		return fmt.Errorf("check %s: %w", relPath, err)
	}
	if !same {
		return fmt.Errorf("check %s: %w: working-tree bytes are not HEAD's", relPath, ErrModified)
	}
	return nil
}

func validRelPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.ContainsRune(p, 0) || strings.Contains(p, "\\"):
		return errors.New("path holds a NUL or backslash")
	case path.IsAbs(p):
		return errors.New("path must be relative to the worktree root")
	case path.Clean(p) != p || p == "." || p == ".." || strings.HasPrefix(p, "../"):
		return errors.New("path must be clean: no empty, . or .. segments")
	}
	return nil
}

func modeName(m filemode.FileMode) string {
	switch m {
	case filemode.Dir:
		return "directory"
	case filemode.Symlink:
		return "symlink"
	case filemode.Submodule:
		return "submodule"
	}
	return "entry of mode " + m.String()
}

// openNoSymlink opens root/rel for reading, refusing a symlink in any component and anything but
// a regular file.
func openNoSymlink(root, rel string) (*os.File, error) {
	parts := strings.Split(rel, "/")
	cur := root
	for _, p := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, p)
		st, err := os.Lstat(cur)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("%s is not a directory", cur)
		}
	}
	full := filepath.Join(root, filepath.FromSlash(rel))
	f, err := os.OpenFile(full, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink", full)
	}
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file", full)
	}
	return f, nil
}

// sameBytes compares two streams to the end.
func sameBytes(a, b io.Reader) (bool, error) {
	const n = 64 << 10
	ba, bb := make([]byte, n), make([]byte, n)
	for {
		na, ea := io.ReadFull(a, ba)
		nb, eb := io.ReadFull(b, bb)
		if ea != nil && ea != io.EOF && ea != io.ErrUnexpectedEOF {
			return false, ea
		}
		if eb != nil && eb != io.EOF && eb != io.ErrUnexpectedEOF {
			return false, eb
		}
		if na != nb || !bytes.Equal(ba[:na], bb[:nb]) {
			return false, nil
		}
		if ea != nil || eb != nil {
			return ea != nil && eb != nil, nil
		}
	}
}
