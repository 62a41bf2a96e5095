package record

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/limits"
)

// Extra is what the identity checks read of a request record beyond Record: the HTTP status, the
// request's sampling seed and the kinds of its assertions. Read's Record
// does not carry them; a Tap collects them from the same bytes as Read reads them.
type Extra struct {
	OK        bool // the line was read (false: too long, or not a JSON object)
	Status    int64
	HasStatus bool
	Seed      int64
	HasSeed   bool
	// Assertions are the kinds of the record's assertions, in order, one byte each (the index of
	// the kind in contract.AssertionOutcomeKindValues; 255 for another).
	Assertions string
}

// assertionKindOf is the assertion kind k names, without allocating ("" for none).
func assertionKindOf(k []byte) contract.AssertionOutcomeKind {
	for _, v := range assertionKindValues {
		if string(k) == string(v) {
			return v
		}
	}
	return ""
}

var assertionKindValues = contract.AssertionOutcomeKindValues()

// assertionKinds encodes assertion kinds as Extra.Assertions does.
func assertionKinds(kinds []contract.AssertionOutcomeKind) string {
	if len(kinds) == 0 {
		return ""
	}
	b := make([]byte, len(kinds))
	for i, k := range kinds {
		b[i] = 255
		for j, v := range assertionKindValues {
			if k == v {
				b[i] = byte(j)
			}
		}
	}
	return string(b)
}

// AssertionKinds encodes the assertion kinds a request should carry as Extra.Assertions does.
func AssertionKinds(kinds []contract.AssertionOutcomeKind) string { return assertionKinds(kinds) }

// Tap is an io.Reader that passes a JSON Lines file through unchanged and reads, line by line,
// each line's Extra. Wrap the reader given to Read with it: Extras()[r.Line] is then the Extra of
// record r (lines split at '\n' as Read's scanner splits them). A line longer than
// limits.MaxDocumentBytes is not buffered (its Extra is not OK), so the tap holds at most one
// line of that size.
type Tap struct {
	r      io.Reader
	line   []byte
	skip   bool // the current line is over the limit: drop it
	extras []Extra
	done   bool
}

// NewTap wraps r.
func NewTap(r io.Reader) *Tap { return &Tap{r: r} }

func (t *Tap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.feed(p[:n])
	if err == io.EOF && !t.done {
		t.done = true
		if len(t.line) > 0 || t.skip {
			t.flush()
		}
	}
	return n, err
}

func (t *Tap) feed(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			t.add(b)
			return
		}
		if len(t.line) == 0 && !t.skip {
			t.extras = append(t.extras, ExtraOf(b[:i])) // a whole line in the chunk: no copy
		} else {
			t.add(b[:i])
			t.flush()
		}
		b = b[i+1:]
	}
}

func (t *Tap) add(b []byte) {
	if t.skip {
		return
	}
	if len(t.line)+len(b) > limits.MaxDocumentBytes {
		t.skip, t.line = true, nil
		return
	}
	t.line = append(t.line, b...)
}

func (t *Tap) flush() {
	if t.skip {
		t.extras = append(t.extras, Extra{})
	} else {
		t.extras = append(t.extras, ExtraOf(t.line))
	}
	t.line, t.skip = t.line[:0], false
}

// Extras are the lines' Extras, in file order.
func (t *Tap) Extras() []Extra { return t.extras }

// ExtraOf reads a request record line's Extra. A line without a backslash (every record the runner
// writes but those with an escaped character in an error message or an assertion's detail) is
// read by a single scan; any other by encoding/json.
func ExtraOf(line []byte) Extra {
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if bytes.IndexByte(line, '\\') >= 0 {
		return extraSlow(line)
	}
	s := extraScanner{b: line}
	e, ok := s.record()
	if !ok {
		return extraSlow(line)
	}
	e.OK = true
	return e
}

func extraSlow(line []byte) Extra {
	var d struct {
		StatusCode *int64 `json:"status_code"`
		Seed       *int64 `json:"seed"`
		Assertions []struct {
			Kind contract.AssertionOutcomeKind `json:"kind"`
		} `json:"assertions"`
	}
	if json.Unmarshal(line, &d) != nil {
		return Extra{}
	}
	e := Extra{OK: true}
	if d.StatusCode != nil {
		e.Status, e.HasStatus = *d.StatusCode, true
	}
	if d.Seed != nil {
		e.Seed, e.HasSeed = *d.Seed, true
	}
	kinds := make([]contract.AssertionOutcomeKind, len(d.Assertions))
	for i, a := range d.Assertions {
		kinds[i] = a.Kind
	}
	e.Assertions = assertionKinds(kinds)
	return e
}

// extraScanner scans a JSON line that holds no backslash (so every string ends at the next '"').
type extraScanner struct {
	b []byte
	i int
}

func (s *extraScanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\n' || s.b[s.i] == '\r') {
		s.i++
	}
}

func (s *extraScanner) eat(c byte) bool {
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *extraScanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	j := bytes.IndexByte(s.b[s.i:], '"')
	if j < 0 {
		return nil, false
	}
	v := s.b[s.i : s.i+j]
	s.i += j + 1
	return v, true
}

// num reads an integer (a number with a fraction or exponent is not one: false).
func (s *extraScanner) num() (int64, bool) {
	s.ws()
	neg := s.i < len(s.b) && s.b[s.i] == '-'
	if neg {
		s.i++
	}
	start := s.i
	var v int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		if s.i-start >= 18 {
			return 0, false
		}
		v = v*10 + int64(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || (s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E')) {
		return 0, false
	}
	if neg {
		v = -v
	}
	return v, true
}

func (s *extraScanner) null() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// skip skips one value.
func (s *extraScanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		depth := 0
		for s.i < len(s.b) {
			switch s.b[s.i] {
			case '"':
				if _, ok := s.str(); !ok {
					return false
				}
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					s.i++
					return true
				}
			}
			s.i++
		}
		return false
	}
	for s.i < len(s.b) && s.b[s.i] != ',' && s.b[s.i] != '}' && s.b[s.i] != ']' {
		s.i++
	}
	return true
}

// object calls member for each key of an object.
func (s *extraScanner) object(member func(key []byte) bool) bool {
	if !s.eat('{') {
		return false
	}
	if s.eat('}') {
		return true
	}
	for {
		k, ok := s.str()
		if !ok || !s.eat(':') || !member(k) {
			return false
		}
		if s.eat(',') {
			continue
		}
		return s.eat('}')
	}
}

// kinds reads an array of objects, calling each with each object's "kind" string.
func (s *extraScanner) kinds(each func(kind []byte)) bool {
	if !s.eat('[') {
		return false
	}
	if s.eat(']') {
		return true
	}
	for {
		var kind []byte
		ok := s.object(func(k []byte) bool {
			if string(k) == "kind" {
				v, ok := s.str()
				kind = v
				return ok
			}
			return s.skip()
		})
		if !ok {
			return false
		}
		each(kind)
		if s.eat(',') {
			continue
		}
		return s.eat(']')
	}
}

// events skips the events array. The request record contract's event is a flat object ({t_ns,
// kind, bytes}: no string of it holds a bracket), so in a valid record the array ends at its
// first ']' (bytes.IndexByte, not a byte loop: the array is most of a record's bytes); the Extra
// of an invalid line is never read.
func (s *extraScanner) events() bool {
	if !s.eat('[') {
		return false
	}
	end := bytes.IndexByte(s.b[s.i:], ']')
	if end < 0 {
		return false
	}
	s.i += end + 1
	return true
}

func (s *extraScanner) record() (Extra, bool) {
	var e Extra
	ok := s.object(func(k []byte) bool {
		switch string(k) {
		case "status_code":
			if s.null() {
				return true
			}
			v, ok := s.num()
			e.Status, e.HasStatus = v, true
			return ok
		case "seed":
			if s.null() {
				return true
			}
			v, ok := s.num()
			e.Seed, e.HasSeed = v, true
			return ok
		case "assertions":
			var kinds []contract.AssertionOutcomeKind
			ok := s.kinds(func(k []byte) { kinds = append(kinds, assertionKindOf(k)) })
			e.Assertions = assertionKinds(kinds)
			return ok
		case "events":
			return s.events()
		}
		return s.skip()
	})
	s.ws()
	return e, ok && s.i == len(s.b)
}
