package gitobj

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// RegularFileDigest is the sha256 of the regular file (mode 100644 or 100755) the tree holds at
// the repository path p; "" when it holds none there: no entry, a directory, a submodule, or a
// symbolic link (which a reader of the working tree follows to another path), or a path through a
// file. The error says why the tree could not be read.
func (g *Store) RegularFileDigest(tree, p string) (string, error) {
	parts := strings.Split(p, "/")
	id := tree
	for i, name := range parts {
		typ, data, err := g.read(id)
		if err != nil {
			return "", err
		}
		if typ != "tree" {
			return "", nil
		}
		ents, err := parseGitTree(data)
		if err != nil {
			return "", fmt.Errorf("tree %s: %w", id, err)
		}
		next := ""
		for _, e := range ents {
			if e.name != name {
				continue
			}
			last := i == len(parts)-1
			if (last && e.mode != 0o100644 && e.mode != 0o100755) || (!last && e.mode != 0o40000) {
				return "", nil
			}
			next = e.id
			break
		}
		if next == "" {
			return "", nil
		}
		id = next
	}
	typ, blob, err := g.read(id)
	if err != nil || typ != "blob" {
		return "", err
	}
	sum := sha256.Sum256(blob)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}
