package check

import (
	"regexp"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

var (
	digestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// TreeHashFormat is the source tree hash format receipts carry.
const TreeHashFormat = "qualkit-source-tree-v1"

func sortStrings(s []string) { sort.Strings(s) }

// Source: the source identity's formats, a clean tree, and, when the policy requires
// publication, a publishable receipt whose commit is origin/main (and the checkout's origin/main,
// when the evidence root is a git checkout).
func Source(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckSource}
	src := s.RC.Source
	file := s.Receipt.Path
	if !gitobj.ObjectName.MatchString(src.Commit) {
		c.Add(file, "/source/commit", reason.ErrSourceFormat, "commit %q is not 40 lowercase hex digits", src.Commit)
	}
	if !gitobj.ObjectName.MatchString(src.Tree) {
		c.Add(file, "/source/tree", reason.ErrSourceFormat, "tree %q is not 40 lowercase hex digits", src.Tree)
	}
	if src.TreeHashFormat != TreeHashFormat {
		c.Add(file, "/source/tree_hash_format", reason.ErrSourceFormat, "tree hash format %q, want %s", src.TreeHashFormat, TreeHashFormat)
	}
	if !digestRE.MatchString(src.TreeHash) {
		c.Add(file, "/source/tree_hash", reason.ErrSourceFormat, "tree hash %q is not a sha256 digest", src.TreeHash)
	}
	if src.OriginMain != nil && !gitobj.ObjectName.MatchString(*src.OriginMain) {
		c.Add(file, "/source/origin_main", reason.ErrSourceFormat, "origin_main %q is not 40 lowercase hex digits", *src.OriginMain)
	}
	switch t := s.Tree; {
	case t.Unavailable != "":
		c.Note("tree hash not recomputed: %s", t.Unavailable)
	case t.Tree != src.Tree:
		c.Add(file, "/source/tree", reason.ErrTreeHashMismatch, "commit %s has tree %s in the checkout, the receipt records %s", src.Commit, t.Tree, src.Tree)
	case t.Hash != src.TreeHash:
		c.Add(file, "/source/tree_hash", reason.ErrTreeHashMismatch, "the %s hash of commit %s's tree, recomputed from the checkout's git objects, is %s; the receipt records %s", TreeHashFormat, src.Commit, t.Hash, src.TreeHash)
	default:
		checkInputsInCommit(c, s)
	}
	if !src.Clean {
		c.Add(file, "/source/clean", reason.ErrDirtySource, "the campaign ran from a worktree with uncommitted or untracked changes")
	}
	switch {
	case !s.Policy.RequirePublishable:
		c.Note("publication not required by the policy")
	case s.Relax[policy.RelaxUnpublished]:
		c.Note("publication not required: %s", policy.RelaxUnpublished)
	default:
		if !s.RC.Publishable {
			c.Add(file, "/publishable", reason.ErrUnpublished, "the receipt is not publishable: %s", strings.Join(s.RC.UnpublishableReasons, "; "))
		}
		if s.RC.Qualification.Verdict == contract.QualificationVerdictInterrupted {
			c.Add(file, "/qualification/verdict", reason.ErrUnpublished, "the campaign was interrupted: an interrupted receipt is never publishable")
		}
		switch {
		case src.OriginMain == nil:
			c.Add(file, "/source/origin_main", reason.ErrUnpublished, "the repository had no origin/main when the campaign ran")
		case *src.OriginMain != src.Commit:
			c.Add(file, "/source/origin_main", reason.ErrUnpublished, "HEAD %s was not origin/main %s when the campaign ran", src.Commit, *src.OriginMain)
		}
		switch co := s.Checkout; {
		case s.CheckoutErr != nil:
			c.Note("the git metadata of %s could not be read (%v): the receipt's commit was not compared with origin/main", s.Evidence.Root, s.CheckoutErr)
		case co == nil:
			c.Note("%s is not a git checkout: the receipt's commit was not compared with origin/main", s.Evidence.Root)
		case co.OriginMain == "":
			c.Note("the checkout has no origin/main: the receipt's commit was not compared with it")
		case co.OriginMain != src.Commit:
			c.Add(file, "/source/commit", reason.ErrNotOriginMain, "the receipt was made from %s, the checkout's origin/main is %s", src.Commit, co.OriginMain)
		}
	}
	return c.Result()
}
