package rowcheck

import (
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// ServerRatios recomputes a row's server counter ratios (metric.ServerRatios: the prefix-cache
// hit rate, the speculative-decoding acceptance rate) from the row's own family deltas: the
// runner's ratio is Σ numerator family deltas / Σ denominator family deltas over the scrapes
// around the row, each family's delta recorded as the diagnostic metric server.<family>.delta
// (telemetry_delta.v1, ':' written '_', with or without _total). A ratio whose denominator moved
// must be there, with that value, its formula's identity and as many samples as denominator
// families; one whose denominator did not move must not. It checks a row that keeps no /metrics
// pages, whose deltas rest on the runner's word (docs/verification.md); a row with pages has its
// deltas and ratios recomputed from them (ServerScrapes). On 38f126b an edited ratio verified:
// diagnostic metrics were not recomputed.
func ServerRatios(c *finding.Collector, file, base string, row contract.Row, tol policy.Tolerance) {
	deltas := map[string]float64{} // by family as metric names spell it, _total trimmed
	for k, m := range row.Metrics {
		if !serverDelta(c, file, base, k, m) {
			continue
		}
		fam := strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(m.Name, "server."), ".delta"), "_total")
		deltas[fam] += m.Value
	}
	sum := func(names []string) (float64, int) {
		v, n := 0.0, 0
		for fam, d := range deltas {
			for _, want := range names {
				if fam == strings.ReplaceAll(want, ":", "_") {
					v, n = v+d, n+1
				}
			}
		}
		return v, n
	}
	for _, r := range metric.ServerRatios {
		f, _ := metric.Lookup(r.Formula)
		num, _ := sum(r.Numerator)
		den, n := sum(r.Denominator)
		k, got := -1, contract.Metric{}
		for i, m := range row.Metrics {
			if m.Name == f.Name {
				k, got = i, m
			}
		}
		switch {
		case n == 0 || den <= 0:
			if k >= 0 {
				c.Add(file, base+finding.Pointer("metrics", k, "value"), reason.ErrMetricMismatch, "%s is %s, but no denominator family (%s) moved in the row's server deltas", f.Name, record.FmtFloat(got.Value), strings.Join(r.Denominator, ", "))
			}
		case k < 0:
			c.Add(file, base+"/metrics", reason.ErrMetricMismatch, "%s is missing (recomputed %s from the row's server deltas)", f.Name, record.FmtFloat(num/den))
		case !record.Within(got.Value, num/den, tol):
			c.Add(file, base+finding.Pointer("metrics", k, "value"), reason.ErrMetricMismatch, "%s is %s, the row's server deltas give %s / %s = %s", f.Name, record.FmtFloat(got.Value), record.FmtFloat(num), record.FmtFloat(den), record.FmtFloat(num/den))
		case got.Samples == nil || *got.Samples != int64(n):
			c.Add(file, base+finding.Pointer("metrics", k, "samples"), reason.ErrMetricMismatch, "%s has %s samples, the row's server deltas hold %d denominator families", f.Name, samplesString(got.Samples), n)
		case got.Unit != f.Unit || got.Aggregation != f.Aggregation || got.Direction != f.Direction || got.Formula != f.ID || got.Diagnostic != f.Diagnostic:
			c.Add(file, base+finding.Pointer("metrics", k), reason.ErrMetricMismatch, "%s carries %s, its formula gives %s", f.Name, IdentityOf(got), Identity{f.Unit, f.Aggregation, f.Direction, f.ID})
		}
	}
}

// serverDelta reports whether m is a server family delta (server.<family>.delta of formula
// telemetry_delta.v1), checking the identity the runner gives one (metric.ServerMetrics,
// whose unit rule this repeats): the name and the formula go together, and the unit, aggregation, direction and
// diagnostic flag are the formula's, the unit by the family's name (s for a _seconds_total or
// _seconds_sum family, bytes for _bytes_total or _bytes_sum, else count). Its value and samples
// rest on the scrapes, which the evidence does not keep.
func serverDelta(c *finding.Collector, file, base string, k int, m contract.Metric) bool {
	named := strings.HasPrefix(m.Name, "server.") && strings.HasSuffix(m.Name, ".delta")
	if !named && m.Formula != metric.TelemetryDelta {
		return false
	}
	f, _ := metric.Lookup(metric.TelemetryDelta)
	fam := strings.TrimSuffix(strings.TrimPrefix(m.Name, "server."), ".delta")
	unit := "count"
	switch {
	case strings.HasSuffix(fam, "_seconds_total") || strings.HasSuffix(fam, "_seconds_sum"):
		unit = "s"
	case strings.HasSuffix(fam, "_bytes_total") || strings.HasSuffix(fam, "_bytes_sum"):
		unit = "bytes"
	}
	switch {
	case !named:
		c.Add(file, base+finding.Pointer("metrics", k, "name"), reason.ErrMetricMismatch, "%s is of formula %s, whose metrics are named server.<family>.delta", m.Name, m.Formula)
		return false
	case m.Formula != f.ID || m.Unit != unit || m.Aggregation != f.Aggregation || m.Direction != f.Direction || m.Diagnostic != f.Diagnostic:
		c.Add(file, base+finding.Pointer("metrics", k), reason.ErrMetricMismatch, "%s carries %s (diagnostic %t), a server family delta is %s (diagnostic %t)", m.Name, IdentityOf(m), m.Diagnostic, Identity{unit, f.Aggregation, f.Direction, f.ID}, f.Diagnostic)
		return false
	}
	return true
}
