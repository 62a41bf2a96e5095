package load

// The Responses API (POST /v1/responses), as vLLM and SGLang serve OpenAI's: a streamed answer is
// a sequence of named events ("event: TYPE" and data {"type": TYPE, ...}), not chat chunks.
// response.output_text.delta carries answer text, response.reasoning_text.delta reasoning text,
// response.function_call_arguments.delta a tool call's arguments (a token event of kind
// tool_call; the calls are not reassembled, so a Responses API case offers no tools);
// response.completed, response.incomplete and response.failed end the stream (no [DONE] follows)
// and carry the whole response, whose usage (input_tokens, output_tokens, total_tokens and their
// details) is the stream's one usage record and whose status is its finish: completed is
// "stop", incomplete for max_output_tokens "length", for content_filter "content_filter". A
// non-streamed answer is that response object. Every other event is kind other.

// Responses API event types the client reads.
const (
	respTextDelta      = "response.output_text.delta"
	respReasoningDelta = "response.reasoning_text.delta"
	respCallArgsDelta  = "response.function_call_arguments.delta"
	respCompleted      = "response.completed"
	respIncomplete     = "response.incomplete"
	respFailed         = "response.failed"
	respError          = "error" // not a contract value: the Responses API's error event
)

// parseResponsesEvent reads a streamed Responses API event: typ is its SSE event name ("" when
// the server named none; then the data's type names it, else the two must agree). The answer
// text is appended to text and the reasoning text to reasoning; terminal reports an event that
// ends the stream.
func parseResponsesEvent(typ, data, text, reasoning []byte) (c chunk, _, _ []byte, terminal bool, err error) {
	s := &scanner{b: data, responses: true}
	if s.peek() != '{' {
		return c, text, reasoning, false, s.fail("want a JSON object")
	}
	var top seen
	var kind []byte
	start, hasDelta := len(text), false
	err = s.object(func(k []byte) error {
		switch string(k) {
		case "type":
			if err := top.once(s, 1, "type"); err != nil {
				return err
			}
			if s.peek() != '"' {
				return s.fail("type is not a string")
			}
			v, err := s.str(nil)
			kind = v
			return err
		case "delta":
			if err := top.once(s, 2, "delta"); err != nil {
				return err
			}
			if s.peek() != '"' {
				return s.skip() // a delta of another shape (not a text event)
			}
			hasDelta = true
			var err error
			text, err = s.str(text) // moved to reasoning below when the type says so
			return err
		case "response":
			if err := top.once(s, 4, "response"); err != nil {
				return err
			}
			return s.responseObject(&c, nil, nil, false)
		case "message":
			v, err := s.stringMember(&top, 8, "message", true)
			if v != nil {
				c.errorText = string(v)
			}
			return err
		default:
			return s.skip()
		}
	})
	if err == nil {
		if s.ws(); s.i != len(s.b) {
			err = s.fail("trailing data after the object")
		}
	}
	if err != nil {
		return c, text[:start], reasoning, false, err
	}
	if len(kind) == 0 {
		return c, text[:start], reasoning, false, s.fail("the event has no type")
	}
	if len(typ) > 0 && string(typ) != string(kind) {
		return c, text[:start], reasoning, false, s.fail("SSE event %q carries data of type %q", clip(string(typ), 64), clip(string(kind), 64))
	}
	delta := text[start:]
	text = text[:start]
	switch string(kind) {
	case respTextDelta:
		if hasDelta && len(delta) > 0 {
			text, c.content = append(text, delta...), true
		}
	case respReasoningDelta:
		if hasDelta && len(delta) > 0 {
			if reasoning != nil {
				reasoning = append(reasoning, delta...)
			}
			c.reasoning = true
		}
	case respCallArgsDelta:
		c.toolCall = hasDelta && len(delta) > 0
	case respCompleted, respIncomplete:
		terminal = true
	case respFailed, respError:
		terminal, c.isError = true, true
		if c.errorText == "" {
			c.errorText = "(no message)"
		}
	}
	return c, text, reasoning, terminal, nil
}

// parseResponsesBody reads a whole (non-streamed) Responses API answer: its message items' text
// to text, its reasoning items' text to reasoning, its usage and status.
func parseResponsesBody(data, text, reasoning []byte) (chunk, []byte, []byte, error) {
	var c chunk
	s := &scanner{b: data, responses: true}
	if s.peek() != '{' {
		return c, text, reasoning, s.fail("want a JSON object")
	}
	err := s.responseObject(&c, &text, &reasoning, true)
	if err == nil {
		if s.ws(); s.i != len(s.b) {
			err = s.fail("trailing data after the object")
		}
	}
	return c, text, reasoning, err
}

// responseObject reads a response object: status, incomplete_details.reason and error.message
// make the finish or the error, usage the usage record; with body, output's text too (a streamed
// terminal event repeats the output the deltas carried, so it is not read again).
func (s *scanner) responseObject(c *chunk, text, reasoning *[]byte, body bool) error {
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	var m seen
	var status, reason []byte
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "id":
			v, err := s.stringMember(&m, 1, "id", body)
			c.id = string(v)
			return err
		case "status":
			var err error
			status, err = s.stringMember(&m, 2, "status", true)
			return err
		case "incomplete_details":
			if err := m.once(s, 4, "incomplete_details"); err != nil {
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			return s.object(func(k []byte) error {
				if string(k) != "reason" || s.peek() != '"' {
					return s.skip()
				}
				var err error
				reason, err = s.str(nil)
				return err
			})
		case "error":
			if err := m.once(s, 8, "error"); err != nil {
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			c.isError = true
			return s.object(func(k []byte) error {
				if string(k) != "message" || s.peek() != '"' {
					return s.skip()
				}
				v, err := s.str(nil)
				c.errorText = string(v)
				return err
			})
		case "usage": // not a contract value: the Responses API's member
			if err := m.once(s, 16, "usage"); err != nil { // not a contract value: the Responses API member
				return err
			}
			return s.usage(&c.usage)
		case "output":
			if err := m.once(s, 32, "output"); err != nil {
				return err
			}
			if !body {
				return s.skip()
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			n := 0
			return s.array(func() error {
				if n++; n > MaxOutputItems {
					return s.fail("more than %d output items", MaxOutputItems)
				}
				return s.outputItem(c, text, reasoning)
			})
		default:
			return s.skip()
		}
	})
	if err != nil {
		return err
	}
	switch string(status) {
	case "completed":
		c.finish, c.hasFinish = "stop", true
	case "incomplete":
		c.hasFinish = true
		switch string(reason) {
		case "max_output_tokens":
			c.finish = "length"
		case "content_filter":
			c.finish = "content_filter"
		default:
			c.finish = "incomplete: " + clip(string(reason), 64)
		}
	case "failed": // not a contract value: a Responses API status
		c.isError = true
		if c.errorText == "" {
			c.errorText = "the response failed"
		}
	}
	return nil
}

// outputItem reads one output item of a whole response: a message's output_text parts are answer
// text, a reasoning item's content parts reasoning text; other items (tool calls) carry none.
func (s *scanner) outputItem(c *chunk, text, reasoning *[]byte) error {
	var m seen
	var typ []byte
	start := len(*text)
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "type":
			if err := m.once(s, 1, "type"); err != nil {
				return err
			}
			if s.peek() != '"' {
				return s.fail("an output item's type is not a string")
			}
			var err error
			typ, err = s.str(nil)
			return err
		case "content": // not a contract value: the Responses API member
			if err := m.once(s, 2, "content"); err != nil { // not a contract value: the Responses API member
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			return s.array(func() error {
				return s.object(func(k []byte) error {
					if string(k) != "text" || s.peek() != '"' {
						return s.skip()
					}
					var err error
					*text, err = s.str(*text)
					return err
				})
			})
		default:
			return s.skip()
		}
	})
	if err != nil {
		return err
	}
	got := (*text)[start:]
	switch string(typ) {
	case "message":
		c.content = c.content || len(got) > 0
		return nil
	case "reasoning": // not a contract value: a Responses API output item type
		if len(got) > 0 {
			*reasoning = append(*reasoning, got...)
			c.reasoning = true
		}
	case "function_call":
		c.toolCall = true
	}
	*text = (*text)[:start]
	return nil
}
