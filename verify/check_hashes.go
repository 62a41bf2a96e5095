package verify

import (
	"errors"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// checkHashes: every referenced evidence file and, where present locally, every bound artifact is
// re-hashed against the receipt; every binding of one file agrees (results, lifecycle, rows,
// workload); every attestation subject equals the file it names.
func checkHashes(s *snapshot) CheckResult {
	c := &finding.Collector{Check: CheckHashes}
	rc := s.rc
	file := s.receipt.path
	artifactDigest := map[string]string{} // path -> digest, first listing
	for i, a := range rc.Artifacts {
		if _, ok := artifactDigest[a.Path]; !ok {
			artifactDigest[a.Path] = a.Digest
		}
		f := s.files[a.Path]
		switch {
		case readInput(a.Kind) && (!f.local || (!f.present && f.readErr == nil)):
			if !s.relax[RelaxMissingInputs] {
				c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrMissingInput, "%s %s is bound by the receipt and not present in the repository: without it %s; restore it (the commit %s has it), or pass --%s to verify without it",
					a.Kind, a.Path, notCheckedWithout(a.Kind), rc.Source.Commit, RelaxMissingInputs)
			}
			continue
		case !f.local:
			if s.mustExist(a) {
				c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrUnreadableFile, "%s %s: evidence a campaign writes lives in the repository, not at an absolute path", a.Kind, a.Path)
			}
			continue
		case errors.Is(f.readErr, reason.ErrSizeMismatch):
			c.Add(file, finding.Pointer("artifacts", i, "bytes"), reason.ErrSizeMismatch, "%s %s has %d bytes, the receipt records %d: not read", a.Kind, a.Path, f.size, a.Bytes)
			continue
		case f.readErr != nil:
			c.Add(a.Path, "", reason.ErrUnreadableFile, "%s %s (listed at %s): %s", a.Kind, a.Path, finding.Pointer("artifacts", i), detail(f.readErr, reason.ErrUnreadableFile))
			continue
		case !f.present:
			if s.mustExist(a) {
				c.Add(a.Path, "", reason.ErrMissingFile, "%s %s is listed at %s of the receipt and does not exist", a.Kind, a.Path, finding.Pointer("artifacts", i))
			}
			continue
		}
		if f.digest != a.Digest {
			c.Add(file, finding.Pointer("artifacts", i, "digest"), reason.ErrDigestMismatch, "%s %s has %s, the receipt binds %s", a.Kind, a.Path, f.digest, a.Digest)
		} else if f.size != a.Bytes {
			c.Add(file, finding.Pointer("artifacts", i, "bytes"), reason.ErrSizeMismatch, "%s %s has %d bytes, the receipt records %d", a.Kind, a.Path, f.size, a.Bytes)
		}
	}
	// ref checks one more binding of a file: it must be listed as an artifact with the same digest.
	ref := func(refFile, ptr, path, dg, what string) {
		want, listed := artifactDigest[path]
		switch {
		case !listed:
			c.Add(refFile, ptr, reason.ErrReferenceMismatch, "%s %s is not listed among the receipt's artifacts", what, path)
			if f := s.files[path]; f != nil && f.present && f.digest != dg {
				c.Add(refFile, ptr+"/digest", reason.ErrDigestMismatch, "%s %s has %s, the reference binds %s", what, path, f.digest, dg)
			} else if f != nil && !f.present && f.readErr == nil {
				c.Add(path, "", reason.ErrMissingFile, "%s %s (referenced at %s of %s) does not exist", what, path, ptr, refFile)
			}
		case want != dg:
			c.Add(refFile, ptr+"/digest", reason.ErrReferenceMismatch, "%s %s is bound as %s here and as %s in the receipt's artifacts", what, path, dg, want)
		}
	}
	for i, r := range rc.Results {
		if r.CaseResult != nil {
			ref(file, finding.Pointer("results", i, "case_result"), r.CaseResult.Path, r.CaseResult.Digest, "case result") // not a contract value: the result's member name
		}
	}
	if rc.Lifecycle != nil {
		ref(file, "/lifecycle", rc.Lifecycle.Path, rc.Lifecycle.Digest, "lifecycle record")
	}
	for _, p := range sortedCaseResults(s) {
		for j, row := range s.caseResults[p].Rows {
			ref(p, finding.Pointer("rows", j, "records"), row.Records.Path, row.Records.Digest, "request records")
		}
	}
	checkDriverBindings(s, c)
	if wd, ok := artifactDigest[rc.Workload.Path]; !ok {
		c.Add(file, "/workload/path", reason.ErrReferenceMismatch, "workload %s is not listed among the receipt's artifacts", rc.Workload.Path)
	} else if wd != rc.Workload.Digest {
		c.Add(file, "/workload/digest", reason.ErrReferenceMismatch, "workload %s is bound as %s here and as %s in the artifacts", rc.Workload.Path, rc.Workload.Digest, wd)
	}
	checkIdentity(s, c)
	// Everything below the run directory is evidence: each file there must be an artifact.
	if s.runWalkErr != nil {
		c.Add(s.runDir(), "", reason.ErrUnreadableFile, "the run directory cannot be listed: %v", s.runWalkErr)
	}
	for _, e := range s.runEntries {
		if _, bound := artifactDigest[e.path]; bound {
			continue
		}
		what := "a file"
		if !e.mode.IsRegular() {
			what = "an entry (" + e.mode.Type().String() + ")"
		}
		c.Add(e.path, "", reason.ErrUnboundFile, "%s below the run directory %s that the receipt does not bind: everything there is evidence that must be listed among the receipt's artifacts; remove it, or verify a copy without it", what, s.runDir())
	}
	// Attestation subjects against the files they name.
	for _, a := range s.attestations {
		if a.stmt == nil {
			continue
		}
		for i, sub := range a.stmt.subjects {
			var got string
			switch f := s.files[sub.name]; {
			case sub.name == s.receipt.path:
				got = s.receipt.digest
			case f != nil && f.present:
				got = f.digest
			default:
				continue // a subject the receipt does not bind: the signature check reports it
			}
			if got != sub.digest {
				c.Add(sub.name, "", reason.ErrSubjectMismatch, "subject %d of %s binds %s, the file has %s", i, a.path, sub.digest, got)
			}
		}
	}
	return c.Result()
}

func sortedCaseResults(s *snapshot) []string {
	out := make([]string, 0, len(s.caseResults))
	for p := range s.caseResults {
		out = append(out, p)
	}
	sortStrings(out)
	return out
}

// artifactsOfKind returns the receipt's artifacts of the given kinds, in order.
func artifactsOfKind(rc *contract.ReceiptDoc, kinds ...contract.ArtifactKind) []contract.Artifact {
	var out []contract.Artifact
	for _, a := range rc.Artifacts {
		for _, k := range kinds {
			if a.Kind == k {
				out = append(out, a)
				break
			}
		}
	}
	return out
}

// detail is an error's message without the text of its leading reason.
func detail(err error, r *reason.Reason) string {
	return strings.TrimPrefix(err.Error(), r.Error()+": ")
}
