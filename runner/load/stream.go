package load

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Response is one completion request as the client saw it. Every *Ns field is nanoseconds since
// the request's epoch on the monotonic clock, nil when the moment never came.
type Response struct {
	// ID is the completion id of the first chunk (evidence for matching a server log; it is not
	// part of the request record).
	ID string
	// Status is the HTTP status code; 0 when no response headers arrived.
	Status int
	// TSendNs: immediately before the single write that carries the whole request.
	TSendNs *int64
	// TSentNs: the moment that write returned (nil when it failed).
	TSentNs *int64
	// THdrNs: the read that completed the response headers.
	THdrNs *int64
	// TEndNs: the last content event (for a response without any, the [DONE] event; for a
	// non-streamed response, the end of the body).
	TEndNs *int64
	// TCloseNs: the end of the HTTP response (or the moment the client cut it).
	TCloseNs *int64
	// Events are the SSE events in arrival order, each stamped by the read that completed it.
	Events []contract.Event
	// Usage is the stream's single usage record; nil unless the stream had exactly one, with
	// total = prompt + completion.
	Usage *contract.Usage
	// CachedPromptTokens is the usage record's prompt_tokens_details.cached_tokens (nil when
	// Usage is nil or the server did not report it).
	CachedPromptTokens *int64
	// FinishReason is the last finish_reason sent (nil when none).
	FinishReason *contract.RecordFinishReason
	// Text is the completion text: chat content deltas concatenated, or choices[0].text.
	Text []byte
	// Reasoning is the chat reasoning text (reasoning_content or reasoning deltas, or the
	// message's) concatenated; empty when the server sent none.
	Reasoning []byte
	// ToolCalls are the chat response's reassembled tool calls as the request record keeps them
	// (judged against the case's tools by the runner); nil when it made none.
	ToolCalls []contract.ToolCall
	// toolCallWhy says why each invalid call of ToolCalls is ("" for a valid one).
	toolCallWhy []string
	// calls reassembles a chat response's tool calls (toolcall.go).
	calls callSet
	// Complete says the whole response arrived (the text is the whole completion).
	Complete bool
	// Err classifies a failed request; nil on success.
	Err *contract.RequestError
	// reused says the request went out on a connection that had served a request before.
	reused bool
	// received counts response bytes read.
	received int64
}

// OutputDigest returns the sha256 digest of the completion text, or nil when the response was not
// complete.
func (r *Response) OutputDigest() *string {
	if !r.Complete {
		return nil
	}
	sum := sha256.Sum256(r.Text)
	d := "sha256:" + hex.EncodeToString(sum[:])
	return &d
}

// HTTP framing states.
type hstate int

const (
	hStatus    hstate = iota // reading the status line
	hHeaders                 // reading header lines
	hChunkSize               // reading a chunk-size line
	hChunkData               // inside a chunk
	hChunkCRLF               // the CRLF after a chunk's data
	hTrailer                 // trailer lines after the last chunk
	hBody                    // a Content-Length body
	hBodyToEOF               // a body delimited by the connection closing
	hDone
)

// body consumers.
type sink int

const (
	sinkSSE   sink = iota // 2xx event stream
	sinkJSON              // 2xx non-streamed body
	sinkError             // non-2xx body, kept for the message
)

// stream is one request's response state. The reactor feeds it the bytes of its connection with
// the time of each read; everything it learns goes into resp. It is used under its connection's
// mutex only.
type stream struct {
	epoch  time.Time
	shape  chunkShape
	isSSE  bool
	resp   Response
	token  string // redacted from messages
	done   chan struct{}
	closed bool // the request is over (done is closed by notify, after the last write)
	told   bool // done is closed

	hs        hstate
	line      []byte // a status, header, chunk-size or trailer line spanning reads
	hdrBytes  int
	http10    bool
	chunked   bool
	clen      int64
	left      int64
	connClose bool
	ctype     string
	sink      sink
	body      []byte
	reusable  bool
	finalHdr  bool
	seenCL    bool
	teSeen    bool
	nowNs     int64
	handler   sseHandler
	parser    *sseParser
	usageN    int
	usageAt   int // the event that carried the first usage record (0: none yet)
	usage     usageCounts
	usageVals []string
	sawDone   bool
	doneNs    int64
	lastCont  int64
	nContent  int
	finishRaw string
	hasFinish bool
	errSet    bool
}

func newStream(epoch time.Time, chat, responses, isSSE bool, maxLine, expectEvents int, token string) *stream {
	s := &stream{epoch: epoch, isSSE: isSSE, done: make(chan struct{}), token: token, clen: -1}
	switch {
	case responses && isSSE:
		s.shape = shapeResponsesEvent
	case responses:
		s.shape = shapeResponsesBody
	case chat && isSSE:
		s.shape = shapeChatChunk
	case chat:
		s.shape = shapeChatBody
	case isSSE:
		s.shape = shapeTextChunk
	default:
		s.shape = shapeTextBody
	}
	if isSSE {
		s.parser = newSSEParser(maxLine, true)
		s.handler = s.onEvent
		s.resp.Events = make([]contract.Event, 0, min(max(expectEvents, 8), 1<<16))
		s.resp.Text = make([]byte, 0, min(max(expectEvents, 8)*8, 1<<20))
	}
	return s
}

func (s *stream) ns(t time.Time) int64 { return int64(t.Sub(s.epoch)) }

func i64(v int64) *int64 { return &v }

// fail ends the request with an error (the first error wins).
func (s *stream) fail(class contract.ErrorClass, format string, args ...any) {
	if s.errSet {
		return
	}
	s.errSet = true
	e := reqError(class, format, args...)
	if s.token != "" {
		e.Message = strings.ReplaceAll(e.Message, s.token, "[REDACTED]")
	}
	s.resp.Err = e
}

// finish closes the request at nowNs; the caller then calls notify.
func (s *stream) finish() {
	if s.closed {
		return
	}
	s.resp.TCloseNs = i64(s.nowNs)
	if s.resp.TEndNs == nil && s.nContent > 0 {
		s.resp.TEndNs = i64(s.lastCont)
	}
	if s.hs != hDone {
		s.reusable = false
	}
	s.closed = true
}

// notify wakes the request's goroutine once the request is over; nothing writes to the stream
// afterwards.
func (s *stream) notify() {
	if s.closed && !s.told {
		s.told = true
		close(s.done)
	}
}

// abort ends the request from the client side (cancellation, timeout, a write error).
func (s *stream) abort(now time.Time, class contract.ErrorClass, format string, args ...any) {
	if s.closed {
		return
	}
	s.nowNs = s.ns(now)
	s.fail(class, format, args...)
	s.finish()
	s.notify()
}

// feed processes bytes read at now.
func (s *stream) feed(b []byte, now time.Time) {
	s.resp.received += int64(len(b))
	if s.closed {
		return
	}
	s.nowNs = s.ns(now)
	for len(b) > 0 && !s.closed {
		switch s.hs {
		case hStatus, hHeaders, hChunkSize, hTrailer:
			limit := MaxChunkLineBytes
			if s.hs == hStatus || s.hs == hHeaders {
				limit = MaxHeaderBytes
			}
			line, rest, ok := s.takeLine(b, limit)
			b = rest
			if !ok {
				continue
			}
			s.onLine(line)
		case hChunkData, hBody:
			n := int64(len(b))
			if n > s.left {
				n = s.left
			}
			s.consume(b[:n])
			b = b[n:]
			s.left -= n
			if s.left == 0 && !s.closed {
				if s.hs == hChunkData {
					s.hs = hChunkCRLF
				} else {
					s.complete()
				}
			}
		case hChunkCRLF:
			// Exactly CRLF (or a bare LF) ends a chunk's data.
			switch {
			case b[0] == '\n':
				b = b[1:]
				s.line = s.line[:0]
				s.hs = hChunkSize
			case b[0] == '\r' && len(s.line) == 0:
				b = b[1:]
				s.line = append(s.line, '\r')
			default:
				s.fail(ClassConnection, "malformed chunked encoding: data after a chunk's declared size")
				s.finish()
				return
			}
		case hBodyToEOF:
			s.consume(b)
			b = nil
		}
	}
	if len(b) > 0 {
		// Bytes after the end of the response: the connection cannot be reused.
		s.reusable = false
	}
}

// takeLine returns the next line of b (without CRLF or LF), joining a line started in an earlier
// read. ok is false when b ended before the line did (the start is kept).
func (s *stream) takeLine(b []byte, limit int) (line, rest []byte, ok bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		// The line so far may end with the CR of its CRLF: one byte of grace.
		if len(s.line)+len(b) > limit+1 {
			s.overLimit(limit)
			return nil, nil, false
		}
		s.line = append(s.line, b...)
		return nil, nil, false
	}
	line, rest = b[:i], b[i+1:]
	if len(s.line) > 0 {
		s.line = append(s.line, line...)
		line = s.line
		s.line = s.line[:0]
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > limit {
		s.overLimit(limit)
		return nil, nil, false
	}
	if s.hs == hStatus || s.hs == hHeaders {
		s.hdrBytes += len(line) + 2
		if s.hdrBytes > MaxHeaderBytes {
			s.overLimit(MaxHeaderBytes)
			return nil, nil, false
		}
	}
	return line, rest, true
}

func (s *stream) overLimit(limit int) {
	if s.hs == hStatus || s.hs == hHeaders {
		s.fail(ClassConnection, "response headers exceed %d bytes", MaxHeaderBytes)
	} else {
		s.fail(ClassConnection, "malformed chunked encoding: a size or trailer line exceeds %d bytes", limit)
	}
	s.finish()
}

// onLine handles a complete status, header, chunk-size or trailer line.
func (s *stream) onLine(line []byte) {
	switch s.hs {
	case hStatus:
		s.statusLine(line)
	case hHeaders:
		if len(line) == 0 {
			s.endHeaders()
			return
		}
		s.header(line)
	case hChunkSize:
		size := line
		if k := bytes.IndexByte(size, ';'); k >= 0 {
			size = size[:k]
		}
		size = bytes.TrimRight(size, " \t")
		n, err := strconv.ParseUint(string(size), 16, 63)
		if err != nil || len(size) == 0 || len(size) > 15 {
			s.fail(ClassConnection, "malformed chunked encoding: chunk size %q", clip(string(line), 64))
			s.finish()
			return
		}
		if n == 0 {
			s.hs = hTrailer
			return
		}
		s.left, s.hs = int64(n), hChunkData
	case hTrailer:
		if len(line) == 0 {
			s.complete()
		}
	}
}

func (s *stream) statusLine(line []byte) {
	proto, rest, _ := bytes.Cut(line, []byte{' '})
	code, _, _ := bytes.Cut(rest, []byte{' '})
	n, err := strconv.Atoi(string(code))
	if (string(proto) != "HTTP/1.1" && string(proto) != "HTTP/1.0") || len(code) != 3 || err != nil || n < 100 {
		s.fail(ClassConnection, "malformed HTTP status line %q", clip(string(line), 128))
		s.finish()
		return
	}
	s.http10 = string(proto) == "HTTP/1.0"
	s.resp.Status = n
	s.hs = hHeaders
}

func (s *stream) header(line []byte) {
	name, value, ok := bytes.Cut(line, []byte{':'})
	if !ok || len(name) == 0 || !isToken(name) {
		s.fail(ClassConnection, "malformed HTTP header line %q", clip(string(line), 128))
		s.finish()
		return
	}
	value = bytes.TrimSpace(value)
	switch {
	case asciiEqualFold(name, "content-length"):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || (s.seenCL && n != s.clen) {
			s.fail(ClassConnection, "malformed Content-Length %q", clip(string(value), 64))
			s.finish()
			return
		}
		s.clen, s.seenCL = n, true
	case asciiEqualFold(name, "transfer-encoding"):
		codings := strings.Split(strings.ToLower(string(value)), ",")
		last := strings.TrimSpace(codings[len(codings)-1])
		if last != "chunked" || len(codings) > 1 {
			s.fail(ClassConnection, "unsupported Transfer-Encoding %q", clip(string(value), 64))
			s.finish()
			return
		}
		s.chunked, s.teSeen = true, true
	case asciiEqualFold(name, "connection"):
		for _, tok := range strings.Split(string(value), ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "close") {
				s.connClose = true
			}
		}
	case asciiEqualFold(name, "content-type"):
		mt, _, _ := strings.Cut(string(value), ";")
		s.ctype = strings.ToLower(strings.TrimSpace(mt))
	}
}

func (s *stream) endHeaders() {
	st := s.resp.Status
	if st >= 100 && st < 200 {
		if st == 101 {
			s.fail(ClassConnection, "unexpected HTTP 101 Switching Protocols")
			s.finish()
			return
		}
		// An interim response: the real one follows.
		s.hs, s.hdrBytes, s.clen, s.seenCL, s.chunked, s.teSeen, s.connClose, s.ctype = hStatus, 0, -1, false, false, false, false, ""
		return
	}
	s.resp.THdrNs = i64(s.nowNs)
	s.finalHdr = true
	if s.teSeen && s.seenCL {
		s.connClose = true // RFC 9112 §6.3: Transfer-Encoding wins; do not reuse
	}
	switch {
	case st >= 200 && st < 300 && s.isSSE:
		if s.ctype != "text/event-stream" {
			s.fail(ClassMalformedEvent, "HTTP %d with Content-Type %q, want text/event-stream", st, clip(s.ctype, 64))
			s.finish()
			return
		}
		s.sink = sinkSSE
	case st >= 200 && st < 300:
		s.sink = sinkJSON
	default:
		s.sink = sinkError
	}
	switch {
	case st == 204 || st == 304:
		s.complete()
	case s.chunked:
		s.hs = hChunkSize
	case s.clen >= 0:
		s.left, s.hs = s.clen, hBody
		if s.clen == 0 {
			s.complete()
		}
	default:
		s.hs, s.connClose = hBodyToEOF, true
	}
}

// consume handles body bytes.
func (s *stream) consume(b []byte) {
	switch s.sink {
	case sinkSSE:
		if err := s.parser.feed(b, s.handler); err != nil {
			if se, ok := err.(*sseError); ok {
				s.fail(se.class, "%s", se.msg)
			} else {
				s.fail(ClassMalformedEvent, "%v", err)
			}
			s.finish()
		}
	case sinkJSON:
		if len(s.body)+len(b) > MaxBodyBytes {
			s.fail(ClassOversizeLine, "response body exceeds %d bytes", MaxBodyBytes)
			s.finish()
			return
		}
		s.body = append(s.body, b...)
	case sinkError:
		if room := MaxErrorBodyBytes - len(s.body); room > 0 {
			s.body = append(s.body, b[:min(len(b), room)]...)
		}
		if len(s.body) >= MaxErrorBodyBytes {
			s.errorStatus()
			s.finish()
		}
	}
}

// onEvent handles one SSE event.
func (s *stream) onEvent(typ, data []byte) error {
	k := len(s.resp.Events) + 1
	if len(typ) > 0 && string(typ) != "message" && s.shape != shapeResponsesEvent {
		s.fail(ClassMalformedEvent, "event %d has SSE event type %q: %s", k, clip(string(typ), 64), clip(string(data), 256))
		return errHandled
	}
	if s.sawDone {
		end := "data: [DONE]"
		if s.shape == shapeResponsesEvent {
			end = "the stream's terminal event (response.completed, response.incomplete or response.failed)"
		}
		s.fail(ClassMalformedEvent, "event %d arrived after %s", k, end)
		return errHandled
	}
	if len(s.resp.Events) >= MaxEvents {
		s.fail(ClassMalformedEvent, "more than %d events", MaxEvents)
		return errHandled
	}
	ev := contract.Event{TNs: s.nowNs, Kind: contract.EventKindOther, Bytes: int64(len(data))}
	if string(data) == "[DONE]" {
		ev.Kind = contract.EventKindDone
		s.sawDone, s.doneNs = true, s.nowNs
		s.resp.Events = append(s.resp.Events, ev)
		return nil
	}
	var c chunk
	var text, reasoning []byte
	var err error
	terminal := false
	if s.shape == shapeResponsesEvent {
		c, text, reasoning, terminal, err = parseResponsesEvent(typ, data, s.resp.Text, s.reasoningBuf())
	} else {
		c, text, reasoning, err = parseChunkCalls(data, s.shape, s.resp.Text, s.reasoningBuf(), s.callBuf(), s.resp.ID == "" && k <= 2)
	}
	s.resp.Text, s.resp.Reasoning = text, reasoning
	if err != nil {
		s.fail(ClassMalformedEvent, "event %d: %v: %s", k, err, clip(string(data), 256))
		return errHandled
	}
	if c.isError {
		s.fail(ClassMalformedEvent, "event %d is an in-stream error: %s", k, clip(c.errorText, 512))
		return errHandled
	}
	if c.id != "" {
		s.resp.ID = c.id
	}
	if len(s.resp.Text)+len(s.resp.Reasoning)+s.resp.calls.bytes > MaxOutputBytes {
		s.fail(ClassMalformedEvent, "completion text, reasoning and tool call arguments exceed %d bytes", MaxOutputBytes)
		return errHandled
	}
	token := c.content || c.reasoning || c.toolCall // a token event: content, reasoning or a tool call
	if c.placeholderUsage() {
		c.usage = usageCounts{}
	}
	if c.usage.present {
		s.usageN++
		if s.usageN == 1 {
			s.usage, s.usageAt = c.usage, k
		}
		if len(s.usageVals) < 4 {
			s.usageVals = append(s.usageVals, fmt.Sprintf("{prompt %d, completion %d, total %d}", c.usage.prompt, c.usage.compl, c.usage.total))
		}
	}
	switch {
	case c.hasFinish && s.hasFinish:
		s.fail(ClassDuplicateFinishReason, "event %d carries finish_reason %q after an earlier event carried %q: a stream has one finish", k, clip(c.finish, 64), clip(s.finishRaw, 64))
		return errHandled
	case token && s.hasFinish:
		s.fail(ClassContentAfterFinish, "event %d carries content after finish_reason %q: a stream ends its content at its finish", k, clip(s.finishRaw, 64))
		return errHandled
	case token && s.usageAt > 0 && s.usageAt < k:
		s.fail(ClassInconsistentUsage, "the usage record of event %d precedes content event %d: a usage record counts the whole response, so it cannot come before its content", s.usageAt, k)
		return errHandled
	}
	if c.hasFinish {
		s.finishRaw, s.hasFinish = c.finish, true
	}
	switch {
	case token:
		switch {
		case c.content:
			ev.Kind = contract.EventKindContent
		case c.toolCall:
			ev.Kind = contract.EventKindToolCall
		default:
			ev.Kind = contract.EventKindReasoning
		}
		s.nContent++
		s.lastCont = s.nowNs
	case c.usage.present:
		ev.Kind = contract.EventKindUsage
	}
	s.resp.Events = append(s.resp.Events, ev)
	if terminal { // a Responses API stream ends at its terminal event, as a chat stream at [DONE]
		s.sawDone, s.doneNs = true, s.nowNs
	}
	return nil
}

// reasoningBuf is the buffer reasoning text is appended to: a chat response's Reasoning (made
// non-nil so that the scanner collects it); nil for completions, which carry none.
func (s *stream) reasoningBuf() []byte {
	if s.shape == shapeTextChunk || s.shape == shapeTextBody {
		return nil
	}
	if s.resp.Reasoning == nil {
		return []byte{} // empty and non-nil: no allocation until reasoning arrives
	}
	return s.resp.Reasoning
}

// callBuf is the set a chat response's tool calls are reassembled in; nil for the other shapes.
func (s *stream) callBuf() *callSet {
	if s.shape != shapeChatChunk && s.shape != shapeChatBody {
		return nil
	}
	return &s.resp.calls
}

// errHandled stops the SSE parser after onEvent recorded the failure.
var errHandled = &sseError{class: ClassMalformedEvent, msg: "handled"}

// complete ends the response at a clean end of the HTTP message.
func (s *stream) complete() {
	s.hs = hDone
	s.reusable = !s.connClose && !s.http10
	switch s.sink {
	case sinkError:
		s.errorStatus()
	case sinkJSON:
		s.completeJSON()
	case sinkSSE:
		s.completeSSE()
	}
	s.finish()
}

func (s *stream) errorStatus() {
	msg := strings.TrimSpace(string(s.body))
	if c, _, err := parseChunk(s.body, shapeChatBody, nil, false); err == nil && c.isError {
		msg = c.errorText
	}
	if msg == "" {
		msg = "(empty body)"
	}
	s.fail(ClassHTTPStatus, "HTTP %d: %s", s.resp.Status, clip(msg, 1024))
}

func (s *stream) completeSSE() {
	switch {
	case s.parser.pending():
		s.fail(ClassTruncatedStream, "the response ended in the middle of an SSE event")
		return
	case !s.sawDone:
		s.fail(ClassTruncatedStream, "the response ended without data: [DONE] (%d events)", len(s.resp.Events))
		return
	}
	s.resp.Complete = true
	if s.nContent == 0 {
		s.resp.TEndNs = i64(s.doneNs)
	}
	s.settle()
}

func (s *stream) completeJSON() {
	var c chunk
	var text, reasoning []byte
	var err error
	if s.shape == shapeResponsesBody {
		c, text, reasoning, err = parseResponsesBody(s.body, s.resp.Text[:0], s.reasoningBuf())
	} else {
		c, text, reasoning, err = parseChunkCalls(s.body, s.shape, s.resp.Text[:0], s.reasoningBuf(), s.callBuf(), true)
	}
	s.resp.Text, s.resp.Reasoning = text, reasoning
	switch {
	case err != nil:
		s.fail(ClassMalformedEvent, "response body: %v", err)
		return
	case c.isError:
		s.fail(ClassMalformedEvent, "response body is an error: %s", clip(c.errorText, 512))
		return
	}
	s.resp.ID = c.id
	s.resp.Complete = true
	s.resp.TEndNs = i64(s.nowNs)
	if c.usage.present {
		s.usageN, s.usage = 1, c.usage
	}
	if c.hasFinish {
		s.finishRaw, s.hasFinish = c.finish, true
	}
	s.settle()
}

// settle checks the usage record and the finish reason of a complete response.
func (s *stream) settle() {
	u := s.usage
	switch {
	case s.usageN == 0:
		s.fail(ClassMissingUsage, "the response carried no usage record")
	case s.usageN > 1:
		s.fail(ClassDuplicateUsage, "the response carried %d usage records: %s", s.usageN, strings.Join(s.usageVals, ", "))
	case u.bad != "":
		s.fail(ClassInconsistentUsage, "%s", u.bad)
	case !u.hasP || !u.hasC || !u.hasT:
		s.fail(ClassInconsistentUsage, "usage lacks %s", missingCounts(u))
	case u.total != u.prompt+u.compl:
		s.fail(ClassInconsistentUsage, "usage total_tokens %d != prompt_tokens %d + completion_tokens %d", u.total, u.prompt, u.compl)
	case u.compl == 0 && (s.nContent > 0 || len(s.resp.Text) > 0 || len(s.resp.Reasoning) > 0 || len(s.resp.calls.calls) > 0):
		s.fail(ClassInconsistentUsage, "usage completion_tokens is 0 but the response carried content (%d token events, %d bytes of text, %d of reasoning, %d tool calls): generated content is at least one token", s.nContent, len(s.resp.Text), len(s.resp.Reasoning), len(s.resp.calls.calls))
	case u.hasReasoning && u.reasoning > u.compl:
		s.fail(ClassInconsistentUsage, "usage completion_tokens_details.reasoning_tokens %d > completion_tokens %d: reasoning is counted inside the completion", u.reasoning, u.compl)
	default:
		s.resp.Usage = &contract.Usage{PromptTokens: u.prompt, CompletionTokens: u.compl, TotalTokens: u.total}
		if u.hasReasoning {
			r := u.reasoning
			s.resp.Usage.ReasoningTokens = &r
		}
		if u.hasCached && u.cached <= u.prompt {
			c := u.cached
			s.resp.CachedPromptTokens = &c
		}
	}
	if s.hasFinish {
		if f := contract.RecordFinishReason(s.finishRaw); f.Valid() {
			s.resp.FinishReason = &f
		} else {
			s.fail(ClassMalformedEvent, "finish_reason %q is not one of %s", clip(s.finishRaw, 64), strings.Join(contract.Strings(contract.RecordFinishReasonValues()), ", "))
		}
	}
}

func missingCounts(u usageCounts) string {
	var m []string
	if !u.hasP {
		m = append(m, "prompt_tokens")
	}
	if !u.hasC {
		m = append(m, "completion_tokens")
	}
	if !u.hasT {
		m = append(m, "total_tokens")
	}
	return strings.Join(m, ", ")
}

// eof handles the end of the connection (err is the read error, nil for a clean EOF).
func (s *stream) eof(now time.Time, err error) {
	if s.closed {
		return
	}
	s.nowNs = s.ns(now)
	s.reusable = false
	why := "the server closed the connection"
	if err != nil {
		why = "read: " + err.Error()
	}
	switch s.hs {
	case hStatus, hHeaders:
		s.fail(ClassConnection, "%s before the response headers (%d bytes received)", why, s.resp.received)
	case hBodyToEOF:
		if err == nil {
			s.complete()
			return
		}
		s.fail(ClassTruncatedStream, "%s in the response body", why)
	default:
		s.fail(ClassTruncatedStream, "%s in the middle of the response body", why)
	}
	s.finish()
}

func isToken(b []byte) bool {
	for _, c := range b {
		if c <= ' ' || c >= 0x7f || strings.IndexByte("()<>@,;:\\\"/[]?={}", c) >= 0 {
			return false
		}
	}
	return true
}

func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
