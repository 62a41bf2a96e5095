package rowcheck

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// RowReset checks a row's cache reset (docs/caching.md "Reset") against the launch recipe
// its case launches: a cold row of a recipe that declares cache_reset records the reset of that
// path, begun before the row's first request, with an error exactly when the answer was not 2xx;
// any other row records none. Without the workload's case or the recipe (not present locally)
// there is nothing to hold the row against.
func RowReset(c *finding.Collector, path, base string, row contract.Row, wc *contract.Case, recipe *contract.LaunchRecipeDoc, recs []*record.Record) {
	if wc == nil || recipe == nil || row.Cache == nil {
		return
	}
	rs := row.Cache.Reset
	want := recipe.CacheReset != nil && wc.CacheRegime == contract.CacheRegimeCold
	switch {
	case want && rs == nil:
		c.Add(path, base+"/cache", reason.ErrRowMismatch, "the launch recipe %s declares cache_reset %s, but the cold row records no reset", wc.Launch, recipe.CacheReset.Path)
		return
	case !want && rs != nil:
		c.Add(path, base+"/cache/reset", reason.ErrRowMismatch, "the row records a reset of %s, but only a cold row of a recipe that declares cache_reset is reset (recipe %s, regime %q)", rs.Path, wc.Launch, wc.CacheRegime)
		return
	case rs == nil:
		return
	}
	if rs.Path != recipe.CacheReset.Path {
		c.Add(path, base+"/cache/reset/path", reason.ErrRowMismatch, "reset %s, the launch recipe %s declares %s", rs.Path, wc.Launch, recipe.CacheReset.Path)
	}
	ok := rs.StatusCode != nil && *rs.StatusCode >= 200 && *rs.StatusCode <= 299
	if ok != (rs.Error == nil) {
		c.Add(path, base+"/cache/reset/error", reason.ErrRowMismatch, "reset status %s with error %q: an error goes with a status other than 2xx, and only there", fmtIntPtr(rs.StatusCode), Deref(rs.Error))
	}
	for _, r := range recs {
		if r.Sched < rs.TNs {
			c.Add(path, base+"/cache/reset/t_ns", reason.ErrRowMismatch, "the reset began at %d ns, after request %d of the row was scheduled (%d ns): a cold row is reset before its first request", rs.TNs, r.Index, r.Sched)
			return
		}
	}
}
