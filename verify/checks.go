package verify

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// checks is the ordered table of publication checks: each is a pure function of what loading read.
var checks = []struct {
	name Check
	run  func(*snapshot) CheckResult
}{
	{CheckSchemas, checkSchemas},
	{CheckSource, needReceipt(checkSource)},
	{CheckHashes, needReceipt(checkHashes)},
	{CheckSignature, needReceipt(checkSignature)},
	{CheckCleanup, needReceipt(checkCleanup)},
	{CheckTolerances, needReceipt(checkTolerances)},
	{CheckComparability, needReceipt(checkComparability)},
	{CheckScope, needReceipt(checkScope)},
}

// needReceipt skips a check when the receipt itself is invalid: nothing it says can be relied on.
func needReceipt(f func(*snapshot) CheckResult) func(*snapshot) CheckResult {
	return func(s *snapshot) CheckResult {
		if s.rc == nil {
			return CheckResult{Status: StatusSkipped, Note: "the receipt is invalid (see the schemas check)"}
		}
		return f(s)
	}
}

// findingError carries a Reason and, optionally, the error that caused it (a schemas.Violation).
type findingError struct {
	reason *reason.Reason
	msg    string
	cause  error
}

func (e *findingError) Error() string { return e.msg }

func (e *findingError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.reason, e.cause}
	}
	return []error{e.reason}
}

// collector accumulates one check's findings.
type collector struct {
	check Check
	out   []Finding
	notes []string
}

func (c *collector) add(file, pointer string, r *reason.Reason, format string, args ...any) {
	c.out = append(c.out, Finding{Check: c.check, File: file, Pointer: pointer,
		Err: &findingError{reason: r, msg: r.Error() + ": " + fmt.Sprintf(format, args...)}})
}

func (c *collector) addCause(file, pointer string, r *reason.Reason, cause error) {
	c.out = append(c.out, Finding{Check: c.check, File: file, Pointer: pointer, Err: &findingError{reason: r, msg: cause.Error(), cause: cause}})
}

func (c *collector) note(format string, args ...any) {
	c.notes = append(c.notes, fmt.Sprintf(format, args...))
}

func (c *collector) result() CheckResult {
	return CheckResult{Findings: c.out, Note: strings.Join(c.notes, "; ")}
}

func (c *collector) skipped(note string) CheckResult {
	return CheckResult{Status: StatusSkipped, Findings: c.out, Note: note}
}

var pointerEscaper = strings.NewReplacer("~", "~0", "/", "~1")

// jp builds an RFC 6901 JSON pointer.
func jp(parts ...any) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteByte('/')
		switch p := p.(type) {
		case string:
			b.WriteString(pointerEscaper.Replace(p))
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

// canonicalEqual reports whether two values have the same RFC 8785 canonical form.
func canonicalEqual(a, b any) bool {
	ca, err1 := jsonstrict.Canonical(a)
	cb, err2 := jsonstrict.Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(ca, cb)
}

// --- 1. schemas --------------------------------------------------------------------------

// violationReason maps a contract violation to its Reason.
func violationReason(v schemas.Violation) *reason.Reason {
	var de *jsonstrict.DecodeError
	switch {
	case errors.Is(v.Err, reason.ErrWrongContract):
		return reason.ErrWrongContract
	case errors.As(v.Err, &de):
		return reason.ErrInvalidJSON
	case errors.Is(v.Err, schemas.ErrHistorical):
		return reason.ErrHistoricalEvidence
	case errors.Is(v.Err, schemas.ErrUnknownContract):
		return reason.ErrUnknownContract
	case errors.Is(v.Err, jsonstrict.ErrSelfHashMismatch), errors.Is(v.Err, jsonstrict.ErrSelfHashMissing):
		return reason.ErrSelfHash
	case errors.Is(v.Err, schemas.ErrSemantic):
		return reason.ErrSemanticViolation
	}
	return reason.ErrSchemaViolation
}

// checkSchemas: every file validates against its exported schema and semantic rules; request
// records line by line; historical evidence is refused naming its markers.
func checkSchemas(s *snapshot) CheckResult {
	c := &collector{check: CheckSchemas}
	report := func(f *fileFacts) {
		for _, v := range f.violations {
			c.addCause(f.path, v.Pointer, violationReason(v), v)
		}
		if f.records != nil {
			for _, v := range f.records.Invalid {
				c.addCause(f.path, v.Pointer, violationReason(v), v)
			}
			if f.records.TooMany {
				c.add(f.path, "", reason.ErrSchemaViolation, "more than %d request records in one file", limits.MaxRecordsPerFile)
			}
		}
	}
	if s.receipt.readErr != nil {
		// The error wraps ErrUnreadableFile (a FIFO, a device, a symlink, too large).
		c.out = append(c.out, Finding{Check: CheckSchemas, File: s.receipt.path, Err: s.receipt.readErr})
	}
	report(s.receipt)
	if s.rc == nil {
		return c.result()
	}
	for _, p := range sortedPaths(s.files) {
		report(s.files[p])
	}
	return c.result()
}

func sortedPaths(m map[string]*fileFacts) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sortStrings(out)
	return out
}
