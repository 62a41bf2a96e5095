package verify

import (
	"errors"
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// inputBlob is what the commit a receipt names holds at the path of one of its bound inputs.
type inputBlob struct {
	// digest is the sha256 of the blob at the path ("" when the commit has no file there).
	digest string
	// err says why the path could not be looked up (an object missing or corrupt); then digest is "".
	err error
}

// lookupInputs records, for every bound input the checks read (the workload, launch recipes,
// corpus files) at a repository path, the blob the commit's tree holds there; and, when the
// checkout's HEAD is another commit, the blobs HEAD holds for the files the receipt binds, so that
// a working tree that differs from HEAD is said.
func (s *snapshot) lookupInputs(g *gitobj.Store) {
	s.tree.inputs = map[string]inputBlob{}
	for _, a := range s.rc.Artifacts {
		if !readInput(a.Kind) || !localPath(a.Path) {
			continue
		}
		if _, done := s.tree.inputs[a.Path]; done {
			continue
		}
		d, err := g.BlobDigest(s.tree.tree, a.Path)
		s.tree.inputs[a.Path] = inputBlob{digest: d, err: err}
	}
	s.warnDirty(g)
}

// warnDirty warns when a file the receipt binds is tracked at the checkout's HEAD and its bytes in
// the working tree, which verification reads, are not HEAD's: the evidence root's working tree is
// dirty where it matters.
func (s *snapshot) warnDirty(g *gitobj.Store) {
	head := s.checkout.Head
	if !gitobj.ObjectName.MatchString(head) {
		return
	}
	tree, err := g.CommitTree(head)
	if err != nil {
		return
	}
	var dirty []string
	seen := map[string]bool{}
	for _, a := range s.rc.Artifacts {
		f := s.files[a.Path]
		if seen[a.Path] || f == nil || !f.present || !localPath(a.Path) {
			continue
		}
		seen[a.Path] = true
		if d, err := g.BlobDigest(tree, a.Path); err == nil && d != "" && d != f.digest {
			dirty = append(dirty, a.Path)
		}
	}
	if len(dirty) > 0 {
		s.warnings = append(s.warnings, fmt.Sprintf("the evidence root's working tree differs from its HEAD %s at %s: verification read the working tree", head, strings.Join(dirty, ", ")))
	}
}

// localPath reports whether p is a clean repository-relative path.
func localPath(p string) bool {
	return p != "" && !strings.HasPrefix(p, "/") && !strings.Contains("/"+p+"/", "/../") && !strings.Contains("/"+p+"/", "/./") && !strings.Contains(p, "//")
}

// checkInputsInCommit: every bound input the checks read is the blob of the receipt's commit at
// its path. The working tree's bytes are what verification read (and re-hashed against the
// receipt); a receipt that names commit C while its workload, recipe or corpus is not C's claims
// a source it did not run.
func checkInputsInCommit(c *finding.Collector, s *snapshot) {
	if s.tree.unavailable != "" || s.tree.inputs == nil {
		return
	}
	file := s.receipt.path
	for i, a := range s.rc.Artifacts {
		b, ok := s.tree.inputs[a.Path]
		f := s.files[a.Path]
		if !ok || !readInput(a.Kind) || f == nil || !f.present {
			continue
		}
		switch {
		case b.err != nil && errors.Is(b.err, gitobj.ErrObjectMissing):
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrInputNotInCommit, "%s %s cannot be looked up in commit %s: an object of its path is not in the checkout (%v)", a.Kind, a.Path, s.rc.Source.Commit, b.err)
		case b.err != nil:
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrInputNotInCommit, "%s %s cannot be looked up in commit %s: %v", a.Kind, a.Path, s.rc.Source.Commit, b.err)
		case b.digest == "":
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrInputNotInCommit, "%s %s is not a file of commit %s, which the receipt says the campaign ran from", a.Kind, a.Path, s.rc.Source.Commit)
		case b.digest != a.Digest:
			c.Add(file, finding.Pointer("artifacts", i, "digest"), reason.ErrInputNotInCommit, "the receipt binds %s %s as %s, commit %s (which it says the campaign ran from) holds %s there: the input is not the commit's", a.Kind, a.Path, a.Digest, s.rc.Source.Commit, b.digest)
		}
	}
}
