package metric

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

func TestLedger(t *testing.T) {
	req := func(p, c, cp, cc int64) Request {
		return Request{HasUsage: true, Prompt: p, Completion: c, HasClient: true, ClientPrompt: cp, HasClientCompletion: true, ClientCompletion: cc}
	}
	noCompletion := req(9, 9, 1, 0)
	noCompletion.HasClientCompletion = false
	noUsage := req(0, 0, 5, 5)
	noUsage.HasUsage = false
	rows := []Request{req(10, 4, 10, 4), req(10, 5, 10, 4), req(7, 4, 10, 4), req(10, 2, 10, 4), noCompletion, noUsage, {Failed: true}}
	l := LedgerOf(rows)
	if want := (Ledger{Compared: 4, Mismatched: 3, LargestPrompt: -3, LargestCompletion: -2}); l != want {
		t.Fatalf("ledger %+v, want %+v", l, want)
	}
	zero := 0.5
	rt := l.RowTokens(&zero)
	if rt.MismatchFraction == nil || *rt.MismatchFraction != 0.75 || rt.Exceeded == nil {
		t.Fatalf("row tokens %+v: want fraction 0.75 over 0.5", rt)
	}
	one := 0.75
	if rt := l.RowTokens(&one); rt.Exceeded != nil {
		t.Fatalf("0.75 is not over 0.75: %s", *rt.Exceeded)
	}
	if rt := (Ledger{}).RowTokens(&zero); rt.MismatchFraction != nil || rt.Exceeded != nil {
		t.Fatalf("nothing compared: %+v", rt)
	}
}

func TestRequestTokenMismatch(t *testing.T) {
	four, zero := int64(4), int64(0)
	u := contract.Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15}
	for _, c := range []struct {
		client contract.ClientTokens
		max    *int64
		fails  bool
	}{
		{contract.ClientTokens{PromptTokens: 10, CompletionTokens: &four}, nil, false},
		{contract.ClientTokens{PromptTokens: 10, CompletionTokens: &four}, &zero, true},
		{contract.ClientTokens{PromptTokens: 9}, &zero, true},
		{contract.ClientTokens{PromptTokens: 10}, &zero, false},
		{contract.ClientTokens{PromptTokens: 6, CompletionTokens: &four}, &four, false},
	} {
		if got := RequestTokenMismatch(u, c.client, c.max) != ""; got != c.fails {
			t.Errorf("%+v max %v: fails %v, want %v", c.client, c.max, got, c.fails)
		}
	}
}
