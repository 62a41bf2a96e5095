package check

import (
	"errors"

	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// checkInputsInCommit: every bound input the checks read is the blob of the receipt's commit at
// its path, and so is a bound config file the commit holds (load.CommitInput). The working tree's bytes are what verification read (and re-hashed against the
// receipt); a receipt that names commit C while its workload, recipe or corpus is not C's claims
// a source it did not run.
func checkInputsInCommit(c *finding.Collector, s *load.Snapshot) {
	if s.Tree.Unavailable != "" || s.Tree.Inputs == nil {
		return
	}
	file := s.Receipt.Path
	for i, a := range s.RC.Artifacts {
		b, ok := s.Tree.Inputs[a.Path]
		f := s.Files[a.Path]
		if !ok || !load.CommitInput(a.Kind) || f == nil || !f.Present {
			continue
		}
		if !load.ReadInput(a.Kind) && (b.Err != nil || b.Digest == "") {
			continue // a config file the commit does not hold (untracked or ignored) is not its
		}
		switch {
		case b.Err != nil && errors.Is(b.Err, gitobj.ErrObjectMissing):
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrInputNotInCommit, "%s %s cannot be looked up in commit %s: an object of its path is not in the checkout (%v)", a.Kind, a.Path, s.RC.Source.Commit, b.Err)
		case b.Err != nil:
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrInputNotInCommit, "%s %s cannot be looked up in commit %s: %v", a.Kind, a.Path, s.RC.Source.Commit, b.Err)
		case b.Digest == "":
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrInputNotInCommit, "%s %s is not a file of commit %s, which the receipt says the campaign ran from", a.Kind, a.Path, s.RC.Source.Commit)
		case b.Digest != a.Digest:
			c.Add(file, finding.Pointer("artifacts", i, "digest"), reason.ErrInputNotInCommit, "the receipt binds %s %s as %s, commit %s (which it says the campaign ran from) holds %s there: the input is not the commit's", a.Kind, a.Path, a.Digest, s.RC.Source.Commit, b.Digest)
		}
	}
}
