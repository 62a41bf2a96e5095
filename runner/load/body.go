package load

import (
	"bytes"
	"encoding/json"

	"github.com/qualkit/qualkit/schemas/contract"
)

// wireMessage is a chat message: its content a string, or, when Parts is set, an array of parts
// (images.go encodes and decodes both).
type wireMessage struct {
	Role    string
	Content string
	Parts   []wirePart
	// Images counts the image parts of a decoded message.
	Images int
}

type wireStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// wireBody is the request body; field order is the order on the wire.
type wireBody struct {
	Model         string             `json:"model"`
	Messages      []wireMessage      `json:"messages,omitempty"`
	Prompt        *string            `json:"prompt,omitempty"`
	MaxTokens     int64              `json:"max_tokens"`
	Temperature   float64            `json:"temperature"`
	TopP          *float64           `json:"top_p,omitempty"`
	Seed          *int64             `json:"seed,omitempty"`
	Stop          []string           `json:"stop,omitempty"`
	Stream        bool               `json:"stream"`
	StreamOptions *wireStreamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool               `json:"ignore_eos,omitempty"`
	// Tools and ToolChoice are the case's tools (toolcall.go), absent without.
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice any             `json:"tool_choice,omitempty"`
}

// wireResponsesBody is a Responses API request body; field order is the order on the wire.
type wireResponsesBody struct {
	Model           string        `json:"model"`
	Instructions    *string       `json:"instructions,omitempty"`
	Input           []wireMessage `json:"input"`
	MaxOutputTokens int64         `json:"max_output_tokens"`
	Temperature     float64       `json:"temperature"`
	TopP            *float64      `json:"top_p,omitempty"`
	Seed            *int64        `json:"seed,omitempty"`
	Stream          bool          `json:"stream"`
	IgnoreEOS       bool          `json:"ignore_eos,omitempty"`
}

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

// requestSeed is the seed sent with request index: (sampling.seed + index) mod 2^53, or nil when
// the case declares no sampling seed.
func requestSeed(s *contract.Sampling, index int64) *int64 {
	if s == nil || s.Seed == nil {
		return nil
	}
	v := int64((uint64(*s.Seed) + uint64(index)) % seedLimit)
	return &v
}

// Body renders the exact request body of one request: an OpenAI chat body
// {"model","messages":[system?,user],"max_tokens","temperature","top_p"?,"seed"?,"stop"?,
// "stream","stream_options"?,"ignore_eos"?} or, for completions, "prompt" in place of
// "messages". "stream_options":{"include_usage":true} goes with "stream":true; "ignore_eos" (a
// vLLM extension) only when true. The encoding is encoding/json's with HTML escaping off, so the
// bytes are a function of the arguments alone. A case with tools sends them with BodyWithTools.
func Body(c *contract.Case, model string, p Prompt, seed *int64) ([]byte, error) {
	return BodyWithTools(c, model, p, seed, nil)
}

// BodyWithTools is Body for a case that offers tools (nil: none): a chat body ends with
// "tools" (the tools file's array, compacted) and "tool_choice".
func BodyWithTools(c *contract.Case, model string, p Prompt, seed *int64, t *Tools) ([]byte, error) {
	if c.API == contract.ServingCaseAPIResponses {
		return responsesBody(c, model, p, seed)
	}
	w := wireBody{Model: model, MaxTokens: p.maxTokens(c), Seed: seed, Stream: c.Stream}
	if c.API == contract.ServingCaseAPICompletions {
		text := p.Text
		if p.System != "" {
			text = p.System + "\n\n" + p.Text
		}
		w.Prompt = &text
	} else {
		if p.System != "" {
			w.Messages = append(w.Messages, wireMessage{Role: "system", Content: p.System})
		}
		user, err := userMessage(c, p)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, user)
	}
	return encodeBody(c, w, t)
}

// encodeBody adds the case's sampling and stream options and the tools t offers (nil: none) to w
// and encodes it (see Body).
func encodeBody(c *contract.Case, w wireBody, t *Tools) ([]byte, error) {
	if t != nil && c.API == contract.ServingCaseAPIChat {
		w.Tools, w.ToolChoice = t.wire, t.choice
	}
	if s := c.Sampling; s != nil {
		w.Temperature, w.TopP, w.Stop, w.IgnoreEOS = s.Temperature, s.TopP, s.Stop, s.IgnoreEOS
	}
	if c.Stream {
		w.StreamOptions = &wireStreamOptions{IncludeUsage: true}
	}
	return encodeJSON(w)
}

// encodeJSON is encoding/json's encoding of v with HTML escaping off and no trailing newline, so
// that a body's bytes are a function of its fields alone.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// responsesBody renders a Responses API body {"model","instructions"?,"input":[{"role":"user",
// "content"}],"max_output_tokens","temperature","top_p"?,"seed"?,"stream","ignore_eos"?}: the
// system text as instructions (servers put it before the input as a system message), max_tokens
// as max_output_tokens; the terminal response event always carries usage, so there are no stream
// options. seed and ignore_eos are vLLM's extensions, as on chat.
func responsesBody(c *contract.Case, model string, p Prompt, seed *int64) ([]byte, error) {
	user, err := userMessage(c, p)
	if err != nil {
		return nil, err
	}
	w := wireResponsesBody{Model: model, Input: []wireMessage{user}, MaxOutputTokens: p.maxTokens(c), Seed: seed, Stream: c.Stream}
	if p.System != "" {
		sys := p.System
		w.Instructions = &sys
	}
	if s := c.Sampling; s != nil {
		w.Temperature, w.TopP, w.IgnoreEOS = s.Temperature, s.TopP, s.IgnoreEOS
	}
	return encodeJSON(w)
}
