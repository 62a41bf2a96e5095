package load

import (
	"encoding/json"
	"errors"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// TokenCounter counts tokens with a case's bound tokenizer, for the client-side token ledger
// (docs/tokens.md); qualrun builds one from the tokenizer file. It must be safe for concurrent
// use.
type TokenCounter interface {
	// PromptTokens counts a prompt, given as its messages' roles and contents in order (a
	// completions prompt is one user message), as template renders it.
	PromptTokens(template contract.TokenizerTemplate, roles, contents []string) (int64, error)
	// TextTokens counts a completion's text.
	TextTokens(text string) (int64, error)
}

// promptTokens counts the prompt of a request body as it was sent (so a cold row's nonce is
// counted): its messages, or its prompt as one user message.
func promptTokens(tc TokenCounter, template contract.TokenizerTemplate, body []byte) (int64, error) {
	var w struct {
		Messages []wireMessage `json:"messages"`
		Prompt   *string       `json:"prompt"`
	}
	if err := json.Unmarshal(body, &w); err != nil {
		return 0, err
	}
	var roles, contents []string
	switch {
	case w.Prompt != nil:
		roles, contents = []string{"user"}, []string{*w.Prompt}
	case len(w.Messages) > 0:
		for _, m := range w.Messages {
			roles, contents = append(roles, m.Role), append(contents, m.Content)
		}
	default:
		return 0, errors.New("the body has neither messages nor a prompt")
	}
	return tc.PromptTokens(template, roles, contents)
}

// ledger records the client's counts beside the server's usage: the prompt as sent (counted when
// the row was planned) and the completion text of a complete response, counted here, on the
// request's goroutine after its stream closed. A measured request without another error whose
// counts differ from its usage by more than the declared max_request_difference fails with class
// token_mismatch.
func (r *runner) ledger(rec *contract.RequestRecordDoc, q *request, resp *Response) {
	ct := &contract.ClientTokens{PromptTokens: q.promptTokens}
	if resp.Complete {
		n, err := r.plan.Tokens.TextTokens(string(resp.Text))
		if err == nil {
			ct.CompletionTokens = &n
		}
	}
	rec.ClientTokens = ct
	if q.warmup || rec.Error != nil || rec.Usage == nil {
		return
	}
	if msg := metric.RequestTokenMismatch(*rec.Usage, *ct, r.plan.Case.Tokenizer.MaxRequestDifference); msg != "" {
		rec.Error = reqError(ClassTokenMismatch, "%s", msg)
	}
}
