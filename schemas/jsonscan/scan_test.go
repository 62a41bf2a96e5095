package jsonscan

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestStringProblems(t *testing.T) {
	for _, c := range []struct {
		name, in string // in: a string from its opening quote
		want     Problem
		off      int // the problem's offset, or the offset after the closing quote
		value    string
		escaped  bool
	}{
		{"plain", `"abc"x`, OK, 5, "abc", false},
		{"empty", `""`, OK, 2, "", false},
		{"delete and utf-8", "\"a\x7f\u00e9\U0001F600\"", OK, 10, "a\x7f\u00e9\U0001F600", false},
		{"escapes", `"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00z"`, OK, 38, "a\"\\/\b\f\n\r\t\u00e9\U0001F600z", true},
		{"unterminated", `"abc`, Unterminated, 4, "", false},
		{"unterminated escape", `"ab\`, Unterminated, 3, "", false},
		{"control", "\"a\x01b\"", Control, 2, "", false},
		{"invalid utf-8", "\"a\xffb\"", InvalidUTF8, 2, "", false},
		{"encoded surrogate", "\"\xed\xa0\x80\"", InvalidUTF8, 1, "", false},
		{"invalid escape", `"a\x"`, InvalidEscape, 2, "", false},
		{"short hex", `"\u12`, ShortHex, 1, "", false},
		{"invalid hex", `"\u12g4"`, InvalidHex, 1, "", false},
		{"lone high", `"\ud800"`, LoneSurrogate, 1, "", false},
		{"lone low", `"x\udc00"`, LoneSurrogate, 2, "", false},
		{"high then high", `"\ud800\ud800"`, LoneSurrogate, 1, "", false},
		{"high then bad hex", `"\ud800\uzzzz"`, LoneSurrogate, 1, "", false},
	} {
		for _, in := range []string{c.in, c.in} { // string and []byte
			end, escaped, p := ValidString(in, 1)
			if p != c.want || end != c.off || (p == OK && escaped != c.escaped) {
				t.Errorf("%s: ValidString = %d, %v, %v; want %d, %v, %v", c.name, end, escaped, p, c.off, c.escaped, c.want)
			}
			v, end2, p2 := AppendString([]byte("prefix:"), []byte(in), 1)
			if p2 != p || end2 != end {
				t.Errorf("%s: AppendString ends %d %v, ValidString %d %v", c.name, end2, p2, end, p)
			}
			if p == OK && string(v) != "prefix:"+c.value {
				t.Errorf("%s: value %q, want %q", c.name, v, c.value)
			}
		}
	}
}

// TestRuneSize: every one- and two-byte sequence, and every three- and four-byte sequence from
// the bytes that decide a sequence's validity, is valid exactly when utf8 says so.
func TestRuneSize(t *testing.T) {
	edges := []byte{0x00, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1, 0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff}
	check := func(b []byte) {
		if b[0] < 0x80 {
			return
		}
		r, size := utf8.DecodeRune(b)
		want := size
		if r == utf8.RuneError && size <= 1 {
			want = 0
		}
		if got := runeSize(b, 0); got != want {
			t.Fatalf("runeSize(% x) = %d, utf8 %d", b, got, want)
		}
		if got := runeSize(string(b), 0); got != want {
			t.Fatalf("runeSize(string % x) = %d, utf8 %d", b, got, want)
		}
	}
	for a := range 256 {
		for c := range 256 {
			check([]byte{byte(a), byte(c)})
		}
		for _, c := range edges {
			for _, d := range edges {
				check([]byte{byte(a), c, d})
				for _, e := range edges {
					check([]byte{byte(a), c, d, e})
				}
			}
		}
	}
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in        string
		end, ints int
		float     bool
		want      Problem
	}{
		{"0", 1, 1, false, OK},
		{"-0", 2, 1, false, OK},
		{"120,", 3, 3, false, OK},
		{"-1.5e+3]", 7, 1, true, OK},
		{"2E9", 3, 1, true, OK},
		{"0.25}", 4, 1, true, OK},
		{"01", 0, 0, false, LeadingZero},
		{"-01", 1, 0, false, LeadingZero},
		{"-", 1, 0, false, Digit},
		{"-x", 1, 0, false, Digit},
		{"1.", 2, 1, true, Fraction},
		{"1.e3", 2, 1, true, Fraction},
		{"1e", 2, 1, true, Exponent},
		{"1e+", 3, 1, true, Exponent},
	} {
		end, ints, float, p := Number(c.in, 0)
		if end != c.end || p != c.want || (p == OK && (ints != c.ints || float != c.float)) {
			t.Errorf("Number(%q) = %d, %d, %v, %v; want %d, %d, %v, %v", c.in, end, ints, float, p, c.end, c.ints, c.float, c.want)
		}
	}
}

func TestSpaceAndPlain(t *testing.T) {
	if i := Space(" \t\r\n x", 0); i != 5 {
		t.Errorf("Space = %d", i)
	}
	if i := Space([]byte("  "), 1); i != 2 {
		t.Errorf("Space at the end = %d", i)
	}
	for in, want := range map[string]int{`abc"`: 3, `ab\`: 2, "a\x1f": 1, "a\x7f": 1, "a\u00e9": 1, "abc": 3} {
		if i := Plain(in, 0); i != want {
			t.Errorf("Plain(%q) = %d, want %d", in, i, want)
		}
	}
}

// FuzzString checks the string primitives against encoding/json: a string the core accepts is
// one encoding/json decodes to the same value; one encoding/json decodes to valid UTF-8 without
// a replacement character (which it makes of invalid bytes and lone surrogates) the core
// accepts; ValidString and AppendString agree, and a string without a backslash is not escaped.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"a\u00e9\ud83d\ude00\n"`, `"\ud800"`, "\"\xff\"", `"a\x"`, `"\u12`, "\"\x7f\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) == 0 || in[0] != '"' {
			return
		}
		end, escaped, p := ValidString(in, 1)
		v, end2, p2 := AppendString(nil, string(in), 1)
		if end != end2 || p != p2 {
			t.Fatalf("%q: ValidString %d %v, AppendString %d %v", in, end, p, end2, p2)
		}
		if end < 1 || end > len(in) {
			t.Fatalf("%q: offset %d out of range", in, end)
		}
		var want string
		err := json.Unmarshal(in[:max(end, 1)], &want)
		if p == OK {
			if err != nil || want != string(v) {
				t.Fatalf("%q: core %q, encoding/json %q %v", in, v, want, err)
			}
			if escaped != bytes.ContainsRune(in[1:end-1], '\\') {
				t.Fatalf("%q: escaped %v", in, escaped)
			}
			return
		}
		// Rejected: encoding/json must reject the text too, or decode it to a replacement
		// character (what it makes of invalid UTF-8 and lone surrogates).
		var got string
		if json.Unmarshal(in, &got) == nil && utf8.Valid(in) && !strings.ContainsRune(got, utf8.RuneError) {
			t.Fatalf("%q: core rejects (%v at %d), encoding/json decodes %q", in, p, end, got)
		}
	})
}

// FuzzNumber checks Number against encoding/json: a whole text is a number to one exactly when
// it is to the other.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e+3", "01", "1.", "1e", "-", "12345678901234567890"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		end, ints, float, p := Number(in, 0)
		whole := p == OK && end == len(in)
		var n json.Number
		dec := json.NewDecoder(bytes.NewReader(in))
		dec.UseNumber()
		var v any
		isNum := len(in) > 0 && len(bytes.TrimSpace(in)) == len(in) && (in[0] == '-' || in[0] >= '0' && in[0] <= '9') && json.Valid(in) && dec.Decode(&v) == nil
		if isNum {
			n, isNum = v.(json.Number)
		}
		if whole != isNum {
			t.Fatalf("%q: core %v (%v at %d), encoding/json %v", in, whole, p, end, isNum)
		}
		if whole && (string(n) != string(in) || float != bytes.ContainsAny(in, ".eE") || ints != len(bytes.TrimLeft(bytes.SplitN(bytes.SplitN(bytes.SplitN(in, []byte("."), 2)[0], []byte("e"), 2)[0], []byte("E"), 2)[0], "-"))) {
			t.Fatalf("%q: literal %q, %d integer digits, float %v", in, n, ints, float)
		}
	})
}
