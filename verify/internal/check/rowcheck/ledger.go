package rowcheck

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// RowLedger recomputes a row's token ledger (docs/tokens.md) from its records with package
// metric and compares it with the row's: present exactly when the workload's case binds a
// tokenizer (without the workload, when the row has one); every measured record of such a row
// carries client_tokens; a measured request's token_mismatch error agrees with the declared
// max_request_difference both ways; a row over max_mismatch_fraction in a passed result is a
// failure. The counts themselves are the runner's: qualverify does not re-tokenize (the tokenizer
// would enter the auditor's dependency closure), so a ledger proves agreement or disagreement
// as recorded, and the bound tokenizer's digest in the receipt says with what.
func RowLedger(c *finding.Collector, path, base string, row contract.Row, wc *contract.Case, status contract.Status, recs []*record.Record) {
	var tk *contract.Tokenizer
	if wc != nil {
		tk = wc.Tokenizer
	}
	want := tk != nil || (wc == nil && row.Tokens != nil)
	switch {
	case row.Tokens == nil && want:
		c.Add(path, base+"/tokens", reason.ErrRowMismatch, "the row has no token ledger, but its case binds a tokenizer")
		return
	case row.Tokens == nil:
		return
	case !want:
		c.Add(path, base+"/tokens", reason.ErrRowMismatch, "the row has a token ledger, but its case binds no tokenizer")
		return
	}
	var maxFraction *float64
	var maxDiff *int64
	if tk != nil {
		maxFraction, maxDiff = tk.MaxMismatchFraction, tk.MaxRequestDifference
	}
	reqs, measured := record.MeasuredRequests(recs)
	for _, r := range measured {
		if !r.HasClient {
			c.Add(row.Records.Path, finding.Pointer(r.Line, "client_tokens"), reason.ErrRowMismatch, "measured request %d has no client_tokens, but its case binds a tokenizer", r.Index)
			continue
		}
		if tk == nil || !r.HasUsage {
			continue
		}
		usage := contract.Usage{PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens, TotalTokens: r.PromptTokens + r.CompletionTokens}
		broken := metric.RequestTokenMismatch(usage, r.Client, maxDiff)
		switch {
		case r.ErrClass == string(contract.ErrorClassTokenMismatch) && broken == "":
			c.Add(row.Records.Path, finding.Pointer(r.Line, "error"), reason.ErrRowMismatch, "measured request %d failed with token_mismatch, but its counts are within max_request_difference", r.Index)
		case !r.Failed && broken != "":
			c.Add(row.Records.Path, finding.Pointer(r.Line, "error"), reason.ErrRowMismatch, "measured request %d succeeded, but %s", r.Index, broken)
		}
	}
	rt, got := metric.LedgerOf(reqs).RowTokens(maxFraction), *row.Tokens
	if got.Compared != rt.Compared || got.Mismatched != rt.Mismatched || got.LargestPromptDifference != rt.LargestPromptDifference || got.LargestCompletionDifference != rt.LargestCompletionDifference || !EqualFloatPtr(got.MismatchFraction, rt.MismatchFraction) {
		c.Add(path, base+"/tokens", reason.ErrRowMismatch, "ledger %d compared, %d mismatched (fraction %s), largest differences prompt %d, completion %d; the records say %d, %d (%s), %d, %d",
			got.Compared, got.Mismatched, fmtFloatPtr(got.MismatchFraction), got.LargestPromptDifference, got.LargestCompletionDifference,
			rt.Compared, rt.Mismatched, fmtFloatPtr(rt.MismatchFraction), rt.LargestPromptDifference, rt.LargestCompletionDifference)
	}
	if tk == nil {
		return
	}
	if (got.Exceeded == nil) != (rt.Exceeded == nil) {
		c.Add(path, base+"/tokens/exceeded", reason.ErrRowMismatch, "exceeded %q, the records say %q", Deref(got.Exceeded), Deref(rt.Exceeded))
	}
	if rt.Exceeded != nil && status == contract.StatusPassed {
		c.Add(path, base+"/tokens/exceeded", reason.ErrVerdictMismatch, "a passed result's row breaks its token ledger: %s", *rt.Exceeded)
	}
}

func EqualFloatPtr(a, b *float64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}
