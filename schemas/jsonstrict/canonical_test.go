package jsonstrict

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"
)

// readFloatVectors reads "<hex float64 bits> <text>" lines from testdata/strict.
func readFloatVectors(t *testing.T, name string) []struct {
	f    float64
	text string
} {
	t.Helper()
	file, err := os.Open(filepath.Join("..", "testdata", "strict", name))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []struct {
		f    float64
		text string
	}
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		bits, text, ok := strings.Cut(line, " ")
		u, err := strconv.ParseUint(bits, 16, 64)
		if !ok || err != nil {
			t.Fatalf("%s: bad line %q", name, line)
		}
		out = append(out, struct {
			f    float64
			text string
		}{math.Float64frombits(u), text})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCanonicalNumbersRFC8785 uses the number serialisation examples of
// RFC 8785 Appendix B.
func TestCanonicalNumbersRFC8785(t *testing.T) {
	tests := []struct {
		bits uint64
		want string // "" means an error
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x7fffffffffffffff, ""},
		{0x7ff0000000000000, ""},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		got, err := Canonical(f)
		if tt.want == "" {
			if !errors.Is(err, ErrNonFinite) {
				t.Errorf("Canonical(%016x) = %s, %v; want ErrNonFinite", tt.bits, got, err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%016x) = %s, %v; want %s", tt.bits, got, err, tt.want)
		}
		// The canonical text is itself a strict, canonical document.
		if again, err := CanonicalJSON(got); err != nil || !bytes.Equal(again, got) {
			t.Errorf("CanonicalJSON(%s) = %s, %v", got, again, err)
		}
	}
}

// TestCanonicalNumbersNode compares with node's String(x) for a few
// thousand float64 values (testdata/strict/gen_es_numbers.js).
func TestCanonicalNumbersNode(t *testing.T) {
	for _, v := range readFloatVectors(t, "es_numbers.txt") {
		if got := string(appendES(nil, v.f)); got != v.text {
			t.Errorf("appendES(%016x) = %s, want %s", math.Float64bits(v.f), got, v.text)
		}
	}
}

func TestCanonicalNumberLiterals(t *testing.T) {
	tests := []struct {
		lit  string
		want string // "" means ErrNumber
	}{
		{"300.0", "300"},
		{"1.5e3", "1500"},
		{"-0", "0"},
		{"-0.0", "0"},
		{"0e10", "0"},
		{"1e21", "1e+21"},
		{"1E21", "1e+21"},
		{"1e-7", "1e-7"},
		{"0.0000001", "1e-7"},
		{"0.000001", "0.000001"},
		{"123e-20", "1.23e-18"},
		{"100000000000000000000", "100000000000000000000"},
		{"9007199254740992", "9007199254740992"},
		{"9007199254740993", ""},                           // no float64 has this value
		{"295147905179352825856", "295147905179352830000"}, // 2^68 exactly
		{"295147905179352830000", "295147905179352830000"}, // 2^68 as JCS writes it
		{"295147905179352830001", ""},
		{"18446744073709551615", ""},
		{"1" + strings.Repeat("0", 400), ""},
		{"8.9999999999999999", ""},
		{"333333333.33333329", ""},
		{"1e400", ""},
		{"01", ""},
		{"1.", ""},
		{"abc", ""},
		{" 1", ""},
	}
	for _, tt := range tests {
		got, err := Canonical(json.Number(tt.lit))
		if tt.want == "" {
			if !errors.Is(err, ErrNumber) {
				t.Errorf("Canonical(json.Number(%.30q)) = %s, %v; want ErrNumber", tt.lit, got, err)
			}
			continue
		}
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(json.Number(%q)) = %s, %v; want %s", tt.lit, got, err, tt.want)
		}
	}
}

func TestCanonicalGoValues(t *testing.T) {
	type inner struct {
		B string  `json:"b"`
		A float32 `json:"a"`
	}
	tests := []struct {
		name string
		in   any
		want string // "" means error
		err  error
	}{
		{"ints", []any{int(1), int8(-2), int16(3), int32(-4), int64(1 << 53), uint(6), uint8(7), uint16(8), uint32(9), uint64(1 << 53)}, "[1,-2,3,-4,9007199254740992,6,7,8,9,9007199254740992]", nil},
		{"exact large int", int64(1 << 62), "4611686018427388000", nil},
		{"inexact int64", int64(1<<53 + 1), "", ErrNumber},
		{"inexact uint64", uint64(math.MaxUint64), "", ErrNumber},
		{"float32 as encoding/json writes it", float32(0.1), "0.1", nil},
		{"NaN", math.NaN(), "", ErrNonFinite},
		{"infinity in a map", map[string]any{"x": []any{math.Inf(-1)}}, "", ErrNonFinite},
		{"invalid UTF-8", []any{"ok", "\xff"}, "", ErrInvalidUTF8},
		{"invalid UTF-8 key", map[string]any{"\xff": 1}, "", ErrInvalidUTF8},
		{"struct", inner{B: "x", A: 0.5}, `{"a":0.5,"b":"x"}`, nil},
		{"typed map", map[string]int{"b": 1, "a": 2}, `{"a":2,"b":1}`, nil},
		{"raw message", json.RawMessage(` { "b" : 1.50, "a" : [ ] } `), `{"a":[],"b":1.5}`, nil},
		{"bad raw message", json.RawMessage(`{"a":1,"a":2}`), "", ErrDuplicateKey},
		{"html characters", map[string]string{"<&>": "<&>"}, `{"<&>":"<&>"}`, nil},
		{"nil", nil, "null", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical(tt.in)
			if tt.want == "" {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Canonical = %s, %v; want %v", got, err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("Canonical = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
	t.Run("error pointer", func(t *testing.T) {
		_, err := Canonical(map[string]any{"a": []any{1, map[string]any{"b/c": json.Number("9007199254740993")}}})
		var de *DecodeError
		if !errors.As(err, &de) || !errors.Is(err, ErrNumber) || de.Pointer != "/a/1/b~1c" || de.Offset != -1 {
			t.Errorf("Canonical error = %#v", err)
		}
	})
	t.Run("cycle", func(t *testing.T) {
		m := map[string]any{}
		m["self"] = m
		if _, err := Canonical(m); !errors.Is(err, ErrTooDeep) {
			t.Errorf("Canonical(cyclic map) error = %v, want ErrTooDeep", err)
		}
	})
}

// TestCanonicalRFC8785Sorting is the example of RFC 8785 §3.2.3.
func TestCanonicalRFC8785Sorting(t *testing.T) {
	in := `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`
	want := "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\"," +
		"\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\"," +
		"\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"
	got, err := CanonicalJSON([]byte(in))
	if err != nil || string(got) != want {
		t.Errorf("CanonicalJSON = %s, %v\nwant %s", got, err, want)
	}
}

// TestCanonicalRFC8785Example is the example of RFC 8785 §3.2.2. Its first
// number, 333333333.33333329, has no exact float64, which the strict parser
// rejects; the example is checked with that number as the float64 it rounds
// to, and with the literal of the float64's shortest form.
func TestCanonicalRFC8785Example(t *testing.T) {
	in := `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`
	const want = `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`

	_, err := CanonicalJSON([]byte(in))
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrNumber) || de.Pointer != "/numbers/0" {
		t.Errorf("CanonicalJSON(RFC example) error = %v, want ErrNumber at /numbers/0", err)
	}

	got, err := CanonicalJSON([]byte(strings.Replace(in, "333333333.33333329", "333333333.3333333", 1)))
	if err != nil || string(got) != want {
		t.Errorf("CanonicalJSON = %s, %v\nwant %s", got, err, want)
	}

	var v any
	if err := json.Unmarshal([]byte(in), &v); err != nil {
		t.Fatal(err)
	}
	got, err = Canonical(v) // float64 leaves
	if err != nil || string(got) != want {
		t.Errorf("Canonical(float64 tree) = %s, %v\nwant %s", got, err, want)
	}
}

func TestCanonicalStrings(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{"\"\\/", `"\"\\/"`},
		{"\b\f\n\r\t", `"\b\f\n\r\t"`},
		{"\x00\x01\x1f", `"\u0000\u0001\u001f"`},
		{"\x7f\u0080\u2028\u2029\ufeff\U0001F600", "\"\x7f\u0080\u2028\u2029\ufeff\U0001F600\""},
		{"<&>'", `"<&>'"`},
	}
	for _, tt := range tests {
		got, err := Canonical(tt.in)
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%q) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	utf16Less := func(a, b string) int {
		return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
	}
	samples := []string{"", "a", "ab", "b", "\u007f", "\u0080", "\u00f6", "\u20ac", "\ud7ff", "\ue000", "\uffff",
		"\U00010000", "\U0001F600", "\U0010FFFF", "a\ue000", "a\U0001F600", "\ufb33", "\r", "1", "\U0001F600x", "\U0001F601"}
	for _, a := range samples {
		for _, b := range samples {
			if got, want := compareUTF16(a, b), utf16Less(a, b); got != want {
				t.Errorf("compareUTF16(%+q, %+q) = %d, want %d", a, b, got, want)
			}
		}
	}
	// The case byte order gets wrong.
	if compareUTF16("\U0001F600", "\ue000") >= 0 {
		t.Error("U+1F600 must sort before U+E000 in UTF-16 order")
	}
	got, err := Canonical(map[string]any{"\ue000": 1, "\U0001F600": 2})
	if want := "{\"\U0001F600\":2,\"\ue000\":1}"; err != nil || string(got) != want {
		t.Errorf("Canonical = %s, %v; want %s", got, err, want)
	}
}

func TestKilnCanonicalPython(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "strict", "kiln_dumps.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var vec struct{ Input, ASCII, UTF8 string }
		if err := json.Unmarshal(line, &vec); err != nil {
			t.Fatal(err)
		}
		v, err := Parse([]byte(vec.Input))
		if err != nil {
			t.Fatalf("Parse(%s): %v", vec.Input, err)
		}
		for _, c := range []struct {
			ascii bool
			want  string
		}{{true, vec.ASCII}, {false, vec.UTF8}} {
			got, err := KilnCanonical(v, c.ascii)
			if err != nil || string(got) != c.want {
				t.Errorf("KilnCanonical(%s, ascii=%v) = %s, %v\nwant %s", vec.Input, c.ascii, got, err, c.want)
			}
		}
	}
}

func TestKilnCanonicalPythonFloats(t *testing.T) {
	for _, v := range readFloatVectors(t, "py_floats.txt") {
		if got := string(appendPyFloat(nil, v.f)); got != v.text {
			t.Errorf("appendPyFloat(%016x) = %s, want %s", math.Float64bits(v.f), got, v.text)
		}
	}
	got, err := KilnCanonical(map[string]any{"f": 300.0, "i": int64(1<<53 + 1), "n": json.Number("1.5e3")}, true)
	if want := `{"f":300.0,"i":9007199254740993,"n":1.5e3}`; err != nil || string(got) != want {
		t.Errorf("KilnCanonical = %s, %v; want %s", got, err, want)
	}
}

func loadKilnOracle(t *testing.T) ([]byte, map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "kiln", "oracle-result-v1-rocm-hf-next-token-guarded-fingerprint.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(Kiln oracle result): %v", err)
	}
	return data, v.(map[string]any)
}

func TestKilnSelfHash(t *testing.T) {
	data, doc := loadKilnOracle(t)
	const recorded = "sha256:a5f02fdef892376c0eaad09b3dc97cf30faae58f531f7bcbfbbea9520de071c1"
	if doc["result_sha256"] != recorded {
		t.Fatalf("fixture result_sha256 = %v", doc["result_sha256"])
	}
	if err := VerifyKilnSelfHash(doc, "result_sha256"); err != nil {
		t.Errorf("VerifyKilnSelfHash: %v", err)
	}
	for _, ascii := range []bool{true, false} {
		if h, err := KilnSelfHash(doc, "result_sha256", ascii); err != nil || h != recorded {
			t.Errorf("KilnSelfHash(ascii=%v) = %s, %v", ascii, h, err)
		}
	}

	// RFC 8785 rewrites 300.0 as 300, so it cannot reproduce Kiln's hash.
	if !bytes.Contains(data, []byte("300.0")) {
		t.Fatal("fixture has no 300.0-style literal")
	}
	if err := VerifySelfHash(doc, "result_sha256"); !errors.Is(err, ErrSelfHashMismatch) {
		t.Errorf("VerifySelfHash(Kiln document) = %v, want ErrSelfHashMismatch", err)
	}

	// One changed byte in a value breaks the hash.
	i := bytes.Index(data, []byte(`"k10temp"`))
	if i < 0 {
		t.Fatal("fixture lacks k10temp")
	}
	mutated := bytes.Clone(data)
	mutated[i+1] = 'K'
	v, err := Parse(mutated)
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyKilnSelfHash(v, "result_sha256"); !errors.Is(err, ErrSelfHashMismatch) {
		t.Errorf("VerifyKilnSelfHash(mutated) = %v, want ErrSelfHashMismatch", err)
	}
	// So does rewriting a number's literal without changing its value.
	v, err = Parse(bytes.Replace(data, []byte("300.0"), []byte("300"), 1))
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifyKilnSelfHash(v, "result_sha256"); !errors.Is(err, ErrSelfHashMismatch) {
		t.Errorf("VerifyKilnSelfHash(300.0 -> 300) = %v, want ErrSelfHashMismatch", err)
	}
}

func TestSelfHash(t *testing.T) {
	doc := map[string]any{"b": json.Number("1.50"), "a": "x", "content_sha256": "old"}
	h, err := SelfHash(doc, "content_sha256")
	if err != nil {
		t.Fatal(err)
	}
	// sha256 of {"a":"x","b":1.5}
	if want := "sha256:099f4bcf556f24a56bad74cab2ccce1a7c040735ddb42f2a0df2043a865b5271"; h != want {
		t.Errorf("SelfHash = %s, want %s", h, want)
	}
	if err := VerifySelfHash(doc, "content_sha256"); !errors.Is(err, ErrSelfHashMismatch) {
		t.Errorf("VerifySelfHash(stale) = %v, want ErrSelfHashMismatch", err)
	}
	doc["content_sha256"] = h
	if err := VerifySelfHash(doc, "content_sha256"); err != nil {
		t.Errorf("VerifySelfHash: %v", err)
	}
	// The hash does not depend on how numbers or whitespace are written.
	v, err := Parse([]byte(`{ "a" : "x", "b" : 15e-1, "content_sha256" : "` + h + `" }`))
	if err != nil {
		t.Fatal(err)
	}
	if err := VerifySelfHash(v, "content_sha256"); err != nil {
		t.Errorf("VerifySelfHash(reformatted): %v", err)
	}
	if err := VerifyKilnSelfHash(v, "content_sha256"); !errors.Is(err, ErrSelfHashMismatch) {
		t.Errorf("VerifyKilnSelfHash(RFC 8785 hash) = %v, want ErrSelfHashMismatch", err)
	}

	for _, tt := range []struct {
		name string
		doc  any
		want error
	}{
		{"missing", map[string]any{"a": 1}, ErrSelfHashMissing},
		{"not a string", map[string]any{"content_sha256": json.Number("1")}, ErrSelfHashMissing},
		{"null", map[string]any{"content_sha256": nil}, ErrSelfHashMissing},
	} {
		if err := VerifySelfHash(tt.doc, "content_sha256"); !errors.Is(err, tt.want) {
			t.Errorf("%s: VerifySelfHash = %v, want %v", tt.name, err, tt.want)
		}
		if err := VerifyKilnSelfHash(tt.doc, "content_sha256"); !errors.Is(err, tt.want) {
			t.Errorf("%s: VerifyKilnSelfHash = %v, want %v", tt.name, err, tt.want)
		}
	}
	if _, err := SelfHash([]any{}, "x"); err == nil {
		t.Error("SelfHash(array) succeeded")
	}
	if err := VerifySelfHash("text", "x"); err == nil || errors.Is(err, ErrSelfHashMismatch) {
		t.Errorf("VerifySelfHash(string) = %v", err)
	}
}
