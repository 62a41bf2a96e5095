package load

import (
	"bytes"
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// sseParser is an incremental Server-Sent Events parser following the WHATWG HTML "event stream
// interpretation" rules: lines end with CRLF, LF or CR (a CRLF split across two reads is one
// terminator), a leading UTF-8 byte order mark is dropped, lines starting with ':' are comments,
// "data" lines are joined with '\n', an empty line dispatches the event (when it has data), "id"
// and "retry" are accepted and ignored, and an incomplete event at end of stream is discarded.
//
// Unlike a bufio.Scanner (which stops at 64 KiB) it has no hidden limit: a line longer than
// maxLine bytes, or an event whose data exceeds MaxEventDataBytes, is an error with class
// oversize_line, found as soon as the bytes arrive rather than after buffering the whole line.
// With strict set, a line whose field name is none of data, event, id and retry is an error with
// class malformed_event (the specification ignores such lines; an OpenAI-compatible stream never
// sends one, so a server that drops the "data:" prefix is caught instead of silently losing an
// event).
//
// feed does not copy a line that lies wholly inside its input: the data passed to the handler is
// valid only during the call.
type sseParser struct {
	maxLine int
	strict  bool

	partial []byte // the start of a line whose terminator has not arrived
	data    []byte // the data buffer, once it holds more than one line or outlives a feed
	single  []byte // the only data line so far, possibly pointing into the caller's input
	owned   bool   // single points into data (survives the end of the feed)
	nData   int    // data lines in the pending event
	evType  []byte // the event type buffer
	skipLF  bool   // the last byte fed was '\r': a '\n' first in the next feed completes a CRLF
	started bool   // the first line has been seen (the BOM check is done)
}

// sseHandler receives each dispatched event: typ is the event type ("" when none was given) and
// data its data. Returning an error stops the parser, which returns that error from feed.
type sseHandler func(typ, data []byte) error

// sseError is a parse error with the request-record error class it maps to.
type sseError struct {
	class contract.ErrorClass
	msg   string
}

func (e *sseError) Error() string { return e.msg }

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func newSSEParser(maxLine int, strict bool) *sseParser {
	return &sseParser{maxLine: maxLine, strict: strict}
}

func (p *sseParser) tooLong(n int) error {
	return &sseError{class: ClassOversizeLine, msg: fmt.Sprintf("SSE line of more than %d bytes (limit %d)", n, p.maxLine)}
}

// feed parses b, calling h for every event it completes.
func (p *sseParser) feed(b []byte, h sseHandler) error {
	if len(b) == 0 {
		return nil
	}
	if p.skipLF {
		p.skipLF = false
		if b[0] == '\n' {
			b = b[1:]
		}
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		end := i
		if end < 0 {
			end = len(b)
		}
		if j := bytes.IndexByte(b[:end], '\r'); j >= 0 {
			i = j
		}
		if i < 0 {
			if len(p.partial)+len(b) > p.maxLine {
				return p.tooLong(len(p.partial) + len(b))
			}
			p.partial = append(p.partial, b...)
			break
		}
		line := b[:i]
		fromPartial := len(p.partial) > 0
		if fromPartial {
			if len(p.partial)+i > p.maxLine {
				return p.tooLong(len(p.partial) + i)
			}
			p.partial = append(p.partial, line...)
			line = p.partial
		} else if i > p.maxLine {
			return p.tooLong(i)
		}
		if b[i] == '\r' {
			if i+1 < len(b) {
				if b[i+1] == '\n' {
					i++
				}
			} else {
				p.skipLF = true
			}
		}
		b = b[i+1:]
		err := p.line(line, fromPartial, h)
		if fromPartial {
			p.partial = p.partial[:0]
		}
		if err != nil {
			return err
		}
	}
	// A single data line pointing into b must outlive this call.
	if p.nData == 1 && !p.owned {
		p.data = append(p.data[:0], p.single...)
		p.single, p.owned = p.data, true
	}
	return nil
}

// line interprets one line; transient says that line's memory is reused after the call.
func (p *sseParser) line(line []byte, transient bool, h sseHandler) error {
	if !p.started {
		p.started = true
		line = bytes.TrimPrefix(line, utf8BOM)
	}
	if len(line) == 0 {
		return p.dispatch(h)
	}
	if line[0] == ':' {
		return nil
	}
	field, value := line, []byte(nil)
	if k := bytes.IndexByte(line, ':'); k >= 0 {
		field, value = line[:k], line[k+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		return p.addData(value, transient)
	case "event":
		p.evType = append(p.evType[:0], value...)
	case "id", "retry":
	default:
		if p.strict {
			return &sseError{class: ClassMalformedEvent, msg: fmt.Sprintf("SSE line with unknown field %q (want data, event, id or retry)", clip(string(field), 64))}
		}
	}
	return nil
}

func (p *sseParser) addData(value []byte, transient bool) error {
	switch p.nData {
	case 0:
		if transient {
			p.data = append(p.data[:0], value...)
			p.single, p.owned = p.data, true
		} else {
			p.single, p.owned = value, false
		}
	case 1:
		if !p.owned {
			p.data = append(p.data[:0], p.single...)
		}
		fallthrough
	default:
		if len(p.data)+1+len(value) > MaxEventDataBytes {
			return &sseError{class: ClassOversizeLine, msg: fmt.Sprintf("SSE event data of more than %d bytes", MaxEventDataBytes)}
		}
		p.data = append(p.data, '\n')
		p.data = append(p.data, value...)
	}
	p.nData++
	return nil
}

func (p *sseParser) dispatch(h sseHandler) error {
	if p.nData == 0 {
		p.evType = p.evType[:0]
		return nil
	}
	payload := p.data
	if p.nData == 1 {
		payload = p.single
	}
	err := h(p.evType, payload)
	p.nData, p.single, p.owned = 0, nil, false
	p.data = p.data[:0]
	p.evType = p.evType[:0]
	return err
}

// pending reports whether an incomplete line or event is buffered (a stream that ends now was
// cut mid-event).
func (p *sseParser) pending() bool { return len(p.partial) > 0 || p.nData > 0 }
