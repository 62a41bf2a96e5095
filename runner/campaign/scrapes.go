package campaign

import (
	"strings"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
)

// scrapeRow writes a row's two /metrics pages (load.Telemetry.Before and After, already scrubbed
// of the campaign's secrets) beside its request records as <row>.metrics-before.prom and
// <row>.metrics-after.prom, binds them in the row (server_metrics) and as server_metrics
// evidence. The row's server metrics were computed from exactly these bytes, which qualverify
// recomputes them from. A row without both pages keeps none.
func (r *run) scrapeRow(recordsRel string, row *contract.Row, tel *load.Telemetry) error {
	if tel == nil || tel.Before == nil || tel.After == nil {
		return nil
	}
	stem := strings.TrimSuffix(recordsRel, ".jsonl")
	var refs [2]contract.FileRef
	for i, page := range [][]byte{tel.Before, tel.After} {
		rel := stem + [...]string{".metrics-before.prom", ".metrics-after.prom"}[i]
		if err := writeNew(r.p.root, rel, page); err != nil {
			return err
		}
		r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindServerMetrics, Path: rel, Abs: r.abs(rel)})
		refs[i] = contract.FileRef{Path: rel, Digest: evidence.DigestOf(page)}
	}
	row.ServerMetrics = &contract.RowServerMetrics{Before: refs[0], After: refs[1]}
	return nil
}
