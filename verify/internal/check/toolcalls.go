package check

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// checkToolCalls judges the tool calls of a serving case's rows (wc: its workload case) against
// its bound tools file (rowcheck.ToolCalls).
func checkToolCalls(s *load.Snapshot, c *finding.Collector, cr *contract.CaseResultDoc, wc *contract.Case) {
	var fns *wire.Functions
	known := true // whether the offered functions are known
	if t := wc.Tools; t != nil {
		// An unbound or other tools file is the body check's finding (boundCorpusFile).
		if f := s.Files[t.Path]; f == nil || !f.Present || f.Raw == nil || f.Digest != t.Digest {
			c.Note("case %s: tools file %s is not available with the workload's digest: tool calls were not judged again", wc.ID, t.Path)
			known = false
		} else if parsed, err := wire.ParseFunctions(f.Raw); err != nil {
			c.Add(t.Path, "", reason.ErrCorpusMismatch, "tools file %s does not parse as the runner's: %v", t.Path, err)
			known = false
		} else {
			fns = parsed
		}
	}
	restsOnRecords := 0
	for _, row := range cr.Rows {
		f := s.Files[row.Records.Path]
		if f == nil || f.Records == nil {
			continue
		}
		recs := RowRecords(nil, cr, row, f.Records)
		restsOnRecords += rowcheck.ToolCalls(c, row, recs, fns, known)
	}
	if restsOnRecords > 0 {
		c.Note("case %s: %d tool calls keep no arguments (longer than %d bytes, or written before arguments were kept): their validity rests on the records", wc.ID, restsOnRecords, wire.MaxKeptArgumentBytes)
	}
}
