// Package synth is qualkit's prompt synthesis in words of the synthetic vocabulary: the generators
// qualkit.synthetic-words.v1 (SyntheticWords) and qualkit.shared-prefix.v1 (SharedPrefix), the
// words of a trace replay of length_unit words_per_token (AppendTraceWords), a row's warmup
// prompts (Warmups) and a cold row's nonces (Nonces). The runner sends what they write and the
// verifier writes it again to recompute each request's body digest, so the bytes are defined here
// once.
package synth
