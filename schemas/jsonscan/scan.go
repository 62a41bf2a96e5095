package jsonscan

import "unicode/utf8"

// Text is what the primitives read: a byte slice or a string.
type Text interface{ ~string | ~[]byte }

// Problem is why a scan stopped short of a well-formed token.
type Problem uint8

const (
	// OK: the token is well formed.
	OK Problem = iota
	// Unterminated: the text ends inside a string.
	Unterminated
	// Control: an unescaped control character (below U+0020) inside a string.
	Control
	// InvalidUTF8: a byte that does not start a valid UTF-8 sequence (an encoded surrogate
	// included) inside a string.
	InvalidUTF8
	// InvalidEscape: a backslash before a byte that does not start an escape.
	InvalidEscape
	// ShortHex: the text ends inside the four hex digits of a \u escape.
	ShortHex
	// InvalidHex: a \u escape without four hex digits.
	InvalidHex
	// LoneSurrogate: a \u escape of a surrogate half that is not a high half followed by a \u
	// escape of a low half.
	LoneSurrogate
	// Digit: a number lacks a digit where its grammar needs one (its first, after '-').
	Digit
	// LeadingZero: an integer part of more than one digit starts with 0.
	LeadingZero
	// Fraction: no digit after a number's decimal point.
	Fraction
	// Exponent: no digit in a number's exponent.
	Exponent
)

var problems = [...]string{OK: "ok", Unterminated: "unterminated string", Control: "control character in string",
	InvalidUTF8: "invalid UTF-8 in string", InvalidEscape: "invalid escape", ShortHex: "short \\u escape",
	InvalidHex: "invalid \\u escape", LoneSurrogate: "lone surrogate escape", Digit: "number without a digit",
	LeadingZero: "leading zero in number", Fraction: "no digit after the decimal point", Exponent: "no digit in the exponent"}

// String names the problem.
func (p Problem) String() string {
	if int(p) < len(problems) {
		return problems[p]
	}
	return "unknown problem"
}

// Space returns the offset of the first byte of b at or after i that is not JSON whitespace
// (len(b) when there is none).
func Space[T Text](b T, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// Plain returns the offset of the first byte of b at or after i that ends a string's plain run:
// a byte that is not printable ASCII (U+0020 to U+007E) or is '"' or '\\' (len(b) when there is
// none). A string whose body is one plain run needs neither decoding nor UTF-8 checks.
func Plain[T Text](b T, i int) int {
	for i < len(b) {
		if c := b[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return i
		}
		i++
	}
	return i
}

// Digits returns the offset of the first byte of b at or after i that is not an ASCII digit.
func Digits[T Text](b T, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// Hex4 reads the four hex digits at b[i:i+4] (either case).
func Hex4[T Text](b T, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := b[k]
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

// runeSize is the length of the UTF-8 sequence at b[i], a byte that is not ASCII, or 0 when it is
// not a valid one (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF).
func runeSize[T Text](b T, i int) int {
	n, lo, hi := 0, byte(0x80), byte(0xbf) // the sequence's length, the range of its second byte
	switch c := b[i]; {
	case c >= 0xc2 && c <= 0xdf:
		n = 2
	case c == 0xe0:
		n, lo = 3, 0xa0
	case c == 0xed:
		n, hi = 3, 0x9f
	case c >= 0xe1 && c <= 0xef:
		n = 3
	case c == 0xf0:
		n, lo = 4, 0x90
	case c >= 0xf1 && c <= 0xf3:
		n = 4
	case c == 0xf4:
		n, hi = 4, 0x8f
	default:
		return 0
	}
	if i+n > len(b) || b[i+1] < lo || b[i+1] > hi {
		return 0
	}
	for k := i + 2; k < i+n; k++ {
		if b[k] < 0x80 || b[k] > 0xbf {
			return 0
		}
	}
	return n
}

// Unescaped scans a string's body from b[i] up to its closing quote or its next escape: it
// returns the offset of that '"' or '\\', or the offset and kind of the first problem
// (Unterminated at len(b)). Everything before the returned offset is the string's value as it
// stands: valid UTF-8 without a control character.
func Unescaped[T Text](b T, i int) (int, Problem) {
	for {
		i = Plain(b, i)
		if i >= len(b) {
			return i, Unterminated
		}
		switch c := b[i]; {
		case c == '"' || c == '\\':
			return i, OK
		case c < 0x20:
			return i, Control
		case c == 0x7f:
			i++
		default:
			n := runeSize(b, i)
			if n == 0 {
				return i, InvalidUTF8
			}
			i += n
		}
	}
}

// ValidString scans the body of a string whose opening quote is at b[i-1]: it returns the
// offset after the closing quote and whether the body holds an escape, or the offset and kind
// of the first problem (Unterminated at len(b); an escape's problem at its backslash).
func ValidString[T Text](b T, i int) (end int, escaped bool, p Problem) {
	for {
		if i, p = Unescaped(b, i); p != OK {
			return i, escaped, p
		}
		if b[i] == '"' {
			return i + 1, escaped, OK
		}
		var next int
		if _, next, p = escape(nil, b, i, false); p != OK {
			return i, escaped, p
		}
		i, escaped = next, true
	}
}

// AppendString decodes a string's body from b[i] (after its opening quote, or anywhere in it
// before its closing quote), appending its value to dst: it returns dst and the offset after
// the closing quote, or the offset and kind of the first problem as ValidString does (dst then
// holds the value up to it).
func AppendString[T Text](dst []byte, b T, i int) ([]byte, int, Problem) {
	for {
		stop, p := Unescaped(b, i)
		dst = append(dst, b[i:stop]...)
		if p != OK {
			return dst, stop, p
		}
		if b[stop] == '"' {
			return dst, stop + 1, OK
		}
		next := 0
		if dst, next, p = escape(dst, b, stop, true); p != OK {
			return dst, stop, p
		}
		i = next
	}
}

// escape decodes the escape whose backslash is at b[i], appending its UTF-8 to dst when keep; it
// returns the offset after it.
func escape[T Text](dst []byte, b T, i int, keep bool) ([]byte, int, Problem) {
	if i+1 >= len(b) {
		return dst, i, Unterminated
	}
	var c byte
	switch e := b[i+1]; e {
	case '"', '\\', '/':
		c = e
	case 'b':
		c = '\b'
	case 'f':
		c = '\f'
	case 'n':
		c = '\n'
	case 'r':
		c = '\r'
	case 't':
		c = '\t'
	case 'u':
		r, ok := Hex4(b, i+2)
		if !ok {
			if i+6 > len(b) {
				return dst, i, ShortHex
			}
			return dst, i, InvalidHex
		}
		n := 6
		switch {
		case r >= 0xd800 && r < 0xdc00:
			lo, ok := rune(0), false
			if i+7 < len(b) && b[i+6] == '\\' && b[i+7] == 'u' {
				lo, ok = Hex4(b, i+8)
			}
			if !ok || lo < 0xdc00 || lo > 0xdfff {
				return dst, i, LoneSurrogate
			}
			r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			n = 12
		case r >= 0xdc00 && r <= 0xdfff:
			return dst, i, LoneSurrogate
		}
		if keep {
			dst = utf8.AppendRune(dst, r)
		}
		return dst, i + n, OK
	default:
		return dst, i, InvalidEscape
	}
	if keep {
		dst = append(dst, c)
	}
	return dst, i + 2, OK
}

// Number scans the number that starts at b[i] by JSON's grammar (an optional '-', an integer part
// without leading zeros, an optional fraction and exponent): it returns the offset after it, the
// digits of its integer part and whether it has a fraction or an exponent, or the offset and
// kind of the first problem (LeadingZero at the integer part's first digit).
func Number[T Text](b T, i int) (end, intDigits int, float bool, p Problem) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	start := i
	switch {
	case i >= len(b):
		return i, 0, false, Digit
	case b[i] == '0':
		i++
		if i < len(b) && b[i] >= '0' && b[i] <= '9' {
			return start, 0, false, LeadingZero
		}
	case b[i] >= '1' && b[i] <= '9':
		i = Digits(b, i+1)
	default:
		return i, 0, false, Digit
	}
	intDigits = i - start
	if i < len(b) && b[i] == '.' {
		d := i + 1
		if i = Digits(b, d); i == d {
			return i, intDigits, true, Fraction
		}
		float = true
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		if i = Digits(b, d); i == d {
			return i, intDigits, true, Exponent
		}
		float = true
	}
	return i, intDigits, float, OK
}
