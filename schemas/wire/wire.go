package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Message is a chat message: its content a string, or, when Parts is set, an array of parts
// (images.go encodes and decodes both).
type Message struct {
	Role    string
	Content string
	Parts   []Part
	// Images counts the image parts of a decoded message.
	Images int
	// ToolCalls are an assistant message's function calls (a session re-sending a reply that
	// called tools, docs/caching.md "Tool rounds"); ToolCallID names the call a tool message
	// answers. Both are written only when set.
	ToolCalls  []ToolCall
	ToolCallID string
}

// ToolCall is a function call of an assistant message as a chat body re-sends it.
type ToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
}

// FunctionCall is a call's function name and arguments (the argument bytes as received).
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// StreamOptions are a streamed chat or completions body's stream options.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// ChatBody is a chat or completions request body; field order is the order on the wire.
type ChatBody struct {
	Model         string         `json:"model"`
	Messages      []Message      `json:"messages,omitempty"`
	Prompt        *string        `json:"prompt,omitempty"`
	MaxTokens     int64          `json:"max_tokens"`
	Temperature   float64        `json:"temperature"`
	TopP          *float64       `json:"top_p,omitempty"`
	Seed          *int64         `json:"seed,omitempty"`
	Stop          []string       `json:"stop,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
	// Tools and ToolChoice are the case's tools (Tools), absent without.
	Tools      json.RawMessage `json:"tools,omitempty"`
	ToolChoice any             `json:"tool_choice,omitempty"`
}

// ResponsesBody is a Responses API request body; field order is the order on the wire.
type ResponsesBody struct {
	Model           string    `json:"model"`
	Instructions    *string   `json:"instructions,omitempty"`
	Input           []Message `json:"input"`
	MaxOutputTokens int64     `json:"max_output_tokens"`
	Temperature     float64   `json:"temperature"`
	TopP            *float64  `json:"top_p,omitempty"`
	Seed            *int64    `json:"seed,omitempty"`
	Stream          bool      `json:"stream"`
	IgnoreEOS       bool      `json:"ignore_eos,omitempty"`
}

// Prompt is what a body asks: a prompt's id (which names its images), text and system message
// ("" when none), and its max_tokens when positive (a trace entry's output_length) in place of
// the case's.
type Prompt struct {
	ID, Text, System string
	MaxTokens        int64
}

// maxTokens is the max_tokens p asks under case c.
func (p Prompt) maxTokens(c *contract.Case) int64 {
	if p.MaxTokens > 0 {
		return p.MaxTokens
	}
	return c.MaxTokens
}

// Tools is what a chat body sends of a case's tools: the tools file's array, compacted, and the
// tool_choice.
type Tools struct {
	Wire   json.RawMessage
	Choice any
}

// SeedLimit is one more than the largest seed a request record may carry (2^53 - 1).
const SeedLimit = 1 << 53

// RequestSeed is the seed sent with request index: (sampling.seed + index) mod 2^53, or nil when
// the case declares no sampling seed.
func RequestSeed(s *contract.Sampling, index int64) *int64 {
	if s == nil || s.Seed == nil {
		return nil
	}
	v := int64((uint64(*s.Seed) + uint64(index)) % SeedLimit)
	return &v
}

// Body renders the exact request body of one request: an OpenAI chat body
// {"model","messages":[system?,user],"max_tokens","temperature","top_p"?,"seed"?,"stop"?,
// "stream","stream_options"?,"ignore_eos"?,"tools"?,"tool_choice"?} or, for completions,
// "prompt" in place of "messages" (the system text, two newlines and the text), or a Responses
// API body (responsesBody). "stream_options":{"include_usage":true} goes with "stream":true;
// "ignore_eos" (a vLLM extension) only when true; "tools" and "tool_choice" when t is not nil
// and the API is chat. The encoding is encoding/json's with HTML escaping off, so the bytes are a
// function of the arguments alone.
func Body(c *contract.Case, model string, p Prompt, seed *int64, t *Tools) ([]byte, error) {
	if c.API == contract.ServingCaseAPIResponses {
		return responsesBody(c, model, p, seed)
	}
	w := ChatBody{Model: model, MaxTokens: p.maxTokens(c), Seed: seed, Stream: c.Stream}
	if c.API == contract.ServingCaseAPICompletions {
		text := p.Text
		if p.System != "" {
			text = p.System + "\n\n" + p.Text
		}
		w.Prompt = &text
	} else {
		if p.System != "" {
			w.Messages = append(w.Messages, Message{Role: "system", Content: p.System})
		}
		user, err := userMessage(c, p)
		if err != nil {
			return nil, err
		}
		w.Messages = append(w.Messages, user)
	}
	return EncodeChat(c, w, t)
}

// EncodeChat adds the case's sampling and stream options and the tools t offers (nil: none) to w
// and encodes it (see Body).
func EncodeChat(c *contract.Case, w ChatBody, t *Tools) ([]byte, error) {
	if t != nil && c.API == contract.ServingCaseAPIChat {
		w.Tools, w.ToolChoice = t.Wire, t.Choice
	}
	if s := c.Sampling; s != nil {
		w.Temperature, w.TopP, w.Stop, w.IgnoreEOS = s.Temperature, s.TopP, s.Stop, s.IgnoreEOS
	}
	if c.Stream {
		w.StreamOptions = &StreamOptions{IncludeUsage: true}
	}
	return EncodeJSON(w)
}

// EncodeJSON is encoding/json's encoding of v with HTML escaping off and no trailing newline, so
// that a body's bytes are a function of its fields alone.
func EncodeJSON(v any) ([]byte, error) {
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
	w := ResponsesBody{Model: model, Input: []Message{user}, MaxOutputTokens: p.maxTokens(c), Seed: seed, Stream: c.Stream}
	if p.System != "" {
		sys := p.System
		w.Instructions = &sys
	}
	if s := c.Sampling; s != nil {
		w.Temperature, w.TopP, w.IgnoreEOS = s.Temperature, s.TopP, s.IgnoreEOS
	}
	return EncodeJSON(w)
}

// OfferTools is what a chat body sends of a tools file data under the case's declaration t: the
// file's array, compacted, and the tool_choice: the choice's name (auto, none, required), or
// {"type":"function","function":{"name":...}} for choice function. It checks the JSON and the
// choice only; the runner's ParseTools checks the tools themselves.
func OfferTools(data []byte, t contract.Tools) (*Tools, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, data); err != nil {
		return nil, err
	}
	out := &Tools{Wire: buf.Bytes()}
	switch t.Choice {
	case contract.ToolsChoiceAuto, contract.ToolsChoiceNone, contract.ToolsChoiceRequired:
		out.Choice = string(t.Choice)
	case contract.ToolsChoiceFunction:
		out.Choice = namedChoice{Type: "function", Function: functionName{t.Function}}
	default:
		return nil, fmt.Errorf("choice %q: want auto, none, required or function", t.Choice)
	}
	return out, nil
}

// namedChoice is a tool_choice naming one function.
type namedChoice struct {
	Type     string       `json:"type"`
	Function functionName `json:"function"`
}

type functionName struct {
	Name string `json:"name"`
}
