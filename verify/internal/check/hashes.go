package check

import (
	"errors"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Hashes: every referenced evidence file and, where present locally, every bound artifact is
// re-hashed against the receipt; every binding of one file agrees (results, lifecycle, rows,
// workload); every attestation subject equals the file it names.
func Hashes(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckHashes}
	rc := s.RC
	file := s.Receipt.Path
	artifactDigest := map[string]string{} // path -> digest, first listing
	for i, a := range rc.Artifacts {
		if _, ok := artifactDigest[a.Path]; !ok {
			artifactDigest[a.Path] = a.Digest
		}
		f := s.Files[a.Path]
		switch {
		case load.ReadInput(a.Kind) && (!f.Local || (!f.Present && f.ReadErr == nil)):
			if !s.Relax[policy.RelaxMissingInputs] {
				c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrMissingInput, "%s %s is bound by the receipt and not present in the repository: without it %s; restore it (the commit %s has it), or pass --%s to verify without it",
					a.Kind, a.Path, load.NotCheckedWithout(a.Kind), rc.Source.Commit, policy.RelaxMissingInputs)
			}
			continue
		case !f.Local:
			if s.MustExist(a) {
				c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrUnreadableFile, "%s %s: evidence a campaign writes lives in the repository, not at an absolute path", a.Kind, a.Path)
			}
			continue
		case errors.Is(f.ReadErr, reason.ErrSizeMismatch):
			c.Add(file, finding.Pointer("artifacts", i, "bytes"), reason.ErrSizeMismatch, "%s %s has %d bytes, the receipt records %d: not read", a.Kind, a.Path, f.Size, a.Bytes)
			continue
		case f.ReadErr != nil:
			c.Add(a.Path, "", reason.ErrUnreadableFile, "%s %s (listed at %s): %s", a.Kind, a.Path, finding.Pointer("artifacts", i), detail(f.ReadErr, reason.ErrUnreadableFile))
			continue
		case !f.Present:
			if s.MustExist(a) {
				c.Add(a.Path, "", reason.ErrMissingFile, "%s %s is listed at %s of the receipt and does not exist", a.Kind, a.Path, finding.Pointer("artifacts", i))
			}
			continue
		}
		if f.Digest != a.Digest {
			c.Add(file, finding.Pointer("artifacts", i, "digest"), reason.ErrDigestMismatch, "%s %s has %s, the receipt binds %s", a.Kind, a.Path, f.Digest, a.Digest)
		} else if f.Size != a.Bytes {
			c.Add(file, finding.Pointer("artifacts", i, "bytes"), reason.ErrSizeMismatch, "%s %s has %d bytes, the receipt records %d", a.Kind, a.Path, f.Size, a.Bytes)
		}
	}
	// ref checks one more binding of a file: it must be listed as an artifact with the same digest.
	ref := func(refFile, ptr, path, dg, what string) {
		want, listed := artifactDigest[path]
		switch {
		case !listed:
			c.Add(refFile, ptr, reason.ErrReferenceMismatch, "%s %s is not listed among the receipt's artifacts", what, path)
			if f := s.Files[path]; f != nil && f.Present && f.Digest != dg {
				c.Add(refFile, ptr+"/digest", reason.ErrDigestMismatch, "%s %s has %s, the reference binds %s", what, path, f.Digest, dg)
			} else if f != nil && !f.Present && f.ReadErr == nil {
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
	for _, p := range SortedCaseResults(s) {
		for j, row := range s.CaseResults[p].Rows {
			ref(p, finding.Pointer("rows", j, "records"), row.Records.Path, row.Records.Digest, "request records")
		}
	}
	checkDriverBindings(s, c)
	checkDriverOutputs(s, c)
	workloadInputs(s, ref)
	if wd, ok := artifactDigest[rc.Workload.Path]; !ok {
		c.Add(file, "/workload/path", reason.ErrReferenceMismatch, "workload %s is not listed among the receipt's artifacts", rc.Workload.Path)
	} else if wd != rc.Workload.Digest {
		c.Add(file, "/workload/digest", reason.ErrReferenceMismatch, "workload %s is bound as %s here and as %s in the artifacts", rc.Workload.Path, rc.Workload.Digest, wd)
	}
	checkIdentity(s, c)
	// Everything below the run directory is evidence: each file there must be an artifact.
	if s.RunWalkErr != nil {
		c.Add(s.RunDir(), "", reason.ErrUnreadableFile, "the run directory cannot be listed: %v", s.RunWalkErr)
	}
	for _, e := range s.RunEntries {
		if _, bound := artifactDigest[e.Path]; bound {
			continue
		}
		what := "a file"
		if !e.Mode.IsRegular() {
			what = "an entry (" + e.Mode.Type().String() + ")"
		}
		c.Add(e.Path, "", reason.ErrUnboundFile, "%s below the run directory %s that the receipt does not bind: everything there is evidence that must be listed among the receipt's artifacts; remove it, or verify a copy without it", what, s.RunDir())
	}
	// Attestation subjects against the files they name.
	for _, a := range s.Attestations {
		if a.Stmt == nil {
			continue
		}
		for i, sub := range a.Stmt.Subjects {
			var got string
			switch f := s.Files[sub.Name]; {
			case sub.Name == s.Receipt.Path:
				got = s.Receipt.Digest
			case f != nil && f.Present:
				got = f.Digest
			default:
				continue // a subject the receipt does not bind: the signature check reports it
			}
			if got != sub.Digest {
				c.Add(sub.Name, "", reason.ErrSubjectMismatch, "subject %d of %s binds %s, the file has %s", i, a.Path, sub.Digest, got)
			}
		}
	}
	return c.Result()
}

func SortedCaseResults(s *load.Snapshot) []string {
	out := make([]string, 0, len(s.CaseResults))
	for p := range s.CaseResults {
		out = append(out, p)
	}
	sortStrings(out)
	return out
}

// artifactsOfKind returns the receipt's artifacts of the given kinds, in order.
func ArtifactsOfKind(rc *contract.ReceiptDoc, kinds ...contract.ArtifactKind) []contract.Artifact {
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

// workloadInputs: every file a case of the receipt's variant binds by digest (a trace, a tools
// file, a tokenizer) is listed among the receipt's artifacts
// with that digest, as the runner lists them. On the mutation closure's trace shape a receipt with
// its trace corpus dropped from the artifacts verified. (A driver case's request and model are
// checkDriverBindings'.)
func workloadInputs(s *load.Snapshot, ref func(refFile, ptr, path, dg, what string)) {
	v := variant(s)
	if v == nil || s.Workload == nil {
		return
	}
	wl := s.RC.Workload.Path
	for vi := range s.Workload.Variants {
		if &s.Workload.Variants[vi] != v {
			continue
		}
		for ci, wc := range v.Cases {
			at := func(parts ...any) string {
				return finding.Pointer(append([]any{"variants", vi, "cases", ci}, parts...)...)
			}
			bind := func(ptr, path, dg, what string) {
				if path != "" && dg != "" && !strings.Contains(path, "${") {
					ref(wl, ptr, path, dg, what)
				}
			}
			// A trace and a conversation corpus file are listed by the runner (a conversation
			// corpus since 2c1bb1c; the mutation closure's sessions shape, regenerated with it,
			// verified with its corpus dropped from the artifacts).
			if cp := wc.Corpus; cp != nil && (cp.Source == contract.CorpusSourceTrace || cp.Source == contract.CorpusSourceConversations) {
				bind(at("corpus"), cp.Path, cp.Digest, "corpus") // not a contract value: the workload case's member name
			}
			if t := wc.Tools; t != nil {
				bind(at("tools"), t.Path, t.Digest, "tools file")
			}
			if t := wc.Tokenizer; t != nil {
				bind(at("tokenizer"), t.Path, t.Digest, "tokenizer") // not a contract value: the workload case's member name
			}
		}
	}
}
