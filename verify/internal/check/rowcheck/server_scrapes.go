package rowcheck

import (
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/promtext"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// ServerScrapes recomputes a row's server metrics (the family deltas server.<family>.delta,
// telemetry_delta.v1, and the ratios of metric.ServerRatios) from the two /metrics pages the row
// binds (server_metrics), with the runner's own functions (promtext.Parse and promtext.Deltas: a
// new series counts from zero, a reset or vanished series is left out; metric.ServerMetrics):
// every metric the pages give must be recorded with that value, identity and samples, and no other
// server metric recorded. It reports whether it recomputed them from pages. A page that is
// not a listed server_metrics artifact is reference_mismatch, one that does not exist
// missing_file, one that cannot be read (over MaxScrapeBytes) unreadable_file, one whose bytes are
// not its reference's digest digest_mismatch, and one that does not parse metric_mismatch. A row
// without pages (evidence written before they were kept) has deltas that rest on the runner's
// word: a note says so, and its ratios are recomputed from its recorded deltas (ServerRatios).
func ServerScrapes(s *load.Snapshot, c *finding.Collector, path, base string, row contract.Row, tol policy.Tolerance) bool {
	var recorded []int // indexes of the row's server metrics
	deltas := 0
	for i, m := range row.Metrics {
		switch {
		case m.Formula == metric.TelemetryDelta || strings.HasPrefix(m.Name, "server.") && strings.HasSuffix(m.Name, ".delta"):
			deltas++
			recorded = append(recorded, i)
		case serverRatioName(m.Name):
			recorded = append(recorded, i)
		}
	}
	sm := row.ServerMetrics
	if sm == nil {
		if deltas > 0 {
			c.Note("%s%s: %d server counter deltas rest on the runner's word (the row keeps no /metrics pages: evidence written before they were kept)", path, base, deltas)
		}
		return false
	}
	var pages [2][]promtext.Sample
	for k, ref := range []contract.FileRef{sm.Before, sm.After} {
		ptr := base + "/server_metrics/" + [...]string{"before", "after"}[k]
		f := s.Files[ref.Path]
		switch {
		case f == nil || f.Kind != contract.ArtifactKindServerMetrics:
			c.Add(path, ptr+"/path", reason.ErrReferenceMismatch, "%s is not a server_metrics artifact of the receipt: the row's server deltas are not recomputed", ref.Path)
			return false
		case f.ReadErr != nil:
			c.Add(path, ptr, reason.ErrUnreadableFile, "%s: the row's server deltas are not recomputed", strings.TrimPrefix(f.ReadErr.Error(), reason.ErrUnreadableFile.Error()+": "))
			return false
		case !f.Present:
			c.Add(path, ptr, reason.ErrMissingFile, "%s does not exist: the row's server deltas are not recomputed", ref.Path)
			return false
		case f.Digest != ref.Digest:
			c.Add(path, ptr+"/digest", reason.ErrDigestMismatch, "%s, the page hashes to %s", ref.Digest, f.Digest)
			return false
		}
		ss, err := promtext.Parse(f.Raw)
		if err != nil {
			c.Add(ref.Path, "", reason.ErrMetricMismatch, "the row's /metrics page does not parse, so no server metric can come from it: %v", err)
			return false
		}
		pages[k] = ss
	}
	series, _ := promtext.Deltas(pages[0], pages[1])
	all, _ := metric.ServerMetrics(series)
	want := map[string]contract.Metric{}
	var order []string
	for _, m := range all {
		want[m.Name] = m
		order = append(order, m.Name)
	}
	seen := map[string]bool{}
	for _, i := range recorded {
		got := row.Metrics[i]
		w, ok := want[got.Name]
		ptr := base + finding.Pointer("metrics", i)
		switch {
		case !ok:
			c.Add(path, ptr, reason.ErrMetricMismatch, "%s is %s, but the row's /metrics pages do not give it", got.Name, record.FmtFloat(got.Value))
		case seen[got.Name]:
			c.Add(path, ptr, reason.ErrMetricMismatch, "%s recorded twice", got.Name)
		case !record.Within(got.Value, w.Value, tol):
			c.Add(path, ptr+"/value", reason.ErrMetricMismatch, "%s is %s, the row's /metrics pages give %s", got.Name, record.FmtFloat(got.Value), record.FmtFloat(w.Value))
		case got.Samples == nil || *got.Samples != *w.Samples:
			c.Add(path, ptr+"/samples", reason.ErrMetricMismatch, "%s has %s samples, the row's /metrics pages give %d", got.Name, samplesString(got.Samples), *w.Samples)
		case IdentityOf(got) != IdentityOf(w) || got.Diagnostic != w.Diagnostic:
			c.Add(path, ptr, reason.ErrMetricMismatch, "%s carries %s (diagnostic %v), the pages give %s (diagnostic %v)", got.Name, IdentityOf(got), got.Diagnostic, IdentityOf(w), w.Diagnostic)
		}
		seen[got.Name] = true
	}
	for _, n := range order {
		if !seen[n] {
			c.Add(path, base+"/metrics", reason.ErrMetricMismatch, "%s is missing (the row's /metrics pages give %s)", n, record.FmtFloat(want[n].Value))
		}
	}
	return true
}

// serverRatioName reports whether name is a server ratio's (metric.ServerRatios).
func serverRatioName(name string) bool {
	for _, r := range metric.ServerRatios {
		if f, _ := metric.Lookup(r.Formula); f.Name == name {
			return true
		}
	}
	return false
}
