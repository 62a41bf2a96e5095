package safetext_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/safetext"
)

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "NVIDIA H200 141GB", "NVIDIA H200 141GB"},
		{"unicode kept", "Grafikkarte “Ω” 日本", "Grafikkarte “Ω” 日本"},
		{"backslash kept", `C:\models\x1b`, `C:\models\x1b`},
		{"clear screen", "gpu\x1b[2J\x1b[H", `gpu\x1b[2J\x1b[H`},
		{"osc title", "a\x1b]0;pwned\x07b", `a\x1b]0;pwned\x07b`},
		{"carriage return forgery", "H200\rverdict  verified", `H200\rverdict  verified`},
		{"newline forgery", "H200\nverdict  verified", `H200\nverdict  verified`},
		{"tab nul del", "a\tb\x00c\x7f", `a\tb\x00c\x7f`},
		{"c1 csi", "a\u009b2Jb", `a\u009b2Jb`},
		{"c1 osc", "a\u009d0;x\u009c", `a\u009d0;x\u009c`},
		{"rlo", "abc\u202efed", `abc\u202efed`},
		{"embeddings", "\u202a\u202b\u202c\u202d", `\u202a\u202b\u202c\u202d`},
		{"isolates", "\u2066\u2067\u2068\u2069", `\u2066\u2067\u2068\u2069`},
		{"marks", "\u200e\u200f\u061c", `\u200e\u200f\u061c`},
		{"separators", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"raw 8-bit csi", "a\x9b2Jb", `a\x9b2Jb`},
		{"replacement char kept", "a\uFFFDb", "a\uFFFDb"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := safetext.Escape(tc.in)
			if got != tc.want {
				t.Fatalf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if again := safetext.Escape(got); again != got {
				t.Fatalf("Escape is not idempotent on its output: %q -> %q", got, again)
			}
		})
	}
}

// TestEscapeLeavesNothingUnsafe: over every rune up to U+FFFF and every single byte, the output
// holds no unsafe rune and is valid UTF-8.
func TestEscapeLeavesNothingUnsafe(t *testing.T) {
	var b strings.Builder
	for r := rune(0); r <= 0xffff; r++ {
		b.WriteRune(r)
	}
	for c := 0x80; c <= 0xff; c++ {
		b.WriteByte(byte(c))
	}
	out := safetext.Escape(b.String())
	if !utf8.ValidString(out) {
		t.Fatal("output is not valid UTF-8")
	}
	for _, r := range out {
		if safetext.Unsafe(r) {
			t.Fatalf("output holds U+%04X", r)
		}
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("gpu\x1b[2J\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		out := safetext.Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("Escape(%q) is not valid UTF-8", s)
		}
		for _, r := range out {
			if safetext.Unsafe(r) {
				t.Fatalf("Escape(%q) holds U+%04X", s, r)
			}
		}
	})
}

// EscapeDocument keeps a document's line feeds, carriage returns and tabs and escapes every
// other unsafe rune as Escape does; over every rune up to U+FFFF nothing else unsafe is left.
func TestEscapeDocument(t *testing.T) {
	in := "<td>gpu\u202e0a9 \x1b[2J</td>\n\t<td>\u2066x\u2069\r</td>\x9b"
	want := "<td>gpu\\u202e0a9 \\x1b[2J</td>\n\t<td>\\u2066x\\u2069\r</td>\\x9b"
	if got := safetext.EscapeDocument(in); got != want {
		t.Errorf("EscapeDocument(%q) = %q, want %q", in, got, want)
	}
	if s := "<p>plain\n\ttext\r\n</p>"; safetext.EscapeDocument(s) != s {
		t.Errorf("EscapeDocument changed %q", s)
	}
	var b strings.Builder
	for r := rune(0); r <= 0xffff; r++ {
		b.WriteRune(r)
	}
	for _, r := range safetext.EscapeDocument(b.String()) {
		if safetext.Unsafe(r) && r != '\n' && r != '\r' && r != '\t' {
			t.Fatalf("output holds U+%04X", r)
		}
	}
}
