package load

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
)

// assertion is a compiled response assertion of a serving case.
type assertion struct {
	kind     contract.AssertionOutcomeKind
	equals   string         // finish_reason
	promptID string         // exact_text: "" means every prompt
	text     []byte         // exact_text
	re       *regexp.Regexp // regex
	forbid   bool           // regex: match forbidden
	function string         // tool_call: the function a valid call must name
}

func compileAssertions(as []contract.OutputAssertion) ([]assertion, error) {
	out := make([]assertion, 0, len(as))
	for i, a := range as {
		c := assertion{kind: contract.AssertionOutcomeKind(a.Kind)}
		switch contract.ResponseAssertionKind(a.Kind) {
		case contract.ResponseAssertionKindFinishReason:
			if !slices.Contains(contract.FinishReasonAssertionEqualsValues(), a.Equals) {
				return nil, fmt.Errorf("%w: output assertion %d: finish_reason equals %q", ErrPlan, i, a.Equals)
			}
			c.equals = string(a.Equals)
		case contract.ResponseAssertionKindExactText:
			if a.Text == nil {
				return nil, fmt.Errorf("%w: output assertion %d: exact_text without text", ErrPlan, i)
			}
			c.promptID, c.text = a.PromptID, []byte(*a.Text)
		case contract.ResponseAssertionKindRegex:
			re, err := regexp.Compile(a.Pattern)
			if err != nil {
				return nil, fmt.Errorf("%w: output assertion %d: pattern: %v", ErrPlan, i, err)
			}
			if a.Match != "required" && a.Match != "forbidden" {
				return nil, fmt.Errorf("%w: output assertion %d: match %q", ErrPlan, i, a.Match)
			}
			c.re, c.forbid = re, a.Match == "forbidden"
		case contract.ResponseAssertionKindCompletionTokensEqualMaxTokens:
		case contract.ResponseAssertionKindToolCall:
			if !wire.ValidFunctionName(a.Function) {
				return nil, fmt.Errorf("%w: output assertion %d: tool_call function %q", ErrPlan, i, a.Function)
			}
			c.function = a.Function
		default:
			return nil, fmt.Errorf("%w: output assertion %d: unknown kind %q", ErrPlan, i, a.Kind)
		}
		out = append(out, c)
	}
	return out, nil
}

// check evaluates every assertion that applies to a successful response of promptID.
func check(as []assertion, promptID string, r *Response, maxTokens int64) []contract.AssertionOutcome {
	out := []contract.AssertionOutcome{}
	for _, a := range as {
		var detail string
		pass := true
		switch a.kind {
		case contract.AssertionOutcomeKindFinishReason:
			got := "none" // not a contract value: a word of the detail
			if r.FinishReason != nil {
				got = string(*r.FinishReason)
			}
			if pass = got == a.equals; !pass {
				detail = fmt.Sprintf("finish_reason %s, want %s", got, a.equals)
			}
		case contract.AssertionOutcomeKindExactText:
			if a.promptID != "" && a.promptID != promptID {
				continue
			}
			if pass = bytes.Equal(r.Text, a.text); !pass {
				detail = textDiff(r.Text, a.text)
			}
		case contract.AssertionOutcomeKindRegex:
			found := a.re.Match(r.Text)
			if pass = found != a.forbid; !pass {
				if a.forbid {
					detail = fmt.Sprintf("forbidden pattern %s matched %q", clip(a.re.String(), 128), clip(string(a.re.Find(r.Text)), 128))
				} else {
					detail = fmt.Sprintf("required pattern %s did not match", clip(a.re.String(), 200))
				}
			}
		case contract.AssertionOutcomeKindToolCall:
			pass, detail = calledValid(r, a.function)
		case contract.AssertionOutcomeKindCompletionTokensEqualMaxTokens:
			if pass = r.Usage != nil && r.Usage.CompletionTokens == maxTokens; !pass {
				got := int64(-1)
				if r.Usage != nil {
					got = r.Usage.CompletionTokens
				}
				detail = fmt.Sprintf("completion_tokens %d, max_tokens %d", got, maxTokens)
			}
		}
		o := contract.AssertionOutcome{Kind: a.kind, Passed: pass}
		if !pass {
			d := clipRunes(detail, MaxDetailRunes)
			o.Detail = &d
		}
		out = append(out, o)
		if len(out) == 64 {
			break
		}
	}
	return out
}

// textDiff says where two texts first differ.
func textDiff(got, want []byte) string {
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	for i > 0 && i < len(got) && !utf8.RuneStart(got[i]) {
		i--
	}
	excerpt := func(b []byte) string {
		if i >= len(b) {
			return "(end)"
		}
		return fmt.Sprintf("%q", clip(string(b[i:]), 48))
	}
	return fmt.Sprintf("text differs at byte %d (got %d bytes, want %d): got %s, want %s", i, len(got), len(want), excerpt(got), excerpt(want))
}

// failedAssertions summarizes the failed outcomes ("" when all passed).
func failedAssertions(os []contract.AssertionOutcome) string {
	var parts []string
	for _, o := range os {
		if !o.Passed {
			d := string(o.Kind)
			if o.Detail != nil {
				d += ": " + *o.Detail
			}
			parts = append(parts, string(d))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "assertion failed: " + strings.Join(parts, "; ")
}
