package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// The Responses API (POST /v1/responses), as vLLM and SGLang serve it: a request's input (a string,
// or message items whose content is a string or input_text/output_text parts) and instructions (a
// system message before it) are the chat prompt; max_output_tokens bounds the answer (reasoning
// included). A streamed answer is a sequence of named events ("event: TYPE" and "data: {...}" with
// its type and sequence_number): response.created and response.in_progress when the request holds a
// slot; for a reasoning model a reasoning output item whose response.reasoning_text.delta events
// carry the reasoning tokens; a message output item whose response.output_text.delta events carry
// the content on the timing model; the items' done events; and response.completed (finish "stop")
// or response.incomplete (max_output_tokens reached) with the whole response and its usage
// (input_tokens, output_tokens, their details, total_tokens). No [DONE] follows.

// wireResponsesRequest is the part of a Responses API body qualsim reads.
type wireResponsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
	Stream          bool            `json:"stream"`
	Seed            *int64          `json:"seed"`
	IgnoreEOS       bool            `json:"ignore_eos"`
	Tools           json.RawMessage `json:"tools"`
}

// decodeResponsesRequest reads and validates a Responses API body (the caller bounds the reader).
func decodeResponsesRequest(r io.Reader, defaultMaxTokens int) (*request, error) {
	var w wireResponsesRequest
	if err := decodeBody(r, &w); err != nil {
		return nil, err
	}
	if w.Model == "" {
		return nil, badRequest("model", "model is required")
	}
	if t := bytes.TrimSpace(w.Tools); len(t) > 0 && string(t) != "null" && string(t) != "[]" {
		return nil, badRequest("tools", "tools are not supported on qualsim's /v1/responses (use /v1/chat/completions)")
	}
	q := &request{chat: true, responses: true, model: w.Model, stream: w.Stream, includeUsage: true, ignoreEOS: w.IgnoreEOS, maxTokens: defaultMaxTokens, toolChoice: toolChoiceNone}
	if w.Seed != nil {
		q.seed = uint64(*w.Seed)
	}
	if v := w.MaxOutputTokens; v != nil {
		if *v < 1 || *v > MaxCompletionTokens {
			return nil, badRequest("max_output_tokens", "max_output_tokens %d: want 1 to %d", *v, MaxCompletionTokens)
		}
		q.maxTokens = *v
	}
	msgs, err := decodeInput(w.Input)
	if err != nil {
		return nil, err
	}
	if w.Instructions != nil {
		msgs = append([]Message{{Role: "system", Content: *w.Instructions}}, msgs...)
	}
	if len(msgs) > MaxMessages {
		return nil, badRequest("input", "input: at most %d messages, have %d", MaxMessages, len(msgs))
	}
	q.prompt = Prompt{Chat: true, Messages: msgs}
	return q, nil
}

// decodeInput reads a Responses API input: a string (one user message) or an array of message
// items.
func decodeInput(raw json.RawMessage) ([]Message, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badRequest("input", "input is required")
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, badRequest("input", "input: %v", err)
		}
		return []Message{{Role: "user", Content: s}}, nil
	}
	var items []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, badRequest("input", "input: want a string or an array of message items")
	}
	if len(items) == 0 || len(items) > MaxMessages {
		return nil, badRequest("input", "input: want 1 to %d items, have %d", MaxMessages, len(items))
	}
	msgs := make([]Message, len(items))
	for i, it := range items {
		if (it.Type != "" && it.Type != "message") || it.Role == "" {
			return nil, badRequest(fmt.Sprintf("input[%d]", i), "input[%d]: want a message item with a role (type %.40q is not supported)", i, it.Type)
		}
		text, images, err := decodeResponsesContent(it.Content)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("input[%d].content", i), "input[%d].content: %v", i, err)
		}
		msgs[i] = Message{Role: it.Role, Content: text, Images: images}
	}
	return msgs, nil
}

// decodeResponsesContent accepts a string or an array of input_text, output_text or text parts
// (joined by "\n", as chat content parts are) and input_image parts.
func decodeResponsesContent(raw json.RawMessage) (string, []string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var parts []map[string]json.RawMessage
		if err := json.Unmarshal(raw, &parts); err != nil {
			return "", nil, errors.New("want a string or an array of text and image parts")
		}
		for i, p := range parts {
			var t string
			_ = json.Unmarshal(p["type"], &t)
			switch t {
			case "input_text", "output_text", "text":
				p["type"] = json.RawMessage(`"text"`)
			case "input_image":
			default:
				return "", nil, fmt.Errorf("part %d has type %.40q; only input_text, output_text and input_image parts are supported", i, t)
			}
		}
		raw, _ = json.Marshal(parts)
	}
	return decodeContent(raw)
}

// respIDs are the ids of a Responses API answer and its output items.
func (j *job) respIDs() (resp, reasoning, message string) {
	n := j.id[len("resp_qs_"):]
	return j.id, "rs_qs_" + n, "msg_qs_" + n
}

// appendResponse appends the response object: its status, output items (with their text when
// done) and usage (nil while in progress).
func (j *job) appendResponse(b []byte, done bool) []byte {
	resp, rsID, msgID := j.respIDs()
	r, _ := j.reasoning()
	status := "in_progress"
	if done {
		status = "completed"
		if j.gen.Finish == FinishLength {
			status = "incomplete"
		}
	}
	b = append(b, `{"id":`...)
	b = appendJSONString(b, resp)
	b = append(b, `,"object":"response","created_at":`...)
	b = strconv.AppendInt(b, j.created, 10)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, status)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, j.q.model)
	if status == "incomplete" {
		b = append(b, `,"incomplete_details":{"reason":"max_output_tokens"}`...)
	}
	b = append(b, `,"output":[`...)
	if done {
		if r > 0 {
			b = appendReasoningItem(b, rsID, j.gen.span(0, r))
			b = append(b, ',')
		}
		b = appendMessageItem(b, msgID, "completed", j.gen.span(r, j.gen.Tokens), true)
	}
	b = append(b, `],"usage":`...)
	if !done || j.s.cfg.Faults.MissingUsage {
		return append(b, "null}"...)
	}
	u := j.usage(j.gen.Tokens)
	b = append(b, `{"input_tokens":`...)
	b = appendInt(b, u.prompt)
	b = append(b, `,"input_tokens_details":{"cached_tokens":`...)
	b = appendInt(b, j.cached)
	b = append(b, `},"output_tokens":`...)
	b = appendInt(b, u.completion)
	b = append(b, `,"output_tokens_details":{"reasoning_tokens":`...)
	b = appendInt(b, u.reasoning)
	b = append(b, `},"total_tokens":`...)
	b = appendInt(b, u.total)
	return append(b, "}}"...)
}

func appendReasoningItem(b []byte, id, text string) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":`...)
	b = appendJSONString(b, text)
	return append(b, `}]}`...)
}

func appendMessageItem(b []byte, id, status, text string, withContent bool) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"type":"message","status":`...)
	b = appendJSONString(b, status)
	b = append(b, `,"role":"assistant","content":[`...)
	if withContent {
		b = appendTextPart(b, text)
	}
	return append(b, "]}"...)
}

func appendTextPart(b []byte, text string) []byte {
	b = append(b, `{"type":"output_text","text":`...)
	b = appendJSONString(b, text)
	return append(b, `,"annotations":[]}`...)
}

// respEvent is a streamed Responses API event: "event: TYPE", then data holding the type, the
// sequence number and the fields fields appends (each with its leading comma).
func respEvent(b []byte, typ string, seq int, fields func([]byte) []byte) []byte {
	b = append(b, "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: {\"type\":"...)
	b = appendJSONString(b, typ)
	b = append(b, `,"sequence_number":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	if fields != nil {
		b = fields(b)
	}
	return append(b, '}')
}

// item appends `,"item_id":ID,"output_index":I` and, for content events, `,"content_index":0`.
func itemRef(b []byte, id string, index int, content bool) []byte {
	b = append(b, `,"item_id":`...)
	b = appendJSONString(b, id)
	b = append(b, `,"output_index":`...)
	b = strconv.AppendInt(b, int64(index), 10)
	if content {
		b = append(b, `,"content_index":0`...)
	}
	return b
}

// streamResponses answers a streamed Responses API request (see the file comment).
func (j *job) streamResponses(ctx context.Context, w http.ResponseWriter) error {
	s := j.s
	e, done, err := j.openStream(ctx, w)
	if err != nil {
		return err
	}
	defer done()

	_, rsID, msgID := j.respIDs()
	r, _ := j.reasoning()
	seq := 0
	emit := func(due time.Duration, kind, typ string, fields func([]byte) []byte) error {
		err := e.send(due, kind, func(b []byte) []byte { return respEvent(b, typ, seq, fields) })
		seq++
		return err
	}
	inProgress := func(b []byte) []byte {
		b = append(b, `,"response":`...)
		return j.appendResponse(b, false)
	}
	if err := emit(0, KindRole, "response.created", inProgress); err != nil {
		return err
	}
	if err := emit(0, KindRole, "response.in_progress", inProgress); err != nil {
		return err
	}
	sc := newSchedule(s.cfg.Timing, s.cfg.Seed, j.gen.hash, j.prompt-j.cached)
	per, sent := s.cfg.Timing.TokensPerEvent, 0
	var due time.Duration
	msgIndex := 0
	if r > 0 {
		msgIndex = 1
		if err := emit(0, KindPart, "response.output_item.added", func(b []byte) []byte {
			b = append(b, `,"output_index":0,"item":{"id":`...)
			b = appendJSONString(b, rsID)
			return append(b, `,"type":"reasoning","summary":[],"content":[]}`...)
		}); err != nil {
			return err
		}
	}
	openMessage := func() error {
		if err := emit(due, KindPart, "response.output_item.added", func(b []byte) []byte {
			b = append(b, `,"output_index":`...)
			b = strconv.AppendInt(b, int64(msgIndex), 10)
			b = append(b, `,"item":`...)
			return appendMessageItem(b, msgID, "in_progress", "", false)
		}); err != nil {
			return err
		}
		return emit(due, KindPart, "response.content_part.added", func(b []byte) []byte {
			b = itemRef(b, msgID, msgIndex, true)
			b = append(b, `,"part":`...)
			return appendTextPart(b, "")
		})
	}
	closeReasoning := func() error {
		text := j.gen.span(0, r)
		if err := emit(due, KindPart, "response.reasoning_text.done", func(b []byte) []byte {
			b = itemRef(b, rsID, 0, true)
			b = append(b, `,"text":`...)
			return appendJSONString(b, text)
		}); err != nil {
			return err
		}
		return emit(due, KindPart, "response.output_item.done", func(b []byte) []byte {
			b = append(b, `,"output_index":0,"item":`...)
			return appendReasoningItem(b, rsID, text)
		})
	}
	if r == 0 {
		if err := openMessage(); err != nil {
			return err
		}
	}
	for k := range j.gen.Tokens {
		due = sc.token()
		if k != 0 && k%per != 0 && k != j.gen.Tokens-1 && k != r-1 {
			continue
		}
		text, thinking := j.gen.span(sent, k+1), k < r
		sent = k + 1
		if text != "" {
			kind, typ, id, index := KindContent, "response.output_text.delta", msgID, msgIndex
			if thinking {
				kind, typ, id, index = KindReasoning, "response.reasoning_text.delta", rsID, 0
			}
			if err := emit(due, kind, typ, func(b []byte) []byte {
				b = itemRef(b, id, index, true)
				b = append(b, `,"delta":`...)
				return appendJSONString(b, text)
			}); err != nil {
				return err
			}
		}
		if r > 0 && k == r-1 {
			if err := closeReasoning(); err != nil {
				return err
			}
			if err := openMessage(); err != nil {
				return err
			}
		}
	}
	text := j.gen.span(r, j.gen.Tokens)
	for _, ev := range []struct {
		typ    string
		fields func([]byte) []byte
	}{
		{"response.output_text.done", func(b []byte) []byte {
			b = itemRef(b, msgID, msgIndex, true)
			b = append(b, `,"text":`...)
			return appendJSONString(b, text)
		}},
		{"response.content_part.done", func(b []byte) []byte {
			b = itemRef(b, msgID, msgIndex, true)
			b = append(b, `,"part":`...)
			return appendTextPart(b, text)
		}},
		{"response.output_item.done", func(b []byte) []byte {
			b = append(b, `,"output_index":`...)
			b = strconv.AppendInt(b, int64(msgIndex), 10)
			b = append(b, `,"item":`...)
			return appendMessageItem(b, msgID, "completed", text, true)
		}},
	} {
		if err := emit(due, KindPart, ev.typ, ev.fields); err != nil {
			return err
		}
	}
	final := "response.completed"
	if j.gen.Finish == FinishLength {
		final = "response.incomplete"
	}
	if err := emit(due, KindFinish, final, func(b []byte) []byte {
		b = append(b, `,"response":`...)
		return j.appendResponse(b, true)
	}); err != nil {
		return err
	}
	j.finished()
	return nil
}
