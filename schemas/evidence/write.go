package evidence

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrPath reports a path that breaks the evidence writing rules: a symlink component, or a file
// that already exists.
var ErrPath = errors.New("path refused")

// CheckNoSymlink verifies that no existing component of root/rel is a symlink (rel is relative,
// slash-separated, without ".."). Components that do not exist yet end the walk.
func CheckNoSymlink(root, rel string) error {
	cur := root
	for _, part := range strings.Split(filepath.ToSlash(filepath.Clean(rel)), "/") {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: %s: %v", ErrPath, cur, err)
		}
		if st.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%w: %s is a symlink", ErrPath, cur)
		}
	}
	return nil
}

// WriteNew writes data to path atomically and never replaces an existing file: the bytes go to a
// temporary file in the same directory, which gets mode, is fsynced and hard-linked to the final
// name (the link fails if the name exists, even as a dangling symlink), then unlinked; the
// directory is fsynced last. It is how every qualkit evidence file, receipt, attestation and key
// is written.
func WriteNew(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(mode)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s already exists; evidence is never replaced", ErrPath, path)
		}
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
