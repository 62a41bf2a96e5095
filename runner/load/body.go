package load

import (
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/wire"
)

// The request body is package schemas/wire's, which the verifier renders too.

// wireMessage is a chat message (wire.Message).
type wireMessage = wire.Message

// wireBody is a chat or completions request body (wire.ChatBody).
type wireBody = wire.ChatBody

// Endpoint returns the path of a case's API: /v1/chat/completions, /v1/completions or
// /v1/responses.
func Endpoint(api string) string {
	switch contract.ServingCaseAPI(api) {
	case contract.ServingCaseAPICompletions:
		return "/v1/completions"
	case contract.ServingCaseAPIResponses:
		return "/v1/responses"
	}
	return "/v1/chat/completions"
}

// requestSeed is the seed sent with request index (wire.RequestSeed).
func requestSeed(s *contract.Sampling, index int64) *int64 { return wire.RequestSeed(s, index) }

// Body renders the exact request body of one request (wire.Body). A case with tools sends them
// with BodyWithTools.
func Body(c *contract.Case, model string, p Prompt, seed *int64) ([]byte, error) {
	return BodyWithTools(c, model, p, seed, nil)
}

// BodyWithTools is Body for a case that offers tools (nil: none): a chat body ends with
// "tools" (the tools file's array, compacted) and "tool_choice".
func BodyWithTools(c *contract.Case, model string, p Prompt, seed *int64, t *Tools) ([]byte, error) {
	return wire.Body(c, model, p.wire(), seed, t.offer())
}

// wire is what a body asks of p.
func (p Prompt) wire() wire.Prompt {
	return wire.Prompt{ID: p.ID, Text: p.Text, System: p.System, MaxTokens: p.MaxTokens}
}

// offer is what a chat body sends of t (nil for no tools).
func (t *Tools) offer() *wire.Tools {
	if t == nil {
		return nil
	}
	return &wire.Tools{Wire: t.wire, Choice: t.choice}
}

// encodeBody adds the case's sampling and stream options and the tools t offers (nil: none) to w
// and encodes it (wire.EncodeChat).
func encodeBody(c *contract.Case, w wireBody, t *Tools) ([]byte, error) {
	return wire.EncodeChat(c, w, t.offer())
}
