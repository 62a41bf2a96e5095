package jsonstrict

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/jsonscan"
)

// Sentinel errors carried by *DecodeError (and, for numbers and strings, by
// the canonical encoders). Match them with errors.Is.
var (
	// ErrSyntax reports input that is not JSON: unexpected characters or end
	// of input, bad escapes, raw control characters in strings, a byte order
	// mark, leading zeros and other number-grammar violations.
	ErrSyntax = errors.New("invalid JSON syntax")
	// ErrDuplicateKey reports an object key that occurs twice in one object,
	// compared after unescaping.
	ErrDuplicateKey = errors.New("duplicate object key")
	// ErrNonFinite reports NaN, Infinity or -Infinity.
	ErrNonFinite = errors.New("non-finite JSON number")
	// ErrNumber reports a number that overflows or underflows float64, is not
	// exactly representable as float64, or has too many digits.
	ErrNumber = errors.New("invalid JSON number")
	// ErrTrailingData reports anything but whitespace after the document.
	ErrTrailingData = errors.New("trailing data after JSON value")
	// ErrInvalidUTF8 reports input that is not UTF-8 (including UTF-16 and
	// UTF-32 input) and escapes of lone surrogates, which have no UTF-8 form.
	ErrInvalidUTF8 = errors.New("invalid UTF-8")
	// ErrTooDeep reports nesting beyond the depth limit.
	ErrTooDeep = errors.New("JSON nesting too deep")
	// ErrTooLarge reports a document or string beyond the size limits.
	ErrTooLarge = errors.New("JSON document too large")
	// ErrUnknownField reports an object key that has no field in the Go type
	// DecodeInto fills.
	ErrUnknownField = errors.New("unknown field")
)

// DecodeError locates a problem in a JSON document.
type DecodeError struct {
	// Pointer is the RFC 6901 JSON pointer of the value or member where the
	// problem is; "" is the document root. For a problem inside an object key
	// (a bad escape, say) it is the pointer of the enclosing object.
	Pointer string
	// Offset is the byte offset into the input; -1 when the error does not
	// come from input bytes (a Go-built value given to Canonical).
	Offset int64
	// Line and Column are 1-based; Column counts bytes, as go/token does.
	// Both are 0 when Offset is -1.
	Line, Column int
	// Err is one of the sentinel errors of this package.
	Err error
	// Detail says what exactly is wrong, for people.
	Detail string
}

// Error formats the error as `pointer: problem: detail (line L, column C)`,
// printing the root pointer as "/". When Detail already starts with the text
// of Err, it is not repeated.
func (e *DecodeError) Error() string {
	var b strings.Builder
	if e.Pointer == "" {
		b.WriteString("/")
	} else {
		b.WriteString(e.Pointer)
	}
	b.WriteString(": ")
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	switch {
	case e.Detail == "":
		b.WriteString(msg)
	case msg == "" || strings.HasPrefix(e.Detail, msg):
		b.WriteString(e.Detail)
	default:
		b.WriteString(msg)
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, " (line %d, column %d)", e.Line, e.Column)
	}
	return b.String()
}

// Unwrap returns the sentinel error.
func (e *DecodeError) Unwrap() error { return e.Err }

// DecodeOption adjusts the limits of Parse and DecodeInto.
type DecodeOption func(*decodeConfig)

type decodeConfig struct {
	maxBytes int
	maxDepth int
}

// WithMaxBytes sets the largest document accepted, in bytes; n <= 0 keeps the
// default MaxDocumentBytes.
func WithMaxBytes(n int) DecodeOption {
	return func(c *decodeConfig) {
		if n > 0 {
			c.maxBytes = n
		}
	}
}

// WithMaxDepth sets the deepest nesting of arrays and objects accepted; n <= 0
// keeps the default MaxDepth, and values above 10000 are lowered to 10000.
func WithMaxDepth(n int) DecodeOption {
	return func(c *decodeConfig) {
		if n > 0 {
			c.maxDepth = min(n, maxDepthCeiling)
		}
	}
}

func newDecodeConfig(opts []DecodeOption) decodeConfig {
	c := decodeConfig{maxBytes: MaxDocumentBytes, maxDepth: MaxDepth}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// Parse parses one JSON document strictly into a tree of map[string]any,
// []any, string, json.Number (the literal exactly as written), bool and nil.
//
// Beyond RFC 8259 grammar it rejects documents larger than the byte limit or
// nested deeper than the depth limit; invalid UTF-8, a byte order mark and
// UTF-16 input; duplicate keys (compared after unescaping); NaN and
// ±Infinity; floats that overflow, underflow to zero, or whose decimal value
// differs from the shortest round-trip form of the nearest float64; integers
// of more than MaxIntegerDigits digits; lone surrogate escapes; and trailing
// data. Every error is a *DecodeError.
//
// Strings, keys and number literals in the result share one copy of data.
func Parse(data []byte, opts ...DecodeOption) (any, error) {
	cfg := newDecodeConfig(opts)
	v, err := parse(data, cfg)
	if err != nil {
		return nil, err
	}
	return v, nil
}

func parse(data []byte, cfg decodeConfig) (any, *DecodeError) {
	if err := checkEncoding(data, cfg); err != nil {
		return nil, err
	}
	p := parser{data: data, s: string(data), maxDepth: cfg.maxDepth}
	return p.document()
}

// locateKeys parses data again and returns the offsets of the object keys
// whose pointers are targets (-1 where not found).
func locateKeys(data []byte, cfg decodeConfig, targets [][]pathSeg) []int {
	p := parser{data: data, s: string(data), maxDepth: cfg.maxDepth, targets: targets, found: make([]int, len(targets))}
	for i := range p.found {
		p.found[i] = -1
	}
	p.document()
	return p.found
}

// checkEncoding applies the checks on the document as a whole.
func checkEncoding(data []byte, cfg decodeConfig) *DecodeError {
	switch {
	case len(data) > cfg.maxBytes:
		return newDecodeError(data, int64(cfg.maxBytes), "", ErrTooLarge,
			fmt.Sprintf("document is %d bytes, more than the limit of %d", len(data), cfg.maxBytes))
	case len(data) == 0:
		return newDecodeError(data, 0, "", ErrSyntax, "empty input")
	case looksUTF16(data):
		return newDecodeError(data, 0, "", ErrInvalidUTF8, "input looks like UTF-16 or UTF-32; JSON must be UTF-8")
	case bytes.HasPrefix(data, []byte("\xef\xbb\xbf")):
		return newDecodeError(data, 0, "", ErrSyntax, "UTF-8 byte order mark is not allowed")
	}
	return nil
}

// document parses one value surrounded by optional whitespace.
func (p *parser) document() (any, *DecodeError) {
	p.skipWS()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipWS()
	if p.pos < len(p.s) {
		if e := p.badUTF8(p.pos); e != nil {
			return nil, e
		}
		return nil, p.fail(p.pos, ErrTrailingData, "unexpected "+describeByte(p.s, p.pos))
	}
	return v, nil
}

// looksUTF16 reports a UTF-16 or UTF-32 byte order mark, or a NUL byte among
// the first two (JSON text starts with an ASCII character, which UTF-16 and
// UTF-32 encode with a zero byte beside it).
func looksUTF16(b []byte) bool {
	if len(b) < 2 {
		return false
	}
	if (b[0] == 0xfe && b[1] == 0xff) || (b[0] == 0xff && b[1] == 0xfe) {
		return true
	}
	return b[0] == 0 || b[1] == 0
}

// pathSeg is one step of a JSON pointer: an object key, or an array index
// when index >= 0.
type pathSeg struct {
	key   string
	index int
}

func pathPointer(path []pathSeg) string {
	if len(path) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range path {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
			continue
		}
		if !strings.ContainsAny(s.key, "~/") {
			b.WriteString(s.key)
			continue
		}
		for i := 0; i < len(s.key); i++ {
			switch c := s.key[i]; c {
			case '~':
				b.WriteString("~0")
			case '/':
				b.WriteString("~1")
			default:
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

func newDecodeError(data []byte, off int64, ptr string, sentinel error, detail string) *DecodeError {
	line, col := position(data, off)
	return &DecodeError{Pointer: ptr, Offset: off, Line: line, Column: col, Err: sentinel, Detail: detail}
}

// position turns a byte offset into a 1-based line and byte column.
func position(data []byte, off int64) (line, col int) {
	if off < 0 {
		return 0, 0
	}
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	head := data[:off]
	line = 1 + bytes.Count(head, []byte{'\n'})
	col = int(off) - (bytes.LastIndexByte(head, '\n') + 1) + 1
	return line, col
}

type member struct {
	key string
	val any
	off int
}

type parser struct {
	data     []byte
	s        string // one copy of data; results are substrings of it
	pos      int
	depth    int
	maxDepth int
	path     []pathSeg
	vals     []any    // scratch stack of array elements
	members  []member // scratch stack of object members
	buf      []byte   // scratch for unescaping

	// locate mode (DecodeInto's error path): offsets of the keys whose
	// pointers are in targets.
	targets [][]pathSeg
	found   []int
}

func (p *parser) fail(off int, sentinel error, detail string) *DecodeError {
	return newDecodeError(p.data, int64(off), pathPointer(p.path), sentinel, detail)
}

// badUTF8 returns an ErrInvalidUTF8 error when the bytes at off do not start
// a valid UTF-8 sequence.
func (p *parser) badUTF8(off int) *DecodeError {
	if off < len(p.s) && p.s[off] >= utf8.RuneSelf {
		if r, size := utf8.DecodeRuneInString(p.s[off:]); r == utf8.RuneError && size == 1 {
			return p.fail(off, ErrInvalidUTF8, fmt.Sprintf("invalid UTF-8 byte 0x%02x", p.s[off]))
		}
	}
	return nil
}

// unexpected reports the byte at off, which is not what the grammar wants.
func (p *parser) unexpected(off int, want string) *DecodeError {
	if off >= len(p.s) {
		return p.fail(off, ErrSyntax, "unexpected end of input, want "+want)
	}
	if e := p.badUTF8(off); e != nil {
		return e
	}
	return p.fail(off, ErrSyntax, "unexpected "+describeByte(p.s, off)+", want "+want)
}

func describeByte(s string, off int) string {
	r, _ := utf8.DecodeRuneInString(s[off:])
	if r < 0x20 || r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", s[off])
	}
	return fmt.Sprintf("character %q", r)
}

func (p *parser) skipWS() { p.pos = jsonscan.Space(p.s, p.pos) }

func (p *parser) value() (any, *DecodeError) {
	if p.pos >= len(p.s) {
		return nil, p.unexpected(p.pos, "a JSON value")
	}
	switch c := p.s[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return nil, p.literal("null")
	case 'N':
		return nil, p.nonFinite("NaN")
	case 'I':
		return nil, p.nonFinite("Infinity")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return p.number()
		}
		return nil, p.unexpected(p.pos, "a JSON value")
	}
}

func (p *parser) literal(word string) *DecodeError {
	if strings.HasPrefix(p.s[p.pos:], word) {
		p.pos += len(word)
		return nil
	}
	i := 0
	for i < len(word) && p.pos+i < len(p.s) && p.s[p.pos+i] == word[i] {
		i++
	}
	return p.unexpected(p.pos+i, strconv.Quote(word))
}

func (p *parser) nonFinite(word string) *DecodeError {
	start := p.pos
	if p.s[start] == '-' {
		p.pos++
	}
	if strings.HasPrefix(p.s[p.pos:], word) {
		return p.fail(start, ErrNonFinite, "non-finite JSON number is not allowed: "+p.s[start:p.pos+len(word)])
	}
	return p.unexpected(p.pos, "a JSON value")
}

func (p *parser) object() (any, *DecodeError) {
	open := p.pos
	if p.depth >= p.maxDepth {
		return nil, p.fail(open, ErrTooDeep, fmt.Sprintf("more than %d nested arrays and objects", p.maxDepth))
	}
	p.depth++
	p.pos++
	p.skipWS()
	if p.pos < len(p.s) && p.s[p.pos] == '}' {
		p.pos++
		p.depth--
		return map[string]any{}, nil
	}
	base := len(p.members)
	for {
		if p.pos >= len(p.s) || p.s[p.pos] != '"' {
			return nil, p.unexpected(p.pos, "an object key")
		}
		keyOff := p.pos
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipWS()
		if p.pos >= len(p.s) || p.s[p.pos] != ':' {
			return nil, p.unexpected(p.pos, `":" after object key`)
		}
		p.pos++
		p.skipWS()
		p.path = append(p.path, pathSeg{key: key, index: -1})
		if p.targets != nil {
			p.mark(keyOff)
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		p.members = append(p.members, member{key: key, val: v, off: keyOff})
		p.skipWS()
		if p.pos >= len(p.s) {
			return nil, p.unexpected(p.pos, `"," or "}"`)
		}
		if c := p.s[p.pos]; c == ',' {
			p.pos++
			p.skipWS()
			continue
		} else if c != '}' {
			return nil, p.unexpected(p.pos, `"," or "}"`)
		}
		p.pos++
		break
	}
	ms := p.members[base:]
	m := make(map[string]any, len(ms))
	for i := range ms {
		n := len(m)
		m[ms[i].key] = ms[i].val
		if len(m) == n {
			p.path = append(p.path, pathSeg{key: ms[i].key, index: -1})
			return nil, p.fail(ms[i].off, ErrDuplicateKey, fmt.Sprintf("key %s repeated", quoteDetail(ms[i].key)))
		}
	}
	clear(ms)
	p.members = p.members[:base]
	p.depth--
	return m, nil
}

// mark records the offset of the current key when the current path is one of
// the targets.
func (p *parser) mark(keyOff int) {
	for i, t := range p.targets {
		if p.found[i] < 0 && pathEqual(t, p.path) {
			p.found[i] = keyOff
		}
	}
}

func pathEqual(a, b []pathSeg) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func (p *parser) array() (any, *DecodeError) {
	open := p.pos
	if p.depth >= p.maxDepth {
		return nil, p.fail(open, ErrTooDeep, fmt.Sprintf("more than %d nested arrays and objects", p.maxDepth))
	}
	p.depth++
	p.pos++
	p.skipWS()
	if p.pos < len(p.s) && p.s[p.pos] == ']' {
		p.pos++
		p.depth--
		return []any{}, nil
	}
	base := len(p.vals)
	p.path = append(p.path, pathSeg{index: 0})
	seg := len(p.path) - 1
	for i := 0; ; i++ {
		p.path[seg].index = i
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.vals = append(p.vals, v)
		p.skipWS()
		if p.pos < len(p.s) && p.s[p.pos] == ',' {
			p.pos++
			p.skipWS()
			continue
		}
		if p.pos >= len(p.s) || p.s[p.pos] != ']' {
			p.path = p.path[:seg] // the problem is the array's
			return nil, p.unexpected(p.pos, `"," or "]"`)
		}
		p.pos++
		break
	}
	p.path = p.path[:seg]
	vs := p.vals[base:]
	out := make([]any, len(vs))
	copy(out, vs)
	clear(vs)
	p.vals = p.vals[:base]
	p.depth--
	return out, nil
}

// str reads a string starting at the opening quote. Strings without escapes
// are substrings of p.s and cost no allocation.
func (p *parser) str() (string, *DecodeError) {
	s := p.s
	start := p.pos + 1
	stop, prob := jsonscan.Plain(s, start), jsonscan.OK
	if stop >= len(s) || s[stop] != '"' {
		stop, prob = jsonscan.Unescaped(s, stop)
	}
	if prob != jsonscan.OK {
		return "", p.stringProblem(stop, prob)
	}
	if s[stop] == '"' {
		if stop-start > MaxStringBytes {
			return "", p.fail(p.pos, ErrTooLarge, fmt.Sprintf("string longer than %d bytes", MaxStringBytes))
		}
		p.pos = stop + 1
		return s[start:stop], nil
	}
	b, end, prob := jsonscan.AppendString(append(p.buf[:0], s[start:stop]...), s, stop)
	p.buf = b[:0]
	if prob != jsonscan.OK {
		return "", p.stringProblem(end, prob)
	}
	if len(b) > MaxStringBytes {
		return "", p.fail(p.pos, ErrTooLarge, fmt.Sprintf("string longer than %d bytes", MaxStringBytes))
	}
	p.pos = end
	return string(b), nil
}

// stringProblem is the error of the string at p.pos that the scanner core found malformed at
// off.
func (p *parser) stringProblem(off int, prob jsonscan.Problem) *DecodeError {
	s := p.s
	switch prob {
	case jsonscan.Control:
		return p.fail(off, ErrSyntax, fmt.Sprintf("unescaped control character 0x%02x in string", s[off]))
	case jsonscan.InvalidUTF8:
		return p.fail(off, ErrInvalidUTF8, fmt.Sprintf("invalid UTF-8 byte 0x%02x in string", s[off]))
	case jsonscan.ShortHex, jsonscan.InvalidHex:
		return p.fail(off, ErrSyntax, `invalid \u escape: want four hex digits`)
	case jsonscan.LoneSurrogate:
		r, _ := jsonscan.Hex4(s, off+2)
		return p.fail(off, ErrInvalidUTF8, fmt.Sprintf(`lone surrogate \u%04x has no UTF-8 form`, r))
	case jsonscan.InvalidEscape:
		if e := p.badUTF8(off + 1); e != nil {
			return e
		}
		return p.fail(off, ErrSyntax, "invalid escape \\"+describeByte(s, off+1))
	}
	return p.fail(p.pos, ErrSyntax, "unterminated string")
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (p *parser) number() (any, *DecodeError) {
	s := p.s
	start := p.pos
	if s[start] == '-' && start+1 < len(s) && s[start+1] == 'I' {
		return nil, p.nonFinite("Infinity")
	}
	end, intDigits, isFloat, prob := jsonscan.Number(s, start)
	switch prob {
	case jsonscan.LeadingZero:
		return nil, p.fail(start, ErrSyntax, "leading zeros are not allowed in numbers")
	case jsonscan.Fraction:
		return nil, p.unexpected(end, "a digit after the decimal point")
	case jsonscan.Exponent:
		return nil, p.unexpected(end, "a digit in the exponent")
	case jsonscan.Digit:
		return nil, p.unexpected(end, "a digit")
	}
	lit := s[start:end]
	if !isFloat {
		if intDigits > MaxIntegerDigits {
			return nil, p.fail(start, ErrNumber, fmt.Sprintf("integer has %d digits, more than %d", intDigits, MaxIntegerDigits))
		}
	} else if prob := checkFloatLiteral(lit); prob != numOK {
		return nil, p.fail(start, ErrNumber, prob.describe(lit))
	}
	p.pos = end
	return json.Number(lit), nil
}

// numProblem classifies why a number literal has no exact float64 value.
type numProblem int

const (
	numOK numProblem = iota
	numOverflow
	numUnderflow
	numInexact
	numGrammar
)

func (n numProblem) describe(lit string) string {
	short := lit
	if len(short) > 64 {
		short = short[:60] + "..."
	}
	switch n {
	case numOverflow:
		return short + " overflows float64"
	case numUnderflow:
		return short + " underflows to zero in float64"
	case numInexact:
		return short + " is not exactly representable as float64"
	case numGrammar:
		return strconv.Quote(short) + " is not a JSON number"
	}
	return ""
}

// decimalForm is a number literal reduced to 0.digits × 10^exp, with the
// significant digits split across the integer and fraction parts of the
// literal; digits "" means zero.
type decimalForm struct {
	lit          string
	neg          bool
	intS, intE   int // integer digits
	fracS, fracE int // fraction digits
	first, last  int // significant digits, indexes into int ++ frac
	exp          int64
	litExp       int64 // exponent written in the literal (saturated)
}

func (d *decimalForm) at(k int) byte {
	if n := d.intE - d.intS; k < n {
		return d.lit[d.intS+k]
	}
	return d.lit[d.fracS+k-(d.intE-d.intS)]
}

func (d *decimalForm) zero() bool { return d.first > d.last }

func (d *decimalForm) nsig() int { return d.last - d.first + 1 }

// scanNumber checks lit against the JSON number grammar and reduces it.
func scanNumber(lit string) (d decimalForm, isFloat, ok bool) {
	d.lit = lit
	i := 0
	if i < len(lit) && lit[i] == '-' {
		d.neg = true
		i++
	}
	d.intS = i
	if i < len(lit) && lit[i] == '0' {
		i++
	} else {
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
	}
	d.intE = i
	if d.intE == d.intS {
		return d, false, false
	}
	d.fracS, d.fracE = i, i
	if i < len(lit) && lit[i] == '.' {
		i++
		d.fracS = i
		for i < len(lit) && isDigit(lit[i]) {
			i++
		}
		d.fracE = i
		if d.fracE == d.fracS {
			return d, false, false
		}
		isFloat = true
	}
	if i < len(lit) && (lit[i] == 'e' || lit[i] == 'E') {
		i++
		neg := false
		if i < len(lit) && (lit[i] == '+' || lit[i] == '-') {
			neg = lit[i] == '-'
			i++
		}
		es := i
		for i < len(lit) && isDigit(lit[i]) {
			if d.litExp < 1e12 {
				d.litExp = d.litExp*10 + int64(lit[i]-'0')
			}
			i++
		}
		if i == es {
			return d, false, false
		}
		if neg {
			d.litExp = -d.litExp
		}
		isFloat = true
	}
	if i != len(lit) {
		return d, false, false
	}
	total := (d.intE - d.intS) + (d.fracE - d.fracS)
	d.first, d.last = 0, total-1
	for d.first < total && d.at(d.first) == '0' {
		d.first++
	}
	for d.last >= d.first && d.at(d.last) == '0' {
		d.last--
	}
	d.exp = int64(d.intE-d.intS-d.first) + d.litExp
	return d, isFloat, true
}

// floatValue returns the float64 nearest to the JSON number literal lit and
// whether that float64 stands for lit exactly: the decimal value of lit must
// equal the decimal value of the float's shortest round-trip form (as Kiln's
// Decimal(str(float(x))) == Decimal(x)), which is the same as comparing the
// significant digits and decimal exponent of both. It never allocates for
// ordinary literals.
func floatValue(lit string) (float64, numProblem) {
	d, _, ok := scanNumber(lit)
	if !ok {
		return 0, numGrammar
	}
	return d.float()
}

// checkFloatLiteral is floatValue's verdict without the float64. A literal
// of at most 15 significant digits in the normal range needs no conversion:
// float64 keeps 15 decimal digits (DBL_DIG), so its nearest float64 has that
// literal as its shortest round-trip form.
func checkFloatLiteral(lit string) numProblem {
	d, _, ok := scanNumber(lit)
	if !ok {
		return numGrammar
	}
	if d.zero() || (d.nsig() <= 15 && d.exp > -300 && d.exp < 300) {
		return numOK
	}
	_, prob := d.float()
	return prob
}

func (d *decimalForm) float() (float64, numProblem) {
	if d.zero() {
		if d.neg {
			return math.Copysign(0, -1), numOK
		}
		return 0, numOK
	}
	// The largest float64 is below 1e309 = 0.1e310 and the smallest
	// non-zero one above 1e-324 = 0.1e-323.
	if d.exp > 310 {
		return math.Inf(1), numOverflow
	}
	if d.exp < -324 {
		return 0, numUnderflow
	}
	var f float64
	var err error
	if d.litExp > -5000 && d.litExp < 5000 {
		// strconv reads exponents exactly up to 10000.
		f, err = strconv.ParseFloat(d.lit, 64)
	} else {
		f, err = strconv.ParseFloat(d.normalized(), 64)
	}
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, numGrammar
	}
	if math.IsInf(f, 0) {
		return f, numOverflow
	}
	if f == 0 {
		return f, numUnderflow
	}
	if d.nsig() > 17 {
		return f, numInexact
	}
	var buf [32]byte
	short := strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64)
	digits, exp := splitShortest(short)
	if len(digits) != d.nsig() || exp != d.exp {
		return f, numInexact
	}
	for k := range digits {
		if digits[k] != d.at(d.first+k) {
			return f, numInexact
		}
	}
	return f, numOK
}

// normalized writes the literal as [-]0.DIGITSeEXP, for literals whose
// written exponent strconv would misread.
func (d *decimalForm) normalized() string {
	var b []byte
	if d.neg {
		b = append(b, '-')
	}
	b = append(b, "0."...)
	for k := d.first; k <= d.last; k++ {
		b = append(b, d.at(k))
	}
	b = append(b, 'e')
	b = strconv.AppendInt(b, d.exp, 10)
	return string(b)
}

// splitShortest splits strconv's 'e' format "d.ddde±XX" into its digits
// (returned in place, trailing zeros removed) and the exponent of the form
// 0.digits × 10^exp.
func splitShortest(b []byte) ([]byte, int64) {
	e := bytes.IndexByte(b, 'e')
	mant, expPart := b[:e], b[e+1:]
	x, _ := strconv.ParseInt(string(expPart), 10, 64)
	digits := mant
	if len(mant) > 2 && mant[1] == '.' {
		copy(mant[1:], mant[2:])
		digits = mant[:len(mant)-1]
	}
	for len(digits) > 1 && digits[len(digits)-1] == '0' {
		digits = digits[:len(digits)-1]
	}
	return digits, x + 1
}

// DecodeInto parses data strictly, as Parse does, then decodes it into v (a
// non-nil pointer, usually to a struct) rejecting unknown fields: every
// object key must name a field of the Go type at that place, by its json tag
// or field name (matched exactly, not case-insensitively), including fields
// promoted from embedded structs; maps accept any key; interfaces,
// json.RawMessage and types implementing json.Unmarshaler or
// encoding.TextUnmarshaler accept anything. An unknown key is a *DecodeError
// with ErrUnknownField and the pointer of the first unknown member in
// document order. The checked bytes are then decoded with encoding/json
// (UseNumber, DisallowUnknownFields); its errors are returned wrapped.
func DecodeInto(data []byte, v any, opts ...DecodeOption) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("decode into %T: target must be a non-nil pointer", v)
	}
	cfg := newDecodeConfig(opts)
	tree, derr := parse(data, cfg)
	if derr != nil {
		return derr
	}
	w := fieldWalker{fields: map[reflect.Type]map[string]reflect.Type{}}
	w.walk(tree, rv.Type().Elem())
	if len(w.unknown) > 0 {
		return unknownFieldError(data, cfg, w.unknown)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decode into %T: %w", v, err)
	}
	return nil
}

type unknownField struct {
	path  []pathSeg
	owner reflect.Type
}

// unknownFieldError reports the unknown member that comes first in the
// input; a second parse finds the offsets of their keys.
func unknownFieldError(data []byte, cfg decodeConfig, unknown []unknownField) error {
	targets := make([][]pathSeg, len(unknown))
	for i, u := range unknown {
		targets[i] = u.path
	}
	found := locateKeys(data, cfg, targets)
	best := 0
	for i := range unknown {
		if found[i] >= 0 && (found[best] < 0 || found[i] < found[best]) {
			best = i
		}
	}
	off := int64(found[best])
	u := unknown[best]
	key := u.path[len(u.path)-1].key
	return newDecodeError(data, off, pathPointer(u.path), ErrUnknownField,
		fmt.Sprintf("%s is not a field of %s", quoteDetail(key), u.owner))
}

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func acceptsAnything(t reflect.Type) bool {
	if t.Kind() == reflect.Interface {
		return true
	}
	pt := reflect.PointerTo(t)
	return t.Implements(jsonUnmarshalerType) || pt.Implements(jsonUnmarshalerType) ||
		t.Implements(textUnmarshalerType) || pt.Implements(textUnmarshalerType)
}

// fieldWalker compares a parsed tree with a Go type and collects the object
// keys the type has no field for.
type fieldWalker struct {
	fields  map[reflect.Type]map[string]reflect.Type
	path    []pathSeg
	unknown []unknownField
}

func (w *fieldWalker) walk(v any, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		if acceptsAnything(t) {
			return
		}
		t = t.Elem()
	}
	if acceptsAnything(t) {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return // a type mismatch: encoding/json reports it
		}
		fields := w.structFields(t)
		for k, val := range m {
			w.path = append(w.path, pathSeg{key: k, index: -1})
			if ft, ok := fields[k]; ok {
				w.walk(val, ft)
			} else {
				w.unknown = append(w.unknown, unknownField{path: append([]pathSeg(nil), w.path...), owner: t})
			}
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, val := range m {
			w.path = append(w.path, pathSeg{key: k, index: -1})
			w.walk(val, t.Elem())
			w.path = w.path[:len(w.path)-1]
		}
	case reflect.Slice, reflect.Array:
		a, ok := v.([]any)
		if !ok {
			return
		}
		for i, val := range a {
			w.path = append(w.path, pathSeg{index: i})
			w.walk(val, t.Elem())
			w.path = w.path[:len(w.path)-1]
		}
	}
}

// structFields returns the JSON member names of struct type t and their
// types, following encoding/json's rules: json tag names, `json:"-"`
// skipped, unexported fields skipped, fields of untagged embedded structs
// promoted, and among fields with one name the shallowest wins, then the
// tagged one; a tie hides the name.
func (w *fieldWalker) structFields(t reflect.Type) map[string]reflect.Type {
	if f, ok := w.fields[t]; ok {
		return f
	}
	type cand struct {
		typ    reflect.Type
		depth  int
		tagged bool
		count  int // candidates of this name at this depth
		nTag   int // tagged candidates of this name at this depth
	}
	best := map[string]*cand{}
	type level struct {
		t     reflect.Type
		depth int
	}
	current := []level{{t, 0}}
	visited := map[reflect.Type]bool{}
	for len(current) > 0 {
		var next []level
		for _, lv := range current {
			if visited[lv.t] {
				continue
			}
			visited[lv.t] = true
			for i := 0; i < lv.t.NumField(); i++ {
				sf := lv.t.Field(i)
				if sf.Anonymous {
					ft := sf.Type
					if ft.Kind() == reflect.Pointer {
						ft = ft.Elem()
					}
					if !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTagName(name) {
					name = ""
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name == "" && sf.Anonymous && ft.Kind() == reflect.Struct {
					next = append(next, level{ft, lv.depth + 1})
					continue
				}
				tagged := name != ""
				if name == "" {
					name = sf.Name
				}
				c := best[name]
				switch {
				case c == nil:
					best[name] = &cand{typ: sf.Type, depth: lv.depth, tagged: tagged, count: 1, nTag: btoi(tagged)}
				case c.depth == lv.depth:
					c.count++
					c.nTag += btoi(tagged)
					if tagged && !c.tagged {
						c.typ, c.tagged = sf.Type, true
					}
				}
			}
		}
		current = next
	}
	out := make(map[string]reflect.Type, len(best))
	for name, c := range best {
		if c.count == 1 || c.nTag == 1 {
			out[name] = c.typ
		}
	}
	w.fields[t] = out
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// validTagName mirrors encoding/json's isValidTag.
func validTagName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// quoteDetail quotes a key for an error detail, shortening long ones.
func quoteDetail(s string) string {
	if len(s) > 128 {
		cut := 120
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		return strconv.Quote(s[:cut]) + "..."
	}
	return strconv.Quote(s)
}
