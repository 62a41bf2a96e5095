package campaign

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrPath reports an output path that breaks the path rules.
var ErrPath = errors.New("output path refused")

// checkUnder verifies that rel is a clean relative path below root with no ".." element and no
// symlink among its existing components.
func checkUnder(root, rel string) error {
	if rel == "" || filepath.IsAbs(rel) {
		return fmt.Errorf("%w: %q must be relative to the repository", ErrPath, rel)
	}
	for _, part := range strings.Split(filepath.ToSlash(rel), "/") {
		if part == ".." {
			return fmt.Errorf("%w: %q contains a .. element", ErrPath, rel)
		}
	}
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

// writeNew writes data to root/rel atomically and never replaces an existing file: the bytes go
// to a temporary file in the same directory, which is fsynced and then hard-linked to the final
// name (link fails if the name exists), unlinked, and the directory fsynced.
func writeNew(root, rel string, data []byte) error {
	if err := checkUnder(root, rel); err != nil {
		return err
	}
	path := filepath.Join(root, rel)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if err := checkUnder(root, rel); err != nil { // directories may have been created meanwhile
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := tmp.Chmod(0o644); err != nil { // CreateTemp makes 0600; evidence is not secret
		tmp.Close()
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("fsync %s: %w", rel, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s already exists; evidence is never replaced", ErrPath, rel)
		}
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", dir, err)
	}
	return nil
}
