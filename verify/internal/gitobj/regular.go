package gitobj

// RegularFileDigest is the sha256 of the regular file (mode 100644 or 100755) the tree holds at
// the repository path p; "" when it holds none there: no entry, a directory, a submodule, or a
// symbolic link (which a reader of the working tree follows to another path), or a path through a
// file. The error says why the tree could not be read.
func (g *Store) RegularFileDigest(tree, p string) (string, error) {
	return g.blobDigest(tree, p, true)
}
