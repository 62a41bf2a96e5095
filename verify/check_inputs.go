package verify

import (
	"errors"

	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

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
