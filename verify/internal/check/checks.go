package check

import (
	"errors"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/limits"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// checks is the ordered table of publication checks: each is a pure function of what loading read.
var Table = []struct {
	Name finding.Check
	Run  func(*load.Snapshot) finding.CheckResult
}{
	{finding.CheckSchemas, Schemas},
	{finding.CheckSource, needReceipt(Source)},
	{finding.CheckHashes, needReceipt(Hashes)},
	{finding.CheckSignature, needReceipt(Signature)},
	{finding.CheckCleanup, needReceipt(Cleanup)},
	{finding.CheckTolerances, needReceipt(Tolerances)},
	{finding.CheckComparability, needReceipt(Comparability)},
	{finding.CheckScope, needReceipt(Scope)},
}

// needReceipt skips a check when the receipt itself is invalid: nothing it says can be relied on.
func needReceipt(f func(*load.Snapshot) finding.CheckResult) func(*load.Snapshot) finding.CheckResult {
	return func(s *load.Snapshot) finding.CheckResult {
		if s.RC == nil {
			return finding.CheckResult{Status: finding.StatusSkipped, Note: "the receipt is invalid (see the schemas check)"}
		}
		return f(s)
	}
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

// Schemas: every file validates against its exported schema and semantic rules; request
// records line by line; historical evidence is refused naming its markers.
func Schemas(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckSchemas}
	report := func(f *load.File) {
		for _, v := range f.Violations {
			c.AddCause(f.Path, v.Pointer, violationReason(v), v)
		}
		if f.Records != nil {
			for _, v := range f.Records.Invalid {
				c.AddCause(f.Path, v.Pointer, violationReason(v), v)
			}
			if f.Records.TooMany {
				c.Add(f.Path, "", reason.ErrSchemaViolation, "more than %d request records in one file", limits.MaxRecordsPerFile)
			}
		}
	}
	if s.Receipt.ReadErr != nil {
		// The error wraps ErrUnreadableFile (a FIFO, a device, a symlink, too large).
		c.Out = append(c.Out, finding.Finding{Check: finding.CheckSchemas, File: s.Receipt.Path, Err: s.Receipt.ReadErr})
	}
	report(s.Receipt)
	if s.RC == nil {
		return c.Result()
	}
	for _, p := range sortedPaths(s.Files) {
		report(s.Files[p])
	}
	return c.Result()
}

func sortedPaths(m map[string]*load.File) []string {
	out := make([]string, 0, len(m))
	for p := range m {
		out = append(out, p)
	}
	sortStrings(out)
	return out
}
