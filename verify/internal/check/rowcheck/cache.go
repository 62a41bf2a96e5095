package rowcheck

import (
	"slices"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// RowCache recomputes a row's cache object (docs/caching.md) from its records with package
// metric and compares it with the row's: present when the workload's case declares a cache
// regime or a measured request reported cached prompt tokens, absent otherwise (evidence from
// before it existed has neither); its declared regime is the workload's; a contradiction of the
// declared regime in a passed result is a failure (it fails its case).
func RowCache(c *finding.Collector, path, base string, row contract.Row, wc *contract.Case, status contract.Status, recs []*record.Record) {
	reqs, _ := record.MeasuredRequests(recs)
	cf := metric.CacheOf(reqs)
	declared := contract.CacheRegime("")
	if wc != nil {
		declared = wc.CacheRegime
	} else if row.Cache != nil {
		declared = row.Cache.Declared // no workload: the row's own declaration
	}
	want := declared != "" || cf.Reporting > 0
	switch {
	case row.Cache == nil && want:
		c.Add(path, base+"/cache", reason.ErrRowMismatch, "the row has no cache object, but its case declares cache_regime %q or its records report %d cached prompt tokens (%d reporting)", declared, cf.CachedTokens, cf.Reporting)
		return
	case row.Cache == nil:
		return
	case !want:
		c.Add(path, base+"/cache", reason.ErrRowMismatch, "the row has a cache object, but its case declares no cache_regime and no measured record reports cached prompt tokens")
		return
	}
	if declared == contract.CacheRegimeWarm {
		checkPriming(c, row.Records.Path, recs)
	}
	rc, got := cf.RowCache(declared), *row.Cache
	if got.Declared != rc.Declared {
		c.Add(path, base+"/cache/declared", reason.ErrRowMismatch, "declared %s, the workload's case declares %s", got.Declared, rc.Declared)
	}
	if got.Observed != rc.Observed || got.Reporting != rc.Reporting || got.CachedPromptTokens != rc.CachedPromptTokens {
		c.Add(path, base+"/cache", reason.ErrRowMismatch, "observed %s (%d reporting, %d cached prompt tokens), the records say %s (%d reporting, %d cached prompt tokens)",
			got.Observed, got.Reporting, got.CachedPromptTokens, rc.Observed, rc.Reporting, rc.CachedPromptTokens)
	}
	if (got.Contradiction == nil) != (rc.Contradiction == nil) {
		c.Add(path, base+"/cache/contradiction", reason.ErrRowMismatch, "contradiction %q, the records say %q", Deref(got.Contradiction), Deref(rc.Contradiction))
	}
	if rc.Contradiction != nil && status == contract.StatusPassed {
		c.Add(path, base+"/cache/contradiction", reason.ErrVerdictMismatch, "a passed result's row contradicts its declared cache regime: %s", *rc.Contradiction)
	}
}

// checkPriming checks a warm row's priming pass: a warmup record marked priming for every prompt
// the row's measured requests asked (the runner primes each once, before them).
func checkPriming(c *finding.Collector, path string, recs []*record.Record) {
	primed := map[string]bool{}
	var firstMeasured int64 = -1
	for _, r := range recs {
		if !r.Warmup && (firstMeasured < 0 || r.Index < firstMeasured) {
			firstMeasured = r.Index
		}
	}
	for _, r := range recs {
		if r.Priming {
			if !r.Warmup || (firstMeasured >= 0 && r.Index > firstMeasured) {
				c.Add(path, finding.Pointer(r.Line, "priming"), reason.ErrRowMismatch, "request %d is marked priming but is not a warmup sent before the measured requests", r.Index)
			}
			primed[r.PromptID] = true
		}
	}
	var missing []string
	for _, r := range recs {
		if !r.Warmup && !primed[r.PromptID] && !slices.Contains(missing, r.PromptID) {
			missing = append(missing, r.PromptID)
		}
	}
	if len(missing) > 0 {
		c.Add(path, "", reason.ErrRowMismatch, "the case declares cache_regime warm, but no priming request asked %s before the measured requests", strings.Join(missing[:min(len(missing), 4)], ", "))
	}
}
