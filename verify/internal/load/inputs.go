package load

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/verify/internal/gitobj"
)

// InputBlob is what the commit a receipt names holds at the path of one of its bound inputs.
type InputBlob struct {
	// digest is the sha256 of the blob at the path ("" when the commit has no file there).
	Digest string
	// err says why the path could not be looked up (an object missing or corrupt); then digest is "".
	Err error
}

// lookupInputs records, for every bound input compared with the commit (CommitInput: the
// workload, launch recipes, corpus files, config files) at a repository path, the blob the
// commit's tree holds there; and, when the
// checkout's HEAD is another commit, the blobs HEAD holds for the files the receipt binds, so that
// a working tree that differs from HEAD is said.
func (s *Snapshot) lookupInputs(g *gitobj.Store) {
	s.Tree.Inputs = map[string]InputBlob{}
	for _, a := range s.RC.Artifacts {
		if !CommitInput(a.Kind) || !localPath(a.Path) {
			continue
		}
		if _, done := s.Tree.Inputs[a.Path]; done {
			continue
		}
		d, err := g.BlobDigest(s.Tree.Tree, a.Path)
		s.Tree.Inputs[a.Path] = InputBlob{Digest: d, Err: err}
	}
	s.warnDirty(g)
}

// warnDirty warns when a file the receipt binds is tracked at the checkout's HEAD and its bytes in
// the working tree, which verification reads, are not HEAD's: the evidence root's working tree is
// dirty where it matters.
func (s *Snapshot) warnDirty(g *gitobj.Store) {
	head := s.Checkout.Head
	if !gitobj.ObjectName.MatchString(head) {
		return
	}
	tree, err := g.CommitTree(head)
	if err != nil {
		return
	}
	var dirty []string
	seen := map[string]bool{}
	for _, a := range s.RC.Artifacts {
		f := s.Files[a.Path]
		if seen[a.Path] || f == nil || !f.Present || !localPath(a.Path) {
			continue
		}
		seen[a.Path] = true
		if d, err := g.BlobDigest(tree, a.Path); err == nil && d != "" && d != f.Digest {
			dirty = append(dirty, a.Path)
		}
	}
	if len(dirty) > 0 {
		s.Warnings = append(s.Warnings, fmt.Sprintf("the evidence root's working tree differs from its HEAD %s at %s: verification read the working tree", head, strings.Join(dirty, ", ")))
	}
}

// localPath reports whether p is a clean repository-relative path.
func localPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.Contains("/"+p+"/", "/../") && !strings.Contains("/"+p+"/", "/./") && !strings.Contains(p, "//")
}
