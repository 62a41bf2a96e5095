package verify

import (
	"time"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Report fills the verification report contract (qualkit.verification-report.v1) from a result.
// version is the verifier's version; now is the report's creation time.
func (r *Result) Report(version string, now time.Time) contract.VerificationReportDoc {
	doc := contract.VerificationReportDoc{
		Schema:    contract.VerificationReportSchema,
		CreatedAt: now.UTC().Format(time.RFC3339Nano),
		Verifier:  contract.VerifierInfo{Name: "qualverify", Version: nonEmpty(version, "dev")},
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
		out := contract.SignatureReport{File: clipRunes(sg.File, 4096), Index: int64(sg.Index), KeyID: clipRunes(sg.KeyID, 1024), Verified: sg.Verified}
		if sg.Key != "" {
			k := sg.Key
			out.Key = &k
		}
		if sg.Problem != "" {
			p := clipRunes(sg.Problem, 1024)
			out.Problem = &p
		}
		if id := sg.Identity; id != nil { // keyless.go
			out.Identity = &contract.SignerIdentityReport{Issuer: clipRunes(id.Issuer, 1024), Subject: clipRunes(id.Subject, 1024)}
		}
		doc.Signatures = append(doc.Signatures, out)
	}
	for _, c := range r.Checks {
		ch := contract.Check{Name: c.Check, Status: c.Status, Findings: []contract.Finding{}}
		for _, f := range c.Findings {
			ch.Findings = append(ch.Findings, contract.Finding{Check: contract.CheckName(string(f.Check)), File: clipRunes(nonEmpty(f.File, "-"), 4096),
				Pointer: f.Pointer, Code: nonEmpty(f.Code(), "finding"), Message: clipRunes(nonEmpty(f.Err.Error(), "-"), 2048)})
		}
		doc.Checks = append(doc.Checks, ch)
	}
	doc.Weakened = append(doc.Weakened, r.Weakened...)
	if r.Scope != "" {
		sc := clipRunes(r.Scope, 1024)
		doc.Scope = &sc
	}
	return doc
}

// The contract's bounds on a report's subjects and signatures.
const (
	maxReportSubjects   = 100000
	maxReportSignatures = 256
)

func nonEmpty(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

// clipRunes bounds a string to n runes (the contract's limits), marking the cut.
func clipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
