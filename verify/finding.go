package verify

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
)

// Check names a publication check (the verification report's check name). The checks run in
// protocol order (CheckOrder).
type Check = contract.CheckName

// The publication checks, in protocol order.
const (
	CheckSchemas       = contract.CheckNameSchemas
	CheckSource        = contract.CheckNameSource
	CheckHashes        = contract.CheckNameHashes
	CheckSignature     = contract.CheckNameSignature
	CheckCleanup       = contract.CheckNameCleanup
	CheckTolerances    = contract.CheckNameTolerances
	CheckComparability = contract.CheckNameComparability
	CheckScope         = contract.CheckNameScope
)

// CheckOrder lists the checks in protocol order (the order of schemas.CheckOrder).
var CheckOrder = finding.CheckOrder

// Status is the outcome of one check: the verification report's check status.
type Status = contract.CheckStatus

// Check statuses.
const (
	StatusPassed  = contract.CheckStatusPassed
	StatusFailed  = contract.CheckStatusFailed
	StatusSkipped = contract.CheckStatusSkipped
)

// Verdict is the outcome of a verification: the verification report's verdict.
type Verdict = contract.ReportVerdict

// Verdicts.
const (
	Verified = contract.ReportVerdictVerified
	Rejected = contract.ReportVerdictRejected
)

// Finding is one reason the evidence is rejected: the check that found it, the file (a path
// relative to the evidence root), an RFC 6901 JSON pointer into it ("" is the whole file; a JSON
// Lines file is addressed as the array of its lines, so /3/usage is the fourth line's usage) and
// the error, which wraps exactly one *Reason sentinel (errors.Is) and sometimes a
// schemas.Violation.
type Finding = finding.Finding

// CheckResult is the outcome of one check.
type CheckResult = finding.CheckResult
