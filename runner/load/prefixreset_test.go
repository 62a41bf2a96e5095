package load

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestColdRowResetsCache: with a declared reset endpoint, every cold row POSTs it first and
// records the answer: qualsim's /reset_prefix_cache answers 200 and counts the resets on /metrics
// (one per row); a path the server does not serve is recorded with its 404 and an error, and the
// row still runs.
func TestColdRowResetsCache(t *testing.T) {
	p := startQualsim(t, false, "--prefix-cache", "--prefix-cache-block", "4")
	c := servingCase([]int64{1, 2}, 1, 1, 4)
	c.OutputAssertions = nil
	c.CacheRegime = contract.CacheRegimeCold
	plan := Plan{CaseID: "chat-cold", Case: c, BaseURL: p.url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 3, Epoch: time.Now(), CacheResetPath: "/reset_prefix_cache"}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range res.Rows {
		rs := row.Row.Cache.Reset
		if rs == nil || rs.Path != "/reset_prefix_cache" || rs.StatusCode == nil || *rs.StatusCode != 200 || rs.Error != nil {
			t.Fatalf("row c%d: reset %+v", row.Row.Concurrency, rs)
		}
		if first := row.Records[0].TSchedNs; rs.TNs > first {
			t.Errorf("row c%d: reset at %d ns, after the row's first request at %d", row.Row.Concurrency, rs.TNs, first)
		}
	}
	resp, err := http.Get(p.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "\nqualsim_prefix_cache_resets_total 2\n") {
		t.Fatalf("qualsim counted other than 2 resets:\n%s", page)
	}

	plan.CacheResetPath = "/no_such_reset"
	plan.Epoch = time.Now()
	res, err = Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	rs := res.Rows[0].Row.Cache.Reset
	if rs == nil || rs.StatusCode == nil || *rs.StatusCode != 404 || rs.Error == nil || !strings.Contains(*rs.Error, "HTTP 404") || res.Rows[0].Row.Successes == 0 {
		t.Fatalf("unserved path: reset %+v, %d successes", rs, res.Rows[0].Row.Successes)
	}

	plan.CacheResetPath, plan.Case.CacheRegime = "/reset_prefix_cache", contract.CacheRegimeNatural
	res, err = Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if res.Rows[0].Row.Cache != nil && res.Rows[0].Row.Cache.Reset != nil {
		t.Fatal("a natural row reset the cache")
	}
}
