package load

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/synth"
)

// The cache regimes of a serving case (docs/caching.md).
//
// cold: every request of the row (warmups included) gets a nonce in front of its prompt, so that
// no prefix, not even the system prompt's, is shared with another request. The nonce of request
// index i is "qk-nonce-" and 16 hex digits of the i-th draw of a SplitMix64 stream seeded with
// seed ^ (concurrency << 32) ^ repetition ^ 0x5157_4B4E_4F4E_4345; it goes, followed by a space,
// in front of the system message when the prompt has one, of the user text otherwise. The
// records keep the corpus prompt's id; the body digest covers the nonce.
//
// warm: after the row's warmups and before its measured requests, a priming pass asks each
// corpus prompt that the measured requests ask (the first min(N, requests)), once, in declared
// order, with the row's concurrency; its records are warmup records with priming true.
//
// natural (or none declared): the corpus as it is.

// nonces returns the cold nonces of a row's n requests (synth.Nonces).
func nonces(seed int64, c, rep int64, n int) []string { return synth.Nonces(seed, c, rep, n) }

// withNonce puts nonce in front of p's first message (synth.WithNonce).
func withNonce(p Prompt, nonce string) Prompt {
	w := synth.WithNonce(synth.Prompt{ID: p.ID, Text: p.Text, System: p.System}, nonce)
	p.Text, p.System = w.Text, w.System
	return p
}

// regime is the case's declared cache regime (natural when none).
func regime(c *contract.Case) contract.CacheRegime {
	if c.CacheRegime == "" {
		return contract.CacheRegimeNatural
	}
	return c.CacheRegime
}
