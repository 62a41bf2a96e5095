package metric

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// The order in which a row's measured requests draw the corpus (docs/metrics.md "Row size"). The
// runner plans with CorpusOrder and the verifier recomputes each record's corpus_index and cycle
// with it, so the order exists once.

// orderSalt separates the prompt-order stream from the other streams drawn from the workload seed.
const orderSalt = 0x51574B4F52444552

// CorpusOrder returns the corpus index of each of m measured requests over a corpus of n
// prompts: request k is in cycle k div n; with order sequential (or "") it asks prompt k mod n,
// with order seeded it asks position k mod n of cycle k div n's permutation: a Fisher-Yates
// shuffle of 0..n-1 (for i from n-1 down to 1, swap i with Next mod (i+1)) drawn from one
// SplitMix64 stream seeded with seed ⊕ (cycle · 0x9E3779B97F4A7C15) ⊕ 0x51574B4F52444552. The
// order depends on the seed and the cycle only, so every row of a case asks the same prompts in
// the same order. nil when n < 1 or m < 1.
func CorpusOrder(order contract.ServingCasePromptOrder, seed int64, n, m int64) []int64 {
	if n < 1 || m < 1 {
		return nil
	}
	out := make([]int64, m)
	var perm []int64
	for k := range m {
		pos := k % n
		if order != contract.ServingCasePromptOrderSeeded {
			out[k] = pos
			continue
		}
		if pos == 0 {
			perm = Permutation(seed, k/n, n)
		}
		out[k] = perm[pos]
	}
	return out
}

// Permutation is cycle's permutation of 0..n-1 (see CorpusOrder).
func Permutation(seed, cycle, n int64) []int64 {
	p := make([]int64, n)
	for i := range p {
		p[i] = int64(i)
	}
	rng := SplitMix64{State: uint64(seed) ^ uint64(cycle)*0x9E3779B97F4A7C15 ^ orderSalt}
	for i := n - 1; i >= 1; i-- {
		j := int64(rng.Next() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// WarmupPromptID is the id of a row's warmup prompt w: "warmup-" and w as four or more
// zero-padded digits. The runner names its warmups with it and the verifier checks them against
// it.
func WarmupPromptID(w int64) string { return fmt.Sprintf("warmup-%04d", w) }
