// Package finding is what a check reports: the check names and statuses, Finding (a file, a JSON
// pointer and an error wrapping one reason), CheckResult, and the Collector each check adds its
// findings to. Package verify re-exports Finding and CheckResult.
package finding

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/reason"
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
var CheckOrder = []Check{CheckSchemas, CheckSource, CheckHashes, CheckSignature, CheckCleanup, CheckTolerances, CheckComparability, CheckScope}

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
type Finding struct {
	Check   Check
	File    string
	Pointer string
	Err     error
}

// Code returns the stable code of the finding's Reason.
func (f Finding) Code() string { return reason.CodeOf(f.Err) }

func (f Finding) Error() string {
	p := f.Pointer
	if p == "" {
		p = "/"
	}
	return fmt.Sprintf("%s: %s: %s: %v", f.Check, f.File, p, f.Err)
}

// Unwrap returns the finding's error, so errors.Is(finding, ErrDigestMismatch) works.
func (f Finding) Unwrap() error { return f.Err }

// CheckResult is the outcome of one check.
type CheckResult struct {
	Check    Check
	Status   Status
	Findings []Finding
	// Note says why a check was skipped, or what it could not cover.
	Note string
}

// Error carries a Reason and, optionally, the error that caused it (a schemas.Violation).
type Error struct {
	Reason *reason.Reason
	Msg    string
	cause  error
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() []error {
	if e.cause != nil {
		return []error{e.Reason, e.cause}
	}
	return []error{e.Reason}
}

// Collector accumulates one check's findings.
type Collector struct {
	Check Check
	Out   []Finding
	Notes []string
}

func (c *Collector) Add(file, pointer string, r *reason.Reason, format string, args ...any) {
	c.Out = append(c.Out, Finding{Check: c.Check, File: file, Pointer: pointer,
		Err: &Error{Reason: r, Msg: r.Error() + ": " + fmt.Sprintf(format, args...)}})
}

func (c *Collector) AddCause(file, pointer string, r *reason.Reason, cause error) {
	c.Out = append(c.Out, Finding{Check: c.Check, File: file, Pointer: pointer, Err: &Error{Reason: r, Msg: cause.Error(), cause: cause}})
}

func (c *Collector) Note(format string, args ...any) {
	c.Notes = append(c.Notes, fmt.Sprintf(format, args...))
}

func (c *Collector) Result() CheckResult {
	return CheckResult{Findings: c.Out, Note: strings.Join(c.Notes, "; ")}
}

func (c *Collector) Skipped(note string) CheckResult {
	return CheckResult{Status: StatusSkipped, Findings: c.Out, Note: note}
}

var PointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// Pointer builds an RFC 6901 JSON pointer.
func Pointer(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		switch p := p.(type) {
		case string:
			b.WriteString(PointerEscaper.Replace(p))
		case int:
			b.WriteString(strconv.Itoa(p))
		case int64:
			b.WriteString(strconv.FormatInt(p, 10))
		default:
			b.WriteString(fmt.Sprint(p))
		}
	}
	return b.String()
}

// CanonicalEqual reports whether two values have the same RFC 8785 canonical form.
func CanonicalEqual(a, b any) bool {
	ca, err1 := jsonstrict.Canonical(a)
	cb, err2 := jsonstrict.Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// SkippedIfEmpty is the result: skipped with note when there is no finding, else failed with note.
func (c *Collector) SkippedIfEmpty(note string) CheckResult {
	if len(c.Out) > 0 {
		r := c.Result()
		r.Note = note
		return r
	}
	return c.Skipped(note)
}
