package sim

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// apiError is an OpenAI-style error answer.
type apiError struct {
	status  int
	typ     string // "invalid_request_error", "rate_limit_error", "server_error"
	param   string
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{status: 400, typ: "invalid_request_error", param: param, message: fmt.Sprintf(format, args...)}
}

// body renders the error as {"error":{...}}.
func (e *apiError) body() []byte {
	var b []byte
	b = append(b, `{"error":{"message":`...)
	b = appendJSONString(b, e.message)
	b = append(b, `,"type":`...)
	b = appendJSONString(b, e.typ)
	b = append(b, `,"param":`...)
	b = appendNullableString(b, e.param)
	b = append(b, `,"code":`...)
	b = appendNullableString(b, e.code)
	b = append(b, "}}\n"...)
	return b
}

func appendNullableString(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendJSONString(b, s)
}

// wireRequest is the part of an OpenAI completion or chat completion body qualsim reads; other
// fields (temperature, top_p, ...) are accepted and ignored.
type wireRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []wireMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	Stop      json.RawMessage `json:"stop"`
	Seed      *int64          `json:"seed"`
	IgnoreEOS bool            `json:"ignore_eos"`
	N         *int            `json:"n"`
	// Tools and ToolChoice are read for a tool-calling model (Config.ToolCalls).
	Tools      json.RawMessage `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	// ToolCalls (assistant) and ToolCallID (tool) are checked by checkToolMessages.
	ToolCalls  json.RawMessage `json:"tool_calls"`
	ToolCallID *string         `json:"tool_call_id"`
}

// request is a decoded, validated completion request.
type request struct {
	chat            bool
	responses       bool // the Responses API (chat prompt, named events)
	model           string
	prompt          Prompt
	maxTokens       int
	stream          bool
	includeUsage    bool
	continuousUsage bool
	stop            []string
	seed            uint64
	ignoreEOS       bool
	tools           []tool
	toolChoice      string // a function's name, "" for auto or required, "none"
	toolRounds      int    // assistant messages with tool calls after the last user message
}

// decodeRequest reads and validates a body of at most MaxRequestBodyBytes (the caller bounds the
// reader) for the chat or the completions endpoint.
func decodeRequest(r io.Reader, chat bool, defaultMaxTokens int) (*request, error) {
	var w wireRequest
	if err := decodeBody(r, &w); err != nil {
		return nil, err
	}
	q := &request{chat: chat, model: w.Model, stream: w.Stream, ignoreEOS: w.IgnoreEOS}
	if w.Model == "" {
		return nil, badRequest("model", "model is required")
	}
	if w.N != nil && *w.N != 1 {
		return nil, badRequest("n", "n must be 1 (qualsim returns one choice)")
	}
	if w.StreamOptions != nil {
		if !w.Stream {
			return nil, badRequest("stream_options", "stream_options needs stream: true")
		}
		q.includeUsage = w.StreamOptions.IncludeUsage
		q.continuousUsage = w.StreamOptions.ContinuousUsageStats
	}
	if w.Seed != nil {
		q.seed = uint64(*w.Seed)
	}
	q.maxTokens = defaultMaxTokens
	for _, mt := range []struct {
		name string
		v    *int
	}{{"max_completion_tokens", w.MaxCompletionTokens}, {"max_tokens", w.MaxTokens}} {
		if mt.v == nil {
			continue
		}
		if *mt.v < 1 || *mt.v > MaxCompletionTokens {
			return nil, badRequest(mt.name, "%s %d: want 1 to %d", mt.name, *mt.v, MaxCompletionTokens)
		}
		q.maxTokens = *mt.v
	}
	stop, err := decodeStop(w.Stop)
	if err != nil {
		return nil, err
	}
	q.stop = stop
	if chat {
		if q.tools, q.toolChoice, err = decodeTools(w.Tools, w.ToolChoice); err != nil {
			return nil, err
		}
		if w.Prompt != nil {
			return nil, badRequest("prompt", "chat completions take messages, not prompt")
		}
		if len(w.Messages) == 0 || len(w.Messages) > MaxMessages {
			return nil, badRequest("messages", "messages: want 1 to %d messages, have %d", MaxMessages, len(w.Messages))
		}
		if q.toolRounds, err = checkToolMessages(w.Messages); err != nil {
			return nil, err
		}
		q.prompt = Prompt{Chat: true, Messages: make([]Message, len(w.Messages))}
		for i, m := range w.Messages {
			if m.Role == "" {
				return nil, badRequest(fmt.Sprintf("messages[%d].role", i), "messages[%d]: role is required", i)
			}
			text, images, err := decodeContent(m.Content)
			if err != nil {
				return nil, badRequest(fmt.Sprintf("messages[%d].content", i), "messages[%d].content: %v", i, err)
			}
			q.prompt.Messages[i] = Message{Role: m.Role, Content: text, Images: images}
		}
		return q, nil
	}
	if w.Messages != nil {
		return nil, badRequest("messages", "completions take prompt, not messages")
	}
	text, err := decodePrompt(w.Prompt)
	if err != nil {
		return nil, badRequest("prompt", "prompt: %v", err)
	}
	q.prompt = Prompt{Text: text}
	return q, nil
}

// decodeBody decodes one JSON object from a bounded body into v: 413 past the bound, 400 for
// anything that is not one object.
func decodeBody(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return &apiError{status: 413, typ: "invalid_request_error", message: fmt.Sprintf("request body larger than %d bytes", MaxRequestBodyBytes)}
		}
		return badRequest("", "request body is not a JSON object: %v", err)
	}
	if dec.More() {
		return badRequest("", "trailing data after the request object")
	}
	return nil
}

// decodePrompt accepts a string or an array of exactly one string.
func decodePrompt(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", errors.New("is required")
	}
	var s string
	if raw[0] == '"' {
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var arr []string
	if err := json.Unmarshal(raw, &arr); err != nil {
		return "", errors.New("want a string or an array of one string (token arrays are not supported)")
	}
	if len(arr) != 1 {
		return "", fmt.Errorf("want one prompt, have %d (qualsim returns one choice)", len(arr))
	}
	return arr[0], nil
}

// decodeContent accepts a string, null, or an array of {"type":"text","text":...} parts (joined
// by "\n") and image parts ({"type":"image_url","image_url":{"url":DATA_URL}}); it returns the text
// and the digests of the images, in order.
func decodeContent(raw json.RawMessage) (string, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil, nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, nil, err
	}
	var parts []struct {
		Type     string          `json:"type"`
		Text     string          `json:"text"`
		ImageURL json.RawMessage `json:"image_url"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", nil, errors.New("want a string or an array of text and image parts")
	}
	texts := make([]string, 0, len(parts))
	var images []string
	for i, p := range parts {
		switch p.Type {
		case "text":
			texts = append(texts, p.Text)
		case "image_url", "input_image":
			if len(images) == MaxImages {
				return "", nil, fmt.Errorf("part %d: more than %d images", i, MaxImages)
			}
			d, err := decodeImage(p.ImageURL)
			if err != nil {
				return "", nil, fmt.Errorf("part %d: %w", i, err)
			}
			images = append(images, d)
		default:
			return "", nil, fmt.Errorf("part %d has type %.40q; only text and image_url parts are supported", i, p.Type)
		}
	}
	return strings.Join(texts, "\n"), images, nil
}

// decodeImage reads an image part's URL ({"url": ...} on chat, a bare string on the Responses
// API): a base64 data URL of an image/* media type, never fetched from anywhere. It returns the
// sha256 hex digest of the decoded bytes.
func decodeImage(raw json.RawMessage) (string, error) {
	var url string
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' {
		var u struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal(raw, &u); err != nil {
			return "", fmt.Errorf("image_url: %v", err)
		}
		url = u.URL
	} else if err := json.Unmarshal(raw, &url); err != nil {
		return "", errors.New("image_url: want {\"url\": DATA_URL} or a data URL")
	}
	meta, data, ok := strings.Cut(url, ",")
	media, isB64 := strings.CutSuffix(strings.TrimPrefix(meta, "data:"), ";base64")
	if !ok || !strings.HasPrefix(meta, "data:") || !isB64 || !strings.HasPrefix(media, "image/") {
		return "", errors.New("image_url: want a base64 data URL of an image (data:image/...;base64,...): qualsim fetches nothing")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(b) == 0 {
		return "", errors.New("image_url: the data URL's payload is not non-empty standard base64")
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// decodeStop accepts null, a string or an array of strings.
func decodeStop(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var stops []string
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("stop", "stop: %v", err)
		}
		stops = []string{s}
	} else if err := json.Unmarshal(raw, &stops); err != nil {
		return nil, badRequest("stop", "stop: want a string or an array of strings")
	}
	if len(stops) > MaxStopStrings {
		return nil, badRequest("stop", "stop: at most %d strings, have %d", MaxStopStrings, len(stops))
	}
	for _, s := range stops {
		if len(s) > MaxStopBytes {
			return nil, badRequest("stop", "stop: a string is longer than %d bytes", MaxStopBytes)
		}
	}
	return stops, nil
}
