package metric

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

func okReq(prompt int64, cached *int64) Request {
	r := Request{HasSend: true, HasEnd: true, End: 1, HasUsage: true, Prompt: prompt, Completion: 1}
	if cached != nil {
		r.HasCached, r.Cached = true, *cached
	}
	return r
}

// TestCacheRegimes: the observed regime and the contradictions of each declared regime.
func TestCacheRegimes(t *testing.T) {
	failed := Request{Failed: true, ErrorClass: "timeout", HasCached: true, Cached: 99}
	for _, tc := range []struct {
		name     string
		reqs     []Request
		observed contract.RowCacheObserved
		cold     bool // cold contradicts
		warm     bool // warm contradicts
		fraction float64
		hasFrac  bool
	}{
		{"hits", []Request{okReq(10, i64(8)), okReq(10, i64(0)), failed}, contract.RowCacheObservedHits, true, false, 0.4, true},
		{"no hits", []Request{okReq(10, i64(0)), okReq(30, i64(0)), failed}, contract.RowCacheObservedNoHits, false, true, 0, true},
		{"partly unreported", []Request{okReq(10, i64(0)), okReq(10, nil)}, contract.RowCacheObservedUnreported, false, false, 0, true},
		{"unreported", []Request{okReq(10, nil)}, contract.RowCacheObservedUnreported, false, false, 0, false},
		{"unreported hit", []Request{okReq(10, nil), okReq(10, i64(4))}, contract.RowCacheObservedHits, true, false, 0.4, true},
		{"no successes", []Request{failed}, contract.RowCacheObservedUnreported, false, false, 0, false},
	} {
		c := CacheOf(tc.reqs)
		if got := c.Observed(); got != tc.observed {
			t.Errorf("%s: observed %s, want %s", tc.name, got, tc.observed)
		}
		if got := c.Contradiction(contract.CacheRegimeCold) != ""; got != tc.cold {
			t.Errorf("%s: cold contradiction %v, want %v (%q)", tc.name, got, tc.cold, c.Contradiction(contract.CacheRegimeCold))
		}
		if got := c.Contradiction(contract.CacheRegimeWarm) != ""; got != tc.warm {
			t.Errorf("%s: warm contradiction %v, want %v", tc.name, got, tc.warm)
		}
		if c.Contradiction(contract.CacheRegimeNatural) != "" {
			t.Errorf("%s: natural contradicted", tc.name)
		}
		rc := c.RowCache("")
		if rc.Declared != contract.CacheRegimeNatural || rc.Contradiction != nil {
			t.Errorf("%s: row cache %+v", tc.name, rc)
		}
		res := Row(RowSpec{Concurrency: 1, Loop: contract.RowLoopClosed}, tc.reqs)
		var got *Value
		for i := range res.Values {
			if res.Values[i].Formula == PrefixCacheHitFraction {
				got = &res.Values[i]
			}
		}
		if (got != nil) != tc.hasFrac || (got != nil && got.Value != tc.fraction) {
			t.Errorf("%s: hit fraction %+v, want %v (%v)", tc.name, got, tc.fraction, tc.hasFrac)
		}
	}
	c := CacheOf([]Request{okReq(10, i64(8))})
	if s := c.Contradiction(contract.CacheRegimeCold); !strings.Contains(s, "8 of 10") {
		t.Errorf("cold contradiction %q does not say how many", s)
	}
}
