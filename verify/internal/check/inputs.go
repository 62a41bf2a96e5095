package check

import (
	"errors"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"

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

// maxNamedArg bounds an argv element or environment value looked at as a file name (the runner's
// launchFiles bound).
const maxNamedArg = 4096

// launchBoundKinds are the kinds under which a file a launch recipe names may be listed: the
// runner binds such a file as a config_file unless it bound the path before it read the recipe's
// names (the recipe itself, the server binary, a driver case's files of an earlier case). A corpus
// or tokenizer is bound after, so it is listed twice (a tokenizer the recipe names: as a
// config_file and a tokenizer).
var launchBoundKinds = []contract.ArtifactKind{contract.ArtifactKindConfigFile, contract.ArtifactKindLaunchRecipe, contract.ArtifactKindServerBinary,
	contract.ArtifactKindDriverExecutable, contract.ArtifactKindDriverScript, contract.ArtifactKindDriverRequest, contract.ArtifactKindDriverModel}

// checkNamedConfigFiles: every file of the receipt's commit that a bound launch recipe's argv or
// environment names is listed among the receipt's artifacts (as a config_file, or under a kind of
// launchBoundKinds at that path) or recorded by the run configuration as a secret file: the
// runner binds each (runner/campaign launchFiles: an element names a file when
// it, or what follows the first "=" in it, resolves from the server's working directory to a
// regular file of the repository; a tracked one is bound by digest unless it holds a redacted
// value). Values of redacted variables and of passthrough variables (the runner's environment,
// not the recipe's) are not looked at, nor absolute paths (the verifier does not know where the
// runner's repository was), nor a recipe whose working directory is absolute. On the mutation
// closure's apis shape a qualsim --config listing, or the config_file listing of a tokenizer the
// recipe names, dropped or moved verified.
func checkNamedConfigFiles(c *finding.Collector, s *load.Snapshot) {
	if t := s.Tree; t.Unavailable != "" || t.Tree == "" || t.Tree != s.RC.Source.Tree || t.Hash != s.RC.Source.TreeHash || s.Checkout == nil {
		return // the source check says why the commit's tree was not read, or is not the receipt's
	}
	listed := map[string]bool{}
	for _, a := range s.RC.Artifacts {
		if slices.Contains(launchBoundKinds, a.Kind) {
			listed[a.Path] = true
		}
	}
	for _, p := range secretFiles(s) {
		listed[p] = true
	}
	g, err := gitobj.Open(s.Checkout.CommonDir)
	if err != nil {
		return // recomputeTree read the same objects: it says why they cannot be read
	}
	defer g.Close()
	for _, rp := range slices.Sorted(maps.Keys(s.Recipes)) {
		r := s.Recipes[rp]
		if r == nil || len(r.Command) == 0 || path.IsAbs(r.WorkingDirectory) {
			continue
		}
		wd := path.Join(path.Dir(rp), r.WorkingDirectory)
		var cands []string
		add := func(v string) {
			cands = append(cands, v)
			if _, after, ok := strings.Cut(v, "="); ok {
				cands = append(cands, after)
			}
		}
		for _, a := range r.Command[1:] {
			add(a)
		}
		for _, k := range slices.Sorted(maps.Keys(r.Environment)) {
			if !r.RedactsEnv(k) {
				add(r.Environment[k])
			}
		}
		seen := map[string]bool{}
		for _, cand := range cands {
			if cand == "" || strings.ContainsRune(cand, 0) || len(cand) > maxNamedArg || path.IsAbs(cand) {
				continue
			}
			rel := path.Join(wd, cand)
			if rel == "." || rel == ".." || strings.HasPrefix(rel, "../") || rel == ".git" || strings.HasPrefix(rel, ".git/") || seen[rel] || listed[rel] {
				continue
			}
			seen[rel] = true
			if d, err := g.RegularFileDigest(s.Tree.Tree, rel); err != nil || d == "" {
				continue
			}
			c.Add(s.Receipt.Path, "/artifacts", reason.ErrReferenceMismatch, "launch recipe %s names %s (%q), a file of commit %s, which the receipt does not list (nor the run configuration as a secret file): the runner binds every repository file a recipe names as a config_file", rp, rel, cand, s.RC.Source.Commit)
		}
	}
}

// secretFiles are the paths the campaign's run configuration records as secret files (read by
// the server, not bound by content).
func secretFiles(s *load.Snapshot) []string {
	var out []string
	for _, a := range ArtifactsOfKind(s.RC, contract.ArtifactKindConfigFile) {
		f := s.Files[a.Path]
		if f == nil || !f.Present || !load.IsRunConfig(f) || len(f.Violations) > 0 {
			continue
		}
		var rc contract.EffectiveRunConfigDoc
		if err := jsonstrict.DecodeInto(f.Raw, &rc); err == nil {
			for _, sf := range rc.SecretFiles {
				out = append(out, sf.Path)
			}
		}
	}
	return out
}
