package campaign

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/evidence"
)

// ErrPath reports an output path that breaks the path rules (the same sentinel as schemas.ErrPath).
var ErrPath = evidence.ErrPath

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
	return evidence.CheckNoSymlink(root, rel)
}

// writeNew writes data to root/rel (mode 0644), creating its directory, under the evidence rules
// of schemas.WriteNew: no symlink component, never replacing a file.
func writeNew(root, rel string, data []byte) error {
	if err := checkUnder(root, rel); err != nil {
		return err
	}
	path := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := checkUnder(root, rel); err != nil { // directories may have been created meanwhile
		return err
	}
	return evidence.WriteNew(path, data, 0o644)
}
