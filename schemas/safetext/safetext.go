package safetext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Escape returns s with every unsafe rune written as a visible escape:
//
//   - C0 controls U+0000–U+001F and DEL U+007F, ESC and CR included: \x1b, \r, \n, \t, \x00 ...
//   - C1 controls U+0080–U+009F (CSI U+009B, OSC U+009D ...): \u009b
//   - bidi embeddings and overrides U+202A–U+202E, isolates U+2066–U+2069, the marks U+200E,
//     U+200F and U+061C, and the line and paragraph separators U+2028, U+2029: \u202e
//   - a byte that is not UTF-8 (0x9b alone is CSI on an 8-bit terminal): \x9b
//
// Everything else, backslashes included, is kept. Text without an unsafe rune is returned as is.
func Escape(s string) string { return escape(s, false) }

// EscapeDocument is Escape for a rendered document whose own line feeds, carriage returns and
// tabs are layout (an HTML page): those three are kept, every other unsafe rune or byte is
// written as the same visible escape. A browser does not interpret ESC or CR, but it does honour
// a bidi override inside a value, which would reorder what the reader sees.
func EscapeDocument(s string) string { return escape(s, true) }

func escape(s string, keepLayout bool) string {
	i := firstUnsafe(s, keepLayout)
	if i < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLayout && layout(r):
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case Unsafe(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// Unsafe reports whether r is one of the runes Escape writes as an escape.
func Unsafe(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	case r == 0x200e, r == 0x200f, r == 0x061c, r == 0x2028, r == 0x2029:
		return true
	}
	return false
}

// layout reports whether r is a line feed, carriage return or tab (a document's own layout).
func layout(r rune) bool { return r == '\n' || r == '\r' || r == '\t' }

// firstUnsafe is the byte offset of the first unsafe rune or invalid byte of s, or -1; with
// keepLayout, line feeds, carriage returns and tabs are not unsafe.
func firstUnsafe(s string, keepLayout bool) int {
	for i, r := range s {
		if keepLayout && layout(r) {
			continue
		}
		if Unsafe(r) || (r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD")) {
			return i
		}
	}
	return -1
}
