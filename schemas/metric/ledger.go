package metric

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Ledger is the client-side token ledger of a row (docs/tokens.md): the client's counts with the
// bound tokenizer against the server's usage, over the measured requests that have both a usage
// record and both client counts (failed ones included: a request failed for its token mismatch
// still counts here).
type Ledger struct {
	// Compared counts those requests, Mismatched those whose prompt or completion counts differ.
	Compared, Mismatched int64
	// LargestPrompt and LargestCompletion are server minus client of the largest magnitude (the
	// first such request in the order given on a tie of magnitude); 0 when none differ.
	LargestPrompt, LargestCompletion int64
}

// LedgerOf reduces a row's measured requests (in index order) to their ledger.
func LedgerOf(measured []Request) Ledger {
	var l Ledger
	for i := range measured {
		r := &measured[i]
		if !r.HasUsage || !r.HasClient || !r.HasClientCompletion {
			continue
		}
		l.Compared++
		dp, dc := r.Prompt-r.ClientPrompt, r.Completion-r.ClientCompletion
		if r.ClientPromptPartial {
			dp = 0 // images the client cannot count: its prompt count is not the server's
		}
		if dp != 0 || dc != 0 {
			l.Mismatched++
		}
		if abs64(dp) > abs64(l.LargestPrompt) {
			l.LargestPrompt = dp
		}
		if abs64(dc) > abs64(l.LargestCompletion) {
			l.LargestCompletion = dc
		}
	}
	return l
}

func abs64(v int64) int64 {
	if v < 0 {
		return -v
	}
	return v
}

// RequestTokenMismatch says how a request's counts break a declared max_request_difference, ""
// when they do not (or when it declares none).
func RequestTokenMismatch(usage contract.Usage, client contract.ClientTokens, maxDiff *int64) string {
	if maxDiff == nil {
		return ""
	}
	if d := usage.PromptTokens - client.PromptTokens; client.ImagesNotCounted == nil && abs64(d) > *maxDiff {
		return fmt.Sprintf("server prompt_tokens %d, client %d: they differ by %d, over max_request_difference %d", usage.PromptTokens, client.PromptTokens, d, *maxDiff)
	}
	c, ok := ClientCompletion(client)
	if !ok {
		return ""
	}
	if d := usage.CompletionTokens - c; abs64(d) > *maxDiff {
		return fmt.Sprintf("server completion_tokens %d, client %d: they differ by %d, over max_request_difference %d", usage.CompletionTokens, c, d, *maxDiff)
	}
	if usage.ReasoningTokens != nil && client.ReasoningTokens != nil {
		if d := *usage.ReasoningTokens - *client.ReasoningTokens; abs64(d) > *maxDiff {
			return fmt.Sprintf("server reasoning_tokens %d, client %d: they differ by %d, over max_request_difference %d", *usage.ReasoningTokens, *client.ReasoningTokens, d, *maxDiff)
		}
	}
	return ""
}

// ClientCompletion is the client's count of the whole completion, the one usage.completion_tokens
// states: its completion text plus its reasoning text, when it counted any (reasoning tokens are
// counted inside completion_tokens); ok is false when it counted no completion.
func ClientCompletion(client contract.ClientTokens) (int64, bool) {
	if client.CompletionTokens == nil {
		return 0, false
	}
	c := *client.CompletionTokens
	if client.ReasoningTokens != nil {
		c += *client.ReasoningTokens
	}
	return c, true
}

// RowTokens is the row's tokens object for a declared max_mismatch_fraction (nil: none).
func (l Ledger) RowTokens(maxFraction *float64) contract.RowTokens {
	rt := contract.RowTokens{Compared: l.Compared, Mismatched: l.Mismatched, LargestPromptDifference: l.LargestPrompt, LargestCompletionDifference: l.LargestCompletion}
	if l.Compared > 0 {
		f := float64(l.Mismatched) / float64(l.Compared)
		rt.MismatchFraction = &f
		if maxFraction != nil && f > *maxFraction {
			s := fmt.Sprintf("%d of %d compared requests (%.4g) have token counts that differ from the server's usage, over max_mismatch_fraction %g (largest differences, server minus client: prompt %d, completion %d)", l.Mismatched, l.Compared, f, *maxFraction, l.LargestPrompt, l.LargestCompletion)
			rt.Exceeded = &s
		}
	}
	return rt
}
