package metric

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Cache is what a row's measured successes say about the server's prefix cache
// (prefix_cache_hit_fraction.v1 and the row's cache object, docs/caching.md).
type Cache struct {
	// Successes counts the measured successes; Reporting those with cached_prompt_tokens.
	Successes, Reporting int64
	// CachedTokens sums the reporting successes' cached prompt tokens, ReportedPrompt their
	// prompt tokens. The hit fraction is CachedTokens / ReportedPrompt.
	CachedTokens, ReportedPrompt int64
}

// CacheOf reduces a row's measured requests to their cache facts (successes only).
func CacheOf(measured []Request) Cache {
	var c Cache
	for i := range measured {
		r := &measured[i]
		if !r.OK() {
			continue
		}
		c.Successes++
		if r.HasCached {
			c.Reporting++
			c.CachedTokens += r.Cached
			c.ReportedPrompt += r.Prompt
		}
	}
	return c
}

// Observed is the regime the cache facts show: hits when a reported count is positive, no_hits
// when every success reported 0 (and there was one), unreported otherwise.
func (c Cache) Observed() contract.RowCacheObserved {
	switch {
	case c.CachedTokens > 0:
		return contract.RowCacheObservedHits
	case c.Successes > 0 && c.Reporting == c.Successes:
		return contract.RowCacheObservedNoHits
	}
	return contract.RowCacheObservedUnreported
}

// Contradiction says how the observed regime contradicts the declared one, "" when it does
// not: a cold row must have no hits (its nonce makes every prefix unique), a warm row must have
// some when the server reports (its priming pass sent every measured prompt first). An
// unreported row contradicts nothing: the regime is then only declared.
func (c Cache) Contradiction(declared contract.CacheRegime) string {
	switch obs := c.Observed(); {
	case declared == contract.CacheRegimeCold && obs == contract.RowCacheObservedHits:
		return fmt.Sprintf("declared cold, but the server served %d of %d reported prompt tokens from its prefix cache", c.CachedTokens, c.ReportedPrompt)
	case declared == contract.CacheRegimeWarm && obs == contract.RowCacheObservedNoHits:
		return fmt.Sprintf("declared warm, but none of the %d measured successes had a cached prompt token: the server did not cache the priming pass", c.Successes)
	}
	return ""
}

// RowCache is the row's cache object for a declared regime ("" means natural).
func (c Cache) RowCache(declared contract.CacheRegime) contract.RowCache {
	if declared == "" {
		declared = contract.CacheRegimeNatural
	}
	rc := contract.RowCache{Declared: declared, Observed: c.Observed(), Reporting: c.Reporting, CachedPromptTokens: c.CachedTokens}
	if s := c.Contradiction(declared); s != "" {
		rc.Contradiction = &s
	}
	return rc
}
