package rowcheck

import (
	"errors"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestRequestExtrasAssertions: a request's assertion kinds are the case's declared ones in order
// for a measured success or assertion failure (an exact_text one only for its prompt), none for a
// warmup or another failure; a record that differs is a row_mismatch with the kinds it should carry.
func TestRequestExtrasAssertions(t *testing.T) {
	k := record.AssertionKinds
	const (
		fin = contract.AssertionOutcomeKindFinishReason
		ex  = contract.AssertionOutcomeKindExactText
		re  = contract.AssertionOutcomeKindRegex
	)
	perPrompt := []contract.OutputAssertion{{Kind: contract.ResponseAssertionKindFinishReason},
		{Kind: contract.ResponseAssertionKindExactText, PromptID: "p-a"}, {Kind: contract.ResponseAssertionKindRegex}}
	common := []contract.OutputAssertion{{Kind: contract.ResponseAssertionKindFinishReason},
		{Kind: contract.ResponseAssertionKindExactText}, {Kind: contract.ResponseAssertionKindRegex}}
	measured := func(prompt string, kinds ...contract.AssertionOutcomeKind) record.Record {
		return record.Record{PromptID: prompt, Status: 200, HasStatus: true, Assertions: k(kinds)}
	}
	failed := func(class contract.ErrorClass, kinds ...contract.AssertionOutcomeKind) record.Record {
		return record.Record{PromptID: "p-a", Failed: true, ErrClass: string(class), Assertions: k(kinds)}
	}
	warmup := func(kinds ...contract.AssertionOutcomeKind) record.Record {
		return record.Record{PromptID: "p-a", Warmup: true, Status: 200, HasStatus: true, Assertions: k(kinds)}
	}
	cases := []struct {
		name     string
		declared []contract.OutputAssertion
		rec      record.Record
		msg      string // "" for none
	}{
		{"its prompt's exact_text", perPrompt, measured("p-a", fin, ex, re), ""},
		{"another prompt's exact_text left out", perPrompt, measured("p-b", fin, re), ""},
		{"another prompt's exact_text carried", perPrompt, measured("p-b", fin, ex, re),
			"row disagrees with its records: request 0 records 3 assertions, the case's declared assertions give it 2 [finish_reason regex]"},
		{"its prompt's exact_text missing", perPrompt, measured("p-a", fin, re),
			"row disagrees with its records: request 0 records 2 assertions, the case's declared assertions give it 3 [finish_reason exact_text regex]"},
		{"an assertion failure carries them", perPrompt, failed(contract.ErrorClassAssertion, fin, ex, re), ""},
		{"another failure carries none", perPrompt, failed(contract.ErrorClassTimeout), ""},
		{"another failure with some", perPrompt, failed(contract.ErrorClassTimeout, fin),
			"row disagrees with its records: request 0 records 1 assertions, the case's declared assertions give it 0 []"},
		{"a warmup carries none", perPrompt, warmup(), ""},
		{"a warmup with some", common, warmup(fin),
			"row disagrees with its records: request 0 records 1 assertions, the case's declared assertions give it 0 []"},
		{"every prompt's exact_text", common, measured("p-b", fin, ex, re), ""},
		{"reordered", common, measured("p-b", re, ex, fin),
			"row disagrees with its records: request 0 records 3 assertions, the case's declared assertions give it 3 [finish_reason exact_text regex]"},
		{"none declared", nil, measured("p-b"), ""},
	}
	for _, tc := range cases {
		c := &finding.Collector{}
		r := tc.rec
		requestExtras(c, contract.Row{}, &contract.Case{OutputAssertions: tc.declared}, []*record.Record{&r})
		switch {
		case tc.msg == "" && len(c.Out) != 0:
			t.Errorf("%s: %v", tc.name, c.Out)
		case tc.msg != "" && (len(c.Out) != 1 || !errors.Is(c.Out[0].Err, reason.ErrRowMismatch) || c.Out[0].Err.Error() != tc.msg):
			t.Errorf("%s: %v, want %q", tc.name, c.Out, tc.msg)
		}
	}
}
