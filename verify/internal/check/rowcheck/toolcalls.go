package rowcheck

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Tool calls (docs/metrics.md "Tool calls"): every call a record holds is judged again against
// the case's bound tools file by the runner's own rule (wire.Functions.Invalid). A call to a
// function the tools do not offer (or in a case that offers none) is not valid. Where the record
// keeps the call's arguments (UTF-8 of at most wire.MaxKeptArgumentBytes), their digest, their
// size and the call's validity are recomputed from them. Where it does not (longer arguments, or
// a row written before arguments were kept), validity rests on the record, and the note says so.
// A row in which some call keeps its arguments keeps every call's that can be kept, so leaving the
// arguments out of one call does not take it out of the judgement (row_mismatch).
// A record holds one call per stream index, in index order, as the runner writes them
// (row_mismatch otherwise).

// ToolCalls judges every tool call of a row's records (fns: the case's functions, nil when it
// offers none; known: whether they are known, else only the arguments' digests and sizes are
// checked) and returns how many calls keep no arguments, their validity resting on the records.
func ToolCalls(c *finding.Collector, row contract.Row, recs []*record.Record, fns *wire.Functions, known bool) int {
	kept := false
	for _, r := range recs {
		for _, call := range r.Calls {
			kept = kept || call.Arguments != nil
		}
	}
	rests := 0
	for _, r := range recs {
		// The runner records a response's calls in the order of their stream index, one entry
		// per index (runner/load judgeCalls): a call repeated or out of order is not one it wrote.
		for i := 1; i < len(r.Calls); i++ {
			if r.Calls[i].Index <= r.Calls[i-1].Index {
				c.Add(row.Records.Path, finding.Pointer(r.Line, "tool_calls", i, "index"), reason.ErrRowMismatch, "request %d's call %d has index %d after index %d: the runner records one call per index, in index order", r.Index, i, r.Calls[i].Index, r.Calls[i-1].Index)
				break
			}
		}
		for i := range r.Calls {
			if !judgeCall(c, row, r, i, fns, known, kept) {
				rests++
			}
		}
	}
	return rests
}

// judgeCall judges call i of record r; it returns false when the call's validity rests on the
// record because its arguments are not kept (and may rightly not be). With the functions not
// known, a call that keeps its arguments has them checked against its digest and is not counted:
// why its validity is not judged again (the tools file) is the caller's note, not this count's.
func judgeCall(c *finding.Collector, row contract.Row, r *record.Record, i int, fns *wire.Functions, known, rowKeeps bool) bool {
	call := &r.Calls[i]
	at := finding.Pointer(r.Line, "tool_calls", i)
	if known && call.Valid && !fns.Has(call.Name) {
		c.Add(row.Records.Path, at+"/valid", reason.ErrRowMismatch, "request %d calls %.64q, which the case's tools do not offer, and records the call valid", r.Index, call.Name)
		return true
	}
	if call.Arguments == nil {
		if rowKeeps && call.ArgumentsBytes <= wire.MaxKeptArgumentBytes && call.Valid {
			// Arguments that could not be kept are not UTF-8, and such arguments are never valid.
			c.Add(row.Records.Path, at+"/arguments", reason.ErrRowMismatch, "request %d's call %d (%.64q, %d bytes) keeps no arguments in a row that keeps them, and records the call valid: only arguments that are not UTF-8 go unkept at that size, and they are not valid", r.Index, i, call.Name, call.ArgumentsBytes)
			return true
		}
		return !call.Valid // a call recorded invalid claims nothing
	}
	args := []byte(*call.Arguments)
	sum := sha256.Sum256(args)
	if d := "sha256:" + hex.EncodeToString(sum[:]); d != call.ArgumentsDigest || int64(len(args)) != call.ArgumentsBytes {
		c.Add(row.Records.Path, at, reason.ErrRowMismatch, "request %d's call %d keeps %d bytes of arguments with digest %s; it records %d bytes and %s", r.Index, i, len(args), d, call.ArgumentsBytes, call.ArgumentsDigest)
		return true
	}
	if !known {
		return true
	}
	why := fns.Invalid(call.Name, args)
	if call.Valid != (why == "") {
		if why == "" {
			why = "its arguments satisfy the function's parameters"
		}
		c.Add(row.Records.Path, at+"/valid", reason.ErrRowMismatch, "request %d's call %d (%.64q) records valid %v; judged again: %s", r.Index, i, call.Name, call.Valid, why)
	}
	return true
}
