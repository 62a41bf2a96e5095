package load

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/qualkit/qualkit/schemas/jsonscan"
)

// The completion JSON an event (or a non-streamed body) carries is read by a small validating
// scanner rather than encoding/json: one pass, no reflection, no allocation on the common path,
// and strict where encoding/json is lenient (invalid UTF-8 and lone surrogate escapes are errors,
// not U+FFFD; a repeated key that qualkit reads is an error, not "last wins"). FuzzChunk checks
// it against encoding/json.

// chunkShape says where the completion text is.
type chunkShape int

const (
	shapeChatChunk      chunkShape = iota // choices[0].delta.content (streamed chat)
	shapeTextChunk                        // choices[0].text (streamed completions)
	shapeChatBody                         // choices[0].message.content (non-streamed chat)
	shapeTextBody                         // choices[0].text (non-streamed completions)
	shapeResponsesEvent                   // named Responses API events (responses.go)
	shapeResponsesBody                    // a whole Responses API response object
)

// usageCounts is a usage object as sent.
type usageCounts struct {
	present          bool // a non-null usage object
	prompt, compl    int64
	total            int64
	hasP, hasC, hasT bool
	bad              string // why a count is unusable ("" when all are non-negative integers)
	// cached is prompt_tokens_details.cached_tokens, when hasCached (a non-negative integer).
	cached    int64
	hasCached bool
	// reasoning is completion_tokens_details.reasoning_tokens, when hasReasoning (a non-negative
	// integer).
	reasoning    int64
	hasReasoning bool
}

// chunk is what one completion object says.
type chunk struct {
	content   bool   // carries completion content: non-empty text
	reasoning bool   // carries non-empty reasoning (reasoning_content or reasoning)
	toolCall  bool   // carries a tool call delta (a non-empty tool_calls array)
	finish    string // finish_reason, when hasFinish
	hasFinish bool   // a non-null finish_reason
	usage     usageCounts
	choices   int    // elements of choices (0 for a usage-only chunk)
	errorText string // an in-stream error object's message ("" when none)
	isError   bool
	id        string // the object's id (read only when asked)
}

// placeholderUsage reports an all-zero usage object on a chunk that carries a choice. ollama
// (0.17) sends one on every streamed /v1/completions chunk when include_usage is on, where OpenAI
// sends "usage":null, and the real counts on a final chunk with empty choices. Such an object
// counts nothing: it is not a usage record. A real request always has prompt tokens, so a usage
// record proper is never all zero.
func (c *chunk) placeholderUsage() bool {
	u := c.usage
	return u.present && c.choices > 0 && u.bad == "" && u.hasP && u.hasC && u.hasT && u.prompt == 0 && u.compl == 0 && u.total == 0
}

// jsonError is a JSON syntax or shape error at a byte offset.
type jsonError struct {
	off int
	msg string
}

func (e *jsonError) Error() string {
	return fmt.Sprintf("invalid completion JSON at byte %d: %s", e.off, e.msg)
}

type scanner struct {
	b     []byte
	i     int
	depth int
	kbuf  []byte // decoded keys that had escapes (rare)
	// reason, when set, collects the decoded reasoning text of chat deltas and messages.
	reason *[]byte
	// calls, when set, collects the tool calls of chat deltas and messages (toolcall.go).
	calls *callSet
	// responses reads usage with the Responses API's names (input_tokens, output_tokens and
	// their details) in place of the chat ones.
	responses bool
}

func (s *scanner) fail(format string, args ...any) error {
	return &jsonError{off: s.i, msg: fmt.Sprintf(format, args...)}
}

func (s *scanner) ws() { s.i = jsonscan.Space(s.b, s.i) }

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.fail("unexpected end, want %q", c)
		}
		return s.fail("unexpected %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// literal consumes true, false or null.
func (s *scanner) literal(word string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		return s.fail("invalid literal")
	}
	s.i += len(word)
	return nil
}

// isNull consumes a null literal if one is next.
func (s *scanner) isNull() (bool, error) {
	if s.peek() != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

// str consumes a string and appends its decoded value to dst.
func (s *scanner) str(dst []byte) ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return dst, err
	}
	if j := jsonscan.Plain(s.b, s.i); j < len(s.b) && s.b[j] == '"' { // the common case
		dst = append(dst, s.b[s.i:j]...)
		s.i = j + 1
		return dst, nil
	}
	dst, end, p := jsonscan.AppendString(dst, s.b, s.i)
	s.i = end
	if p != jsonscan.OK {
		return dst, s.stringProblem(p)
	}
	return dst, nil
}

// stringProblem is the error of a string the scanner core found malformed at s.i.
func (s *scanner) stringProblem(p jsonscan.Problem) error {
	switch p {
	case jsonscan.Unterminated:
		if s.i < len(s.b) { // at a backslash
			return s.fail("unterminated escape")
		}
		return s.fail("unterminated string")
	case jsonscan.Control:
		return s.fail("control character in string")
	case jsonscan.InvalidUTF8:
		return s.fail("invalid UTF-8 in string")
	case jsonscan.InvalidEscape:
		return s.fail("invalid escape \\%c", s.b[s.i+1])
	case jsonscan.ShortHex:
		return s.fail("short \\u escape")
	case jsonscan.InvalidHex:
		return s.fail("invalid \\u escape")
	}
	return s.fail("lone surrogate escape")
}

// rawKey consumes an object key and returns its bytes: a slice of the input when the key has no
// escapes, else its decoded value (valid until the next key).
func (s *scanner) rawKey() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.fail("want an object key")
	}
	if j := jsonscan.Plain(s.b, s.i+1); j < len(s.b) && s.b[j] == '"' {
		k := s.b[s.i+1 : j]
		s.i = j + 1
		return k, nil
	}
	var err error
	s.kbuf, err = s.str(s.kbuf[:0])
	return s.kbuf, err
}

// number consumes a JSON number and returns its literal.
func (s *scanner) number() ([]byte, error) {
	start := s.i
	end, _, _, p := jsonscan.Number(s.b, s.i)
	if p != jsonscan.OK {
		s.i = end
		return nil, s.fail("invalid number")
	}
	s.i = end
	return s.b[start:end], nil
}

// skip consumes any value, validating it.
func (s *scanner) skip() error {
	switch s.peek() {
	case '{':
		return s.object(func(_ []byte) error { return s.skip() })
	case '[':
		return s.array(func() error { return s.skip() })
	case '"':
		return s.strDiscard() // validated, not kept
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	case 0:
		return s.fail("unexpected end, want a value")
	default:
		_, err := s.number()
		return err
	}
}

// strDiscard validates a string (its opening quote is next) without copying it.
func (s *scanner) strDiscard() error {
	if j := jsonscan.Plain(s.b, s.i+1); j < len(s.b) && s.b[j] == '"' { // the common case
		s.i = j + 1
		return nil
	}
	end, _, p := jsonscan.ValidString(s.b, s.i+1)
	s.i = end
	if p != jsonscan.OK {
		return s.stringProblem(p)
	}
	return nil
}

// nonEmptyString consumes a string or null and reports whether it was a non-empty string.
func (s *scanner) nonEmptyString() (bool, error) {
	if null, err := s.isNull(); null || err != nil {
		return false, err
	}
	if s.peek() != '"' {
		return false, s.fail("want a string or null")
	}
	start := s.i
	if err := s.strDiscard(); err != nil {
		return false, err
	}
	return s.i-start > 2, nil
}

func (s *scanner) enter() error {
	s.depth++
	if s.depth > MaxJSONDepth {
		return s.fail("nesting deeper than %d", MaxJSONDepth)
	}
	return nil
}

// object consumes an object, calling member after each key (the value is next).
func (s *scanner) object(member func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		s.depth--
		return nil
	}
	for {
		k, err := s.rawKey()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := member(k); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return s.fail("want ',' or '}' in object")
		}
	}
}

// array consumes an array, calling elem before each element.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if err := s.enter(); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		s.depth--
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return s.fail("want ',' or ']' in array")
		}
	}
}

// stringMember reads a member seen at most once (bit of m): its decoded value when want and it
// is a string (nil otherwise: the value is skipped).
func (s *scanner) stringMember(m *seen, bit seen, key string, want bool) ([]byte, error) {
	if err := m.once(s, bit, key); err != nil {
		return nil, err
	}
	if !want || s.peek() != '"' {
		return nil, s.skip()
	}
	return s.str([]byte{})
}

// seen guards against a repeated key among those qualkit reads.
type seen uint32

func (m *seen) once(s *scanner, bit seen, key string) error {
	if *m&bit != 0 {
		return s.fail("key %q repeated", key)
	}
	*m |= bit
	return nil
}

// parseChunk reads a completion object from data, appending the completion text (never
// reasoning or tool calls) to text. wantID asks for the object's id.
func parseChunk(data []byte, shape chunkShape, text []byte, wantID bool) (chunk, []byte, error) {
	c, text, _, err := parseChunkReasoning(data, shape, text, nil, wantID)
	return c, text, err
}

// parseChunkReasoning is parseChunk that also appends the chunk's reasoning text (chat
// reasoning_content or reasoning) to reasoning, when that is not nil, and returns it.
func parseChunkReasoning(data []byte, shape chunkShape, text, reasoning []byte, wantID bool) (chunk, []byte, []byte, error) {
	return parseChunkCalls(data, shape, text, reasoning, nil, wantID)
}

// parseChunkCalls is parseChunkReasoning that also reassembles the chunk's tool calls into
// calls, when that is not nil (toolcall.go).
func parseChunkCalls(data []byte, shape chunkShape, text, reasoning []byte, calls *callSet, wantID bool) (chunk, []byte, []byte, error) {
	var reason *[]byte
	if reasoning != nil {
		reason = &reasoning
	}
	c, text, err := scanChunk(&scanner{b: data, reason: reason, calls: calls}, shape, text, wantID)
	return c, text, reasoning, err
}

func scanChunk(s *scanner, shape chunkShape, text []byte, wantID bool) (chunk, []byte, error) {
	var c chunk
	if s.peek() != '{' {
		return c, text, s.fail("want a JSON object")
	}
	var top seen
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "id":
			v, err := s.stringMember(&top, 1, "id", wantID)
			c.id = string(v)
			return err
		case "choices":
			if err := top.once(s, 2, "choices"); err != nil {
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			n := 0
			err := s.array(func() error {
				n++
				if n > 1 {
					return s.fail("more than one choice (only n=1 is supported)")
				}
				var err error
				text, err = s.choice(&c, shape, text)
				return err
			})
			c.choices = n
			return err
		case "usage": // not a contract value: OpenAI chunk key
			if err := top.once(s, 4, "usage"); err != nil { // not a contract value: OpenAI chunk key
				return err
			}
			return s.usage(&c.usage)
		case "error":
			if err := top.once(s, 8, "error"); err != nil {
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			c.isError = true
			if s.peek() != '{' {
				return s.skip()
			}
			return s.object(func(k []byte) error {
				if string(k) == "message" && s.peek() == '"' {
					v, err := s.str(nil)
					c.errorText = string(v)
					return err
				}
				return s.skip()
			})
		case "object":
			if err := top.once(s, 16, "object"); err != nil {
				return err
			}
			if s.peek() != '"' {
				return s.skip()
			}
			start := s.i
			if err := s.strDiscard(); err != nil {
				return err
			}
			if string(s.b[start:s.i]) == `"error"` {
				c.isError = true
			}
			return nil
		case "message":
			// vLLM's in-stream error is {"object":"error","message":...}.
			v, err := s.stringMember(&top, 32, "message", true)
			if v != nil {
				c.errorText = string(v)
			}
			return err
		default:
			return s.skip()
		}
	})
	if err != nil {
		return c, text, err
	}
	s.ws()
	if s.i != len(s.b) {
		return c, text, s.fail("trailing data after the object")
	}
	if c.isError && c.errorText == "" {
		c.errorText = "(no message)"
	}
	if !c.isError {
		c.errorText = ""
	}
	return c, text, nil
}

// choice reads one element of choices.
func (s *scanner) choice(c *chunk, shape chunkShape, text []byte) ([]byte, error) {
	var m seen
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "index":
			if err := m.once(s, 1, "index"); err != nil {
				return err
			}
			if s.peek() == 'n' {
				return s.literal("null")
			}
			lit, err := s.number()
			if err != nil {
				return err
			}
			if string(lit) != "0" {
				return s.fail("choice index %s (only n=1 is supported)", lit)
			}
			return nil
		case "finish_reason": // not a contract value: OpenAI chunk key
			if err := m.once(s, 2, "finish_reason"); err != nil { // not a contract value: OpenAI chunk key
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			if s.peek() != '"' {
				return s.fail("finish_reason is not a string")
			}
			var buf [32]byte
			v, err := s.str(buf[:0])
			if err != nil {
				return err
			}
			c.finish, c.hasFinish = internFinish(v), true
			return nil
		case "text":
			if shape != shapeTextChunk && shape != shapeTextBody {
				return s.skip()
			}
			var err error
			text, err = s.textField(&m, 4, "text", c, text)
			return err
		case "delta", "message":
			want := "delta"
			if shape == shapeChatBody {
				want = "message"
			}
			if string(k) != want || (shape != shapeChatChunk && shape != shapeChatBody) {
				return s.skip()
			}
			if err := m.once(s, 8, want); err != nil {
				return err
			}
			if null, err := s.isNull(); null || err != nil {
				return err
			}
			var err error
			text, err = s.delta(c, text)
			return err
		default:
			return s.skip()
		}
	})
	return text, err
}

// textField reads a string-or-null member (seen at most once, as bit of m) and appends it to
// text; a non-empty string makes the chunk a content chunk.
func (s *scanner) textField(m *seen, bit seen, key string, c *chunk, text []byte) ([]byte, error) {
	if err := m.once(s, bit, key); err != nil {
		return text, err
	}
	if null, err := s.isNull(); null || err != nil {
		return text, err
	}
	if s.peek() != '"' {
		return text, s.fail("%s is not a string", key)
	}
	n := len(text)
	text, err := s.str(text)
	if len(text) > n {
		c.content = true
	}
	return text, err
}

// delta reads a chat delta (or message): content is text; tool calls make a tool-call chunk (a
// token event for timing), reassembled when the scanner has a call set; reasoning makes a reasoning chunk (a token event for timing), its text collected
// apart when the scanner has a reasoning buffer.
func (s *scanner) delta(c *chunk, text []byte) ([]byte, error) {
	var m seen
	err := s.object(func(k []byte) error {
		switch string(k) {
		case "content": // not a contract value: OpenAI delta key
			var err error
			text, err = s.textField(&m, 1, "content", c, text) // not a contract value: OpenAI delta key
			return err
		case "reasoning_content", "reasoning": // not a contract value: chat delta keys
			bit := seen(2)
			if string(k) == "reasoning" { // not a contract value: a chat delta key
				bit = 4
			}
			if err := m.once(s, bit, string(k)); err != nil {
				return err
			}
			if s.reason == nil || s.peek() != '"' {
				ok, err := s.nonEmptyString()
				if ok {
					c.reasoning = true
				}
				return err
			}
			n := len(*s.reason)
			var err error
			*s.reason, err = s.str(*s.reason)
			if len(*s.reason) > n {
				c.reasoning = true
			}
			return err
		case "tool_calls": // not a contract value: OpenAI delta key
			if err := m.once(s, 8, "tool_calls"); err != nil { // not a contract value: OpenAI delta key
				return err
			}
			ok, err := s.toolCalls()
			if ok {
				c.toolCall = true
			}
			return err
		default:
			return s.skip()
		}
	})
	return text, err
}

// responsesUsageKeys maps the Responses API's usage names to the chat ones.
var responsesUsageKeys = map[string]string{
	"input_tokens": "prompt_tokens", "output_tokens": "completion_tokens", "total_tokens": "total_tokens",
	"input_tokens_details": "prompt_tokens_details", "output_tokens_details": "completion_tokens_details",
}

// usage reads a usage object or null.
func (s *scanner) usage(u *usageCounts) error {
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if s.peek() != '{' {
		return s.fail("usage is not an object")
	}
	u.present = true
	var m seen
	return s.object(func(k []byte) error {
		var dst *int64
		var has *bool
		var bit seen
		key := string(k)
		if s.responses { // the Responses API's names for the same counts
			key = responsesUsageKeys[key]
		}
		switch key {
		case "prompt_tokens":
			dst, has, bit = &u.prompt, &u.hasP, 1
		case "completion_tokens":
			dst, has, bit = &u.compl, &u.hasC, 2
		case "total_tokens":
			dst, has, bit = &u.total, &u.hasT, 4
		case "prompt_tokens_details": // not a contract value: OpenAI usage key
			if err := m.once(s, 8, string(k)); err != nil {
				return err
			}
			return s.details(&u.cached, &u.hasCached, "cached_tokens") // not a contract value: OpenAI usage key
		case "completion_tokens_details": // not a contract value: OpenAI usage key
			if err := m.once(s, 16, string(k)); err != nil {
				return err
			}
			return s.details(&u.reasoning, &u.hasReasoning, "reasoning_tokens") // not a contract value: OpenAI usage key
		default:
			return s.skip()
		}
		if err := m.once(s, bit, string(k)); err != nil {
			return err
		}
		if s.peek() == 'n' {
			if err := s.literal("null"); err != nil {
				return err
			}
			if u.bad == "" {
				u.bad = fmt.Sprintf("usage.%s is null", k)
			}
			return nil
		}
		c := s.peek()
		if c != '-' && (c < '0' || c > '9') {
			if u.bad == "" {
				u.bad = fmt.Sprintf("usage.%s is not a number", k)
			}
			return s.skip()
		}
		lit, err := s.number()
		if err != nil {
			return err
		}
		v, perr := strconv.ParseInt(string(lit), 10, 64)
		switch {
		case perr != nil:
			if u.bad == "" {
				u.bad = fmt.Sprintf("usage.%s = %s is not an integer", k, lit)
			}
		case v < 0:
			if u.bad == "" {
				u.bad = fmt.Sprintf("usage.%s = %d is negative", k, v)
			}
		default:
			*dst, *has = v, true
		}
		return nil
	})
}

// details reads a usage details object (prompt_tokens_details, completion_tokens_details; an
// object or null) for its member key; a value that is not a non-negative integer is left
// unreported.
func (s *scanner) details(dst *int64, has *bool, key string) error {
	if null, err := s.isNull(); null || err != nil {
		return err
	}
	if s.peek() != '{' {
		return s.skip()
	}
	var m seen
	return s.object(func(k []byte) error {
		if string(k) != key {
			return s.skip()
		}
		if err := m.once(s, 1, string(k)); err != nil {
			return err
		}
		if c := s.peek(); c < '0' || c > '9' {
			return s.skip()
		}
		lit, err := s.number()
		if err != nil {
			return err
		}
		if v, perr := strconv.ParseInt(string(lit), 10, 64); perr == nil && v >= 0 {
			*dst, *has = v, true
		}
		return nil
	})
}

// internFinish returns finish reasons without allocating for the common ones.
func internFinish(v []byte) string { // OpenAI finish reasons as the wire spells them
	for _, f := range [...]string{"stop", "length", "tool_calls", "content_filter"} {
		if string(v) == f {
			return f
		}
	}
	return string(v)
}
