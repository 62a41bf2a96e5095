package jsonstrict

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"sort"
)

// SourceTreeHashFormat names the source tree hash receipts carry (docs/source-identity.md).
const SourceTreeHashFormat = "qualkit-source-tree-v1"

// SourceTreeEntry is one non-directory entry of a git tree, for SourceTreeHash.
type SourceTreeEntry struct {
	// Path is the full slash-separated path from the tree's root, as git stores it.
	Path string
	// Mode is the git mode (0100644, 0100755, 0120000, 0160000).
	Mode uint32
	// ContentID is "sha256:<hex>" of a blob's bytes (files, symlinks) or "commit:<40 hex>" of a
	// submodule.
	ContentID string
}

// SourceTreeHash is the qualkit-source-tree-v1 hash of a tree's entries (in any order):
//
//	"sha256:" + hex(sha256( "qualkit-source-tree-v1" NUL
//	                        for each entry, sorted by path bytes:
//	                            <mode, 6 octal digits> SP <content id> SP <path> NUL ))
//
// qualrun computes it from HEAD (runner/source) and qualverify from the checkout's git objects;
// this is the one definition both use.
func SourceTreeHash(entries []SourceTreeEntry) string {
	sorted := append([]SourceTreeEntry(nil), entries...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	h := sha256.New()
	io.WriteString(h, SourceTreeHashFormat+"\x00")
	for _, e := range sorted {
		fmt.Fprintf(h, "%06o %s %s\x00", e.Mode, e.ContentID, e.Path)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}
