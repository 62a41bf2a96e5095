package jsonstrict

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Sentinel errors of the self-hash checks.
var (
	// ErrSelfHashMismatch reports a recorded self-hash that differs from the
	// hash of the document's canonical form.
	ErrSelfHashMismatch = errors.New("self-hash mismatch")
	// ErrSelfHashMissing reports a document without its self-hash field, or
	// with a field that is not a string.
	ErrSelfHashMissing = errors.New("self-hash missing")
)

// Canonical returns the RFC 8785 (JSON Canonicalization Scheme) form of v.
//
// v is a tree as Parse returns it; Go-built values work too: float64,
// float32 (read as encoding/json writes it), signed and unsigned integers,
// json.RawMessage (parsed strictly), and anything else encoding/json can
// marshal (structs, typed maps and slices), which is marshalled and parsed
// strictly first.
//
// Object keys are sorted by UTF-16 code units; strings are escaped as
// ECMAScript's JSON.stringify does; numbers are written by ECMAScript's
// Number::toString applied to the float64 they denote. A number with no
// exact float64 (an integer literal such as 9007199254740993 that is neither
// the float's exact value nor its shortest round-trip form, or an inexact
// float literal) is an error wrapping ErrNumber rather than silently rounded;
// NaN and infinities wrap ErrNonFinite; invalid UTF-8 wraps ErrInvalidUTF8.
// Errors are *DecodeError values with Offset -1 and the pointer of the value.
func Canonical(v any) ([]byte, error) {
	e := encoder{}
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// CanonicalJSON parses data strictly (see Parse) and returns its RFC 8785
// canonical form.
func CanonicalJSON(data []byte) ([]byte, error) {
	v, err := Parse(data)
	if err != nil {
		return nil, err
	}
	return Canonical(v)
}

// KilnCanonical returns the canonical form Kiln's Python harness hashes:
// json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=ascii,
// allow_nan=False). Keys are sorted by code point, there is no whitespace,
// json.Number literals are written verbatim (300.0 stays 300.0, -0.0 stays
// -0.0), Go floats as Python's repr writes them, and strings are escaped as
// Python's json module does: with ascii every character outside ' '..'~' is
// written \uXXXX (lowercase hex, surrogate pairs above U+FFFF); without it
// only '"', '\\' and control characters are escaped and the rest is kept as
// UTF-8.
func KilnCanonical(v any, ascii bool) ([]byte, error) {
	e := encoder{kiln: true, ascii: ascii}
	if err := e.value(v); err != nil {
		return nil, err
	}
	return e.buf, nil
}

// SelfHash returns "sha256:<hex>" of the RFC 8785 canonical form of doc
// without its top-level member field. doc is a JSON object: a map[string]any
// as Parse returns it, or a Go value that encodes to an object (a struct such
// as NextTokenResultDoc), which is marshalled and parsed strictly first.
func SelfHash(doc any, field string) (string, error) {
	if _, ok := doc.(map[string]any); !ok {
		tree, err := toTree(doc)
		if err != nil {
			return "", fmt.Errorf("self-hash %s: %w", field, err)
		}
		doc = tree
	}
	return selfHash(doc, field, &encoder{})
}

// toTree turns a Go value into the tree Parse would return for its JSON.
func toTree(v any) (any, error) {
	b, err := Canonical(v)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// VerifySelfHashJSON parses data strictly and checks its self-hash member
// field (see VerifySelfHash): a mismatch names the recorded and the computed
// digest.
func VerifySelfHashJSON(data []byte, field string) error {
	doc, err := Parse(data)
	if err != nil {
		return err
	}
	return VerifySelfHash(doc, field)
}

// KilnSelfHash is SelfHash over KilnCanonical(doc, ascii) instead of the RFC
// 8785 form.
func KilnSelfHash(doc any, field string, ascii bool) (string, error) {
	return selfHash(doc, field, &encoder{kiln: true, ascii: ascii})
}

func selfHash(doc any, field string, e *encoder) (string, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return "", fmt.Errorf("self-hash %s: document is %T, want a JSON object", field, doc)
	}
	if err := e.object(m, field, true); err != nil {
		return "", err
	}
	sum := sha256.Sum256(e.buf)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// VerifySelfHash checks that doc[field] is a string equal to
// SelfHash(doc, field). A missing or non-string field is an error wrapping
// ErrSelfHashMissing; a different value is an error wrapping
// ErrSelfHashMismatch that names the recorded and the computed hash.
func VerifySelfHash(doc any, field string) error {
	got, err := recordedSelfHash(doc, field)
	if err != nil {
		return err
	}
	want, err := SelfHash(doc, field)
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("%w: %s is %s, want %s", ErrSelfHashMismatch, field, got, want)
	}
	return nil
}

// VerifyKilnSelfHash checks doc[field] against KilnSelfHash. It accepts a
// match with either ascii=true or ascii=false: Kiln's sources disagree on
// ensure_ascii (the report on its harness says canonical_sha256 passes
// ensure_ascii=True, while the fixture notes say non-ASCII is kept), and the
// two forms differ only for documents with non-ASCII text or U+007F.
func VerifyKilnSelfHash(doc any, field string) error {
	got, err := recordedSelfHash(doc, field)
	if err != nil {
		return err
	}
	wantASCII, err := KilnSelfHash(doc, field, true)
	if err != nil {
		return err
	}
	if got == wantASCII {
		return nil
	}
	wantUTF8, err := KilnSelfHash(doc, field, false)
	if err != nil {
		return err
	}
	if got == wantUTF8 {
		return nil
	}
	if wantUTF8 == wantASCII {
		return fmt.Errorf("%w: %s is %s, want %s", ErrSelfHashMismatch, field, got, wantASCII)
	}
	return fmt.Errorf("%w: %s is %s, want %s (ensure_ascii) or %s (UTF-8)", ErrSelfHashMismatch, field, got, wantASCII, wantUTF8)
}

func recordedSelfHash(doc any, field string) (string, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return "", fmt.Errorf("self-hash %s: document is %T, want a JSON object", field, doc)
	}
	raw, ok := m[field]
	if !ok {
		return "", fmt.Errorf("%w: no field %s", ErrSelfHashMissing, field)
	}
	s, ok := raw.(string)
	if !ok {
		return "", fmt.Errorf("%w: field %s is %T, want a string", ErrSelfHashMissing, field, raw)
	}
	return s, nil
}

// encoder writes canonical JSON: RFC 8785, or Kiln's form when kiln is set.
type encoder struct {
	buf   []byte
	kiln  bool
	ascii bool // Kiln only: ensure_ascii
	path  []pathSeg
	depth int
}

func (e *encoder) fail(sentinel error, detail string) error {
	return &DecodeError{Pointer: pathPointer(e.path), Offset: -1, Err: sentinel, Detail: detail}
}

func (e *encoder) value(v any) error {
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, x)
	case string:
		return e.str(x)
	case json.Number:
		return e.number(string(x))
	case float64:
		return e.float(x)
	case float32:
		// Read as encoding/json writes a float32: its shortest float32 form.
		f, _ := strconv.ParseFloat(strconv.FormatFloat(float64(x), 'g', -1, 32), 64)
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			f = float64(x)
		}
		return e.float(f)
	case int:
		return e.integer(int64(x))
	case int8:
		return e.integer(int64(x))
	case int16:
		return e.integer(int64(x))
	case int32:
		return e.integer(int64(x))
	case int64:
		return e.integer(x)
	case uint:
		return e.unsigned(uint64(x))
	case uint8:
		return e.unsigned(uint64(x))
	case uint16:
		return e.unsigned(uint64(x))
	case uint32:
		return e.unsigned(uint64(x))
	case uint64:
		return e.unsigned(x)
	case map[string]any:
		return e.object(x, "", false)
	case []any:
		return e.array(x)
	case json.RawMessage:
		tree, err := Parse(x)
		if err != nil {
			return err
		}
		return e.value(tree)
	default:
		data, err := json.Marshal(x)
		if err != nil {
			return fmt.Errorf("canonical JSON at %s: %w", rootSlash(pathPointer(e.path)), err)
		}
		tree, err := Parse(data, WithMaxBytes(math.MaxInt), WithMaxDepth(maxDepthCeiling))
		if err != nil {
			return err
		}
		return e.value(tree)
	}
	return nil
}

func rootSlash(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

func (e *encoder) enter() error {
	if e.depth >= maxDepthCeiling {
		return e.fail(ErrTooDeep, fmt.Sprintf("more than %d nested arrays and objects", maxDepthCeiling))
	}
	e.depth++
	return nil
}

func (e *encoder) object(m map[string]any, skip string, hasSkip bool) error {
	if err := e.enter(); err != nil {
		return err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		if hasSkip && k == skip {
			continue
		}
		if !utf8.ValidString(k) {
			e.path = append(e.path, pathSeg{key: k, index: -1})
			return e.fail(ErrInvalidUTF8, "object key is not valid UTF-8")
		}
		keys = append(keys, k)
	}
	if e.kiln {
		slices.Sort(keys) // byte order of UTF-8 is code point order
	} else {
		slices.SortFunc(keys, compareUTF16)
	}
	e.buf = append(e.buf, '{')
	for i, k := range keys {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.path = append(e.path, pathSeg{key: k, index: -1})
		if err := e.str(k); err != nil {
			return err
		}
		e.buf = append(e.buf, ':')
		if err := e.value(m[k]); err != nil {
			return err
		}
		e.path = e.path[:len(e.path)-1]
	}
	e.buf = append(e.buf, '}')
	e.depth--
	return nil
}

func (e *encoder) array(a []any) error {
	if err := e.enter(); err != nil {
		return err
	}
	e.buf = append(e.buf, '[')
	e.path = append(e.path, pathSeg{})
	for i, v := range a {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.path[len(e.path)-1].index = i
		if err := e.value(v); err != nil {
			return err
		}
	}
	e.path = e.path[:len(e.path)-1]
	e.buf = append(e.buf, ']')
	e.depth--
	return nil
}

// compareUTF16 orders strings by their UTF-16 code units, as RFC 8785
// §3.2.3 requires. It differs from byte order only where a character above
// U+FFFF (a surrogate pair, 0xD800–0xDFFF) meets one in U+E000–U+FFFF.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return cmp.Compare(len(a), len(b))
	}
	for i > 0 && !utf8.RuneStart(a[i]) {
		i--
	}
	ra, _ := utf8.DecodeRuneInString(a[i:])
	rb, _ := utf8.DecodeRuneInString(b[i:])
	return cmp.Compare(utf16Key(ra), utf16Key(rb))
}

// utf16Key maps a rune to a number whose order is the order of the rune's
// UTF-16 code units.
func utf16Key(r rune) uint32 {
	if r < 0x10000 {
		return uint32(r) << 16
	}
	r -= 0x10000
	return uint32(0xd800+(r>>10))<<16 | uint32(0xdc00+(r&0x3ff))
}

const hexDigits = "0123456789abcdef"

// str writes a string. RFC 8785 and Kiln without ensure_ascii escape only
// '"', '\\' and control characters (\b \t \n \f \r by name, the rest as
// \u00xx); Kiln with ensure_ascii also escapes U+007F and everything above.
func (e *encoder) str(s string) error {
	if !utf8.ValidString(s) {
		return e.fail(ErrInvalidUTF8, "string is not valid UTF-8")
	}
	b := append(e.buf, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && (c < 0x7f || !e.ascii) {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		size := 1
		switch c {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if r >= 0x10000 {
				r -= 0x10000
				b = appendU4(b, 0xd800+(r>>10))
				r = 0xdc00 + (r & 0x3ff)
			}
			b = appendU4(b, r)
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	e.buf = append(b, '"')
	return nil
}

func appendU4(b []byte, r rune) []byte {
	return append(b, '\\', 'u', hexDigits[r>>12&0xf], hexDigits[r>>8&0xf], hexDigits[r>>4&0xf], hexDigits[r&0xf])
}

func (e *encoder) number(lit string) error {
	d, isFloat, ok := scanNumber(lit)
	if !ok {
		return e.fail(ErrNumber, numGrammar.describe(lit))
	}
	if e.kiln && !isFloat {
		e.buf = append(e.buf, lit...)
		return nil
	}
	f, prob := d.float()
	if !isFloat && prob == numInexact && exactInteger(&d, f) {
		prob = numOK
	}
	if prob != numOK {
		return e.fail(ErrNumber, prob.describe(lit))
	}
	if e.kiln {
		e.buf = append(e.buf, lit...)
		return nil
	}
	e.buf = appendES(e.buf, f)
	return nil
}

// exactInteger reports whether the integer literal of d is the exact value
// of f.
func exactInteger(d *decimalForm, f float64) bool {
	var buf [400]byte
	exact := strconv.AppendFloat(buf[:0], math.Abs(f), 'f', 0, 64)
	return string(exact) == d.lit[d.intS:d.intE]
}

func (e *encoder) float(f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return e.fail(ErrNonFinite, "non-finite JSON number is not allowed: "+strconv.FormatFloat(f, 'g', -1, 64))
	}
	if e.kiln {
		e.buf = appendPyFloat(e.buf, f)
	} else {
		e.buf = appendES(e.buf, f)
	}
	return nil
}

func (e *encoder) integer(x int64) error {
	if e.kiln || (x >= -1<<53 && x <= 1<<53) {
		e.buf = strconv.AppendInt(e.buf, x, 10)
		return nil
	}
	return e.number(strconv.FormatInt(x, 10))
}

func (e *encoder) unsigned(x uint64) error {
	if e.kiln || x <= 1<<53 {
		e.buf = strconv.AppendUint(e.buf, x, 10)
		return nil
	}
	return e.number(strconv.FormatUint(x, 10))
}

// shortest returns the shortest round-trip digits of |f| (f finite, not 0)
// and n, the position of the decimal point: |f| = 0.digits × 10^n.
func shortest(buf *[32]byte, f float64) ([]byte, int) {
	digits, n := splitShortest(strconv.AppendFloat(buf[:0], math.Abs(f), 'e', -1, 64))
	return digits, int(n)
}

// appendES appends f as ECMAScript's Number::toString writes it (ECMA-262
// §6.1.6.1.20), which RFC 8785 §3.2.2.3 adopts.
func appendES(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0') // also -0
	}
	if f < 0 {
		b = append(b, '-')
	}
	var buf [32]byte
	digits, n := shortest(&buf, f)
	k := len(digits)
	switch {
	case k <= n && n <= 21:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
	case 0 < n && n <= 21:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	case -6 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		if n-1 >= 0 {
			b = append(b, '+')
		}
		b = strconv.AppendInt(b, int64(n-1), 10)
	}
	return b
}

// appendPyFloat appends f as Python's repr(float) writes it: the shortest
// round-trip digits, positional when -4 < n <= 16 (with ".0" for whole
// numbers), otherwise d.ddde±XX with at least two exponent digits.
func appendPyFloat(b []byte, f float64) []byte {
	if f == 0 {
		if math.Signbit(f) {
			return append(b, "-0.0"...)
		}
		return append(b, "0.0"...)
	}
	if f < 0 {
		b = append(b, '-')
	}
	var buf [32]byte
	digits, n := shortest(&buf, f)
	k := len(digits)
	switch {
	case -4 < n && n <= 0:
		b = append(b, '0', '.')
		for range -n {
			b = append(b, '0')
		}
		b = append(b, digits...)
	case 0 < n && n <= 16 && n >= k:
		b = append(b, digits...)
		for range n - k {
			b = append(b, '0')
		}
		b = append(b, '.', '0')
	case 0 < n && n <= 16:
		b = append(b, digits[:n]...)
		b = append(b, '.')
		b = append(b, digits[n:]...)
	default:
		b = append(b, digits[0])
		if k > 1 {
			b = append(b, '.')
			b = append(b, digits[1:]...)
		}
		b = append(b, 'e')
		x := n - 1
		if x < 0 {
			b = append(b, '-')
			x = -x
		} else {
			b = append(b, '+')
		}
		if x < 10 {
			b = append(b, '0')
		}
		b = strconv.AppendInt(b, int64(x), 10)
	}
	return b
}
