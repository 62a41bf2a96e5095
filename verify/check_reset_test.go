package verify

import (
	"errors"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestCheckRowReset: a cold row of a recipe with cache_reset must record that reset, before its
// first request, with an error exactly when the status is not 2xx; no other row records one.
func TestCheckRowReset(t *testing.T) {
	recipe := &contract.LaunchRecipeDoc{CacheReset: &contract.CacheReset{Path: "/reset_prefix_cache"}}
	cold := &contract.Case{Launch: "workloads/launch/sim.json", CacheRegime: contract.CacheRegimeCold}
	natural := &contract.Case{Launch: "workloads/launch/sim.json"}
	s200, s404 := int64(200), int64(404)
	errText := "reset /reset_prefix_cache: HTTP 404"
	good := &contract.CacheResetOutcome{Path: "/reset_prefix_cache", TNs: 100, StatusCode: &s200}
	recs := []*record.Record{{Index: 0, Sched: 150}, {Index: 1, Sched: 400}}
	row := func(rs *contract.CacheResetOutcome) contract.Row {
		return contract.Row{Cache: &contract.RowCache{Declared: contract.CacheRegimeCold, Reset: rs}}
	}
	for _, tc := range []struct {
		name   string
		row    contract.Row
		wc     *contract.Case
		recipe *contract.LaunchRecipeDoc
		also   string
	}{
		{"reset as declared", row(good), cold, recipe, ""},
		{"a failed reset recorded", row(&contract.CacheResetOutcome{Path: "/reset_prefix_cache", TNs: 100, StatusCode: &s404, Error: &errText}), cold, recipe, ""},
		{"no recipe to hold it against", row(nil), cold, nil, ""},
		{"missing", row(nil), cold, recipe, "records no reset"},
		{"not declared", row(good), cold, &contract.LaunchRecipeDoc{}, "only a cold row"},
		{"not cold", row(good), natural, recipe, "only a cold row"},
		{"other path", row(&contract.CacheResetOutcome{Path: "/flush_cache", TNs: 100, StatusCode: &s200}), cold, recipe, "declares /reset_prefix_cache"},
		{"404 without error", row(&contract.CacheResetOutcome{Path: "/reset_prefix_cache", TNs: 100, StatusCode: &s404}), cold, recipe, "an error goes with"},
		{"after the first request", row(&contract.CacheResetOutcome{Path: "/reset_prefix_cache", TNs: 200, StatusCode: &s200}), cold, recipe, "before its first request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.RowReset(c, "cr.json", "/rows/0", tc.row, tc.wc, tc.recipe, recs)
			res := c.Result()
			if tc.also == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			if len(res.Findings) != 1 || !errors.Is(res.Findings[0], ErrRowMismatch) || !strings.Contains(res.Findings[0].Error(), tc.also) {
				t.Fatalf("want one row_mismatch mentioning %q: %v", tc.also, res.Findings)
			}
		})
	}
}
