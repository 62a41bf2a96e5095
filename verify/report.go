package verify

import (
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
)

// Report fills the verification report contract (qualkit.verification-report.v1) from a result.
// version is the verifier's version; now is the report's creation time.
func (r *Result) Report(version string, now time.Time) contract.VerificationReportDoc {
	doc := contract.VerificationReportDoc{
		Schema:    contract.VerificationReportSchema,
		CreatedAt: now.UTC().Format(time.RFC3339Nano),
		Verifier:  contract.VerifierInfo{Name: "qualverify", Version: finding.NonEmpty(version, "dev")},
		Subjects:  []contract.Subject{},
		Checks:    []contract.Check{},
		Weakened:  []string{},
		Verdict:   r.Verdict,
	}
	subjects := r.Subjects
	if len(subjects) > maxReportSubjects {
		subjects = subjects[:maxReportSubjects]
	}
	for _, s := range subjects {
		sub := contract.Subject{Path: s.Path}
		if s.Digest != "" {
			d := s.Digest
			sub.Digest = &d
		}
		if s.Contract != "" {
			c := s.Contract
			sub.Contract = &c
		}
		doc.Subjects = append(doc.Subjects, sub)
	}
	for i, sg := range r.Signatures {
		if i >= maxReportSignatures {
			break
		}
		out := contract.SignatureReport{File: finding.ClipRunes(sg.File, 4096), Index: int64(sg.Index), KeyID: finding.ClipRunes(sg.KeyID, 1024), Verified: sg.Verified}
		if sg.Key != "" {
			k := sg.Key
			out.Key = &k
		}
		if sg.Problem != "" {
			p := finding.ClipRunes(sg.Problem, 1024)
			out.Problem = &p
		}
		if id := sg.Identity; id != nil { // a keyless signer
			out.Identity = &contract.SignerIdentityReport{Issuer: finding.ClipRunes(id.Issuer, 1024), Subject: finding.ClipRunes(id.Subject, 1024)}
		}
		doc.Signatures = append(doc.Signatures, out)
	}
	for _, c := range r.Checks {
		ch := contract.Check{Name: c.Check, Status: c.Status, Findings: []contract.Finding{}}
		for _, f := range c.Findings {
			ch.Findings = append(ch.Findings, contract.Finding{Check: contract.CheckName(string(f.Check)), File: finding.ClipRunes(finding.NonEmpty(f.File, "-"), 4096),
				Pointer: f.Pointer, Code: finding.NonEmpty(f.Code(), "finding"), Message: finding.ClipRunes(finding.NonEmpty(f.Err.Error(), "-"), 2048)})
		}
		doc.Checks = append(doc.Checks, ch)
	}
	doc.Weakened = append(doc.Weakened, r.Weakened...)
	if r.Scope != "" {
		sc := finding.ClipRunes(r.Scope, 1024)
		doc.Scope = &sc
	}
	return doc
}

// The contract's bounds on a report's subjects and signatures.
const (
	maxReportSubjects   = 100000
	maxReportSignatures = 256
)
