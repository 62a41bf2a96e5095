package jsonstrict

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// intLiteral returns an n-digit integer literal.
func intLiteral(n int) string { return "1" + strings.Repeat("0", n-1) }

func num(s string) json.Number { return json.Number(s) }

// parseAcceptCases and parseRejectCases also seed FuzzParse.
var parseAcceptCases = []struct {
	name string
	in   string
	want any
}{
	{"large int preserved", `9007199254740993`, num("9007199254740993")},
	{"simple values", `{"f":1.5,"t":true,"n":null,"s":"x","i":-12}`,
		map[string]any{"f": num("1.5"), "t": true, "n": nil, "s": "x", "i": num("-12")}},
	{"zero", `0.0`, num("0.0")},
	{"negative zero float", `-0.0`, num("-0.0")},
	{"negative zero int", `-0`, num("-0")},
	{"zero with exponent", `0e-99999`, num("0e-99999")},
	{"tenth", `0.1`, num("0.1")},
	{"whole float kept as written", `300.0`, num("300.0")},
	{"exponent kept as written", `1.5e3`, num("1.5e3")},
	{"trailing fraction zeros", `4.50`, num("4.50")},
	{"capital exponent", `1E30`, num("1E30")},
	{"smallest denormal", `5e-324`, num("5e-324")},
	{"largest float", `1.7976931348623157e308`, num("1.7976931348623157e308")},
	{"smallest normal", `2.2250738585072014e-308`, num("2.2250738585072014e-308")},
	{"4096 digits", intLiteral(4096), num(intLiteral(4096))},
	{"-4096 digits", "-" + intLiteral(4096), num("-" + intLiteral(4096))},
	{"escapes", `"\"\\\/\b\f\n\r\t\u0000\u00e9\uD83D\uDE00"`, "\"\\/\b\f\n\r\t\x00é😀"},
	{"raw UTF-8", `"é😀\u2028"`, "é😀\u2028"},
	{"DEL raw", "\"\x7f\"", "\x7f"},
	{"empty containers", `{"a":{},"b":[]}`, map[string]any{"a": map[string]any{}, "b": []any{}}},
	{"nested", ` [ [ [ ] ] , { "a" : [ 1 ] } ] `, []any{[]any{[]any{}}, map[string]any{"a": []any{num("1")}}}},
	{"whitespace", "\t\r\n {\n\"a\"\t:\r1 } \n", map[string]any{"a": num("1")}},
	{"same key in different objects", `[{"a":1},{"a":2}]`, []any{map[string]any{"a": num("1")}, map[string]any{"a": num("2")}}},
	{"keys differing in case", `{"a":1,"A":2}`, map[string]any{"a": num("1"), "A": num("2")}},
	{"literals", `[true,false,null]`, []any{true, false, nil}},
	{"exponent beyond strconv's reach", "0." + strings.Repeat("0", 6000) + "1e6001", num("0." + strings.Repeat("0", 6000) + "1e6001")},
	{"many leading zeros", "0." + strings.Repeat("0", 6000) + "15e5990", num("0." + strings.Repeat("0", 6000) + "15e5990")},
	{"many integer zeros", "1" + strings.Repeat("0", 6000) + ".0e-6000", num("1" + strings.Repeat("0", 6000) + ".0e-6000")},
}

func TestParseAccepts(t *testing.T) {
	for _, tt := range parseAcceptCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse(%.40q) error: %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%.40q) = %#v, want %#v", tt.in, got, tt.want)
			}
		})
	}
}

var parseRejectCases = []struct {
	name    string
	in      string
	want    error
	pointer string
	offset  int64
}{
	// Kiln's test_strict_json.py checklist.
	{"duplicate key", `{"value":1,"value":2}`, ErrDuplicateKey, "/value", 11},
	{"escape-equivalent duplicate", `{"value":1,"\u0076alue":2}`, ErrDuplicateKey, "/value", 11},
	{"nested duplicate", `{"determinism":{"seed":1,"order":[],"seed":2}}`, ErrDuplicateKey, "/determinism/seed", 36},
	{"duplicate in array element", `[0,{"a":1,"a":1}]`, ErrDuplicateKey, "/1/a", 10},
	{"NaN", `NaN`, ErrNonFinite, "", 0},
	{"Infinity", `{"x":Infinity}`, ErrNonFinite, "/x", 5},
	{"-Infinity", `[1,-Infinity]`, ErrNonFinite, "/1", 3},
	{"overflow", `1e400`, ErrNumber, "", 0},
	{"negative overflow", `[-1e400]`, ErrNumber, "/0", 1},
	{"huge exponent", `1e99999999999999999999999`, ErrNumber, "", 0},
	{"huge exponent after many zeros", "0." + strings.Repeat("0", 6000) + "1e6400", ErrNumber, "", 0},
	{"inexact with many digits", "1." + strings.Repeat("0", 6000) + "1", ErrNumber, "", 0},
	{"underflow with many zeros", "1." + strings.Repeat("0", 6000) + "e-6000", ErrNumber, "", 0},
	{"underflow", `1e-4000`, ErrNumber, "", 0},
	{"underflow below half denormal", `2e-324`, ErrNumber, "", 0},
	{"inexact", `8.9999999999999999`, ErrNumber, "", 0},
	{"inexact above 2^53", `9007199254740993.0`, ErrNumber, "", 0},
	{"inexact denormal", `4e-324`, ErrNumber, "", 0},
	{"too many digits", `{"n":` + intLiteral(4097) + `}`, ErrNumber, "/n", 5},
	{"too many digits negative", "-" + intLiteral(4097), ErrNumber, "", 0},
	{"UTF-8 byte order mark", "\xef\xbb\xbf{}", ErrSyntax, "", 0},
	{"UTF-16LE with BOM", "\xff\xfe{\x00}\x00", ErrInvalidUTF8, "", 0},
	{"UTF-16BE with BOM", "\xfe\xff\x00{\x00}", ErrInvalidUTF8, "", 0},
	{"UTF-16LE", "{\x00}\x00", ErrInvalidUTF8, "", 0},
	{"UTF-16BE", "\x00{\x00}", ErrInvalidUTF8, "", 0},

	// Grammar.
	{"empty", ``, ErrSyntax, "", 0},
	{"only whitespace", ` `, ErrSyntax, "", 1},
	{"trailing comma in array", `[1,]`, ErrSyntax, "/1", 3},
	{"trailing comma in object", `{"a":1,}`, ErrSyntax, "", 7},
	{"missing colon", `{"a" 1}`, ErrSyntax, "", 5},
	{"unquoted key", `{a:1}`, ErrSyntax, "", 1},
	{"single quotes", `['a']`, ErrSyntax, "/0", 1},
	{"unterminated string", `["abc`, ErrSyntax, "/0", 1},
	{"unterminated array", `[1`, ErrSyntax, "", 2},
	{"bad literal", `[tru]`, ErrSyntax, "/0", 4},
	{"nan lowercase", `nan`, ErrSyntax, "", 1},
	{"leading zero", `[01]`, ErrSyntax, "/0", 1},
	{"plus sign", `+1`, ErrSyntax, "", 0},
	{"bare minus", `-`, ErrSyntax, "", 1},
	{"dot without digits", `1.`, ErrSyntax, "", 2},
	{"leading dot", `.5`, ErrSyntax, "", 0},
	{"exponent without digits", `1e+`, ErrSyntax, "", 3},
	{"hex number", `0x10`, ErrTrailingData, "", 1},
	{"comment", `{} // no`, ErrTrailingData, "", 3},
	{"invalid escape", `{"k":"a\x"}`, ErrSyntax, "/k", 7},
	{"short unicode escape", `"\u12"`, ErrSyntax, "", 1},
	{"raw control character", "{\"k\":\"a\x01b\"}", ErrSyntax, "/k", 7},
	{"raw newline in string", "[\"a\nb\"]", ErrSyntax, "/0", 3},
	{"raw tab in key", "{\"a\tb\":1}", ErrSyntax, "", 3},

	// Unicode.
	{"lone high surrogate", `"\ud800"`, ErrInvalidUTF8, "", 1},
	{"lone low surrogate", `["\udc00"]`, ErrInvalidUTF8, "/0", 2},
	{"high surrogate then letter", `"\ud800x"`, ErrInvalidUTF8, "", 1},
	{"two high surrogates", `"\ud800\ud800"`, ErrInvalidUTF8, "", 1},
	{"lone surrogate in key", `{"a":{"\ud800":1}}`, ErrInvalidUTF8, "/a", 7},
	{"invalid UTF-8 in string", "{\"k\":\"\xff\"}", ErrInvalidUTF8, "/k", 6},
	{"invalid UTF-8 after escape", "{\"k\":\"\\n\xc3\"}", ErrInvalidUTF8, "/k", 8},
	{"overlong encoding", "\"\xc0\xaf\"", ErrInvalidUTF8, "", 1},
	{"encoded surrogate", "\"\xed\xa0\x80\"", ErrInvalidUTF8, "", 1},
	{"invalid UTF-8 outside string", "[1,\xff]", ErrInvalidUTF8, "/1", 3},
	{"invalid UTF-8 trailing", "{}\xff", ErrInvalidUTF8, "", 2},

	// Trailing data.
	{"two values", `{"a":1} {"b":2}`, ErrTrailingData, "", 8},
	{"trailing bracket", `[1]]`, ErrTrailingData, "", 3},
	{"trailing NUL", "{}  \x00", ErrTrailingData, "", 4},
}

func TestParseRejects(t *testing.T) {
	for _, tt := range parseRejectCases {
		t.Run(tt.name, func(t *testing.T) {
			v, err := Parse([]byte(tt.in))
			if err == nil {
				t.Fatalf("Parse(%.40q) = %#v, want error %v", tt.in, v, tt.want)
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse(%.40q) error = %v, want %v", tt.in, err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("Parse(%.40q) error %T is not a *DecodeError", tt.in, err)
			}
			if de.Pointer != tt.pointer {
				t.Errorf("Parse(%.40q) pointer = %q, want %q (%v)", tt.in, de.Pointer, tt.pointer, err)
			}
			if de.Offset != tt.offset {
				t.Errorf("Parse(%.40q) offset = %d, want %d (%v)", tt.in, de.Offset, tt.offset, err)
			}
		})
	}
}

// TestDecodeErrorFormat pins the text of an error: the only test that
// compares messages.
func TestDecodeErrorFormat(t *testing.T) {
	in := "{\n  \"a\": [\n    {\"b\": {\"value\": 1,\n      \"value\": 2}}]}"
	_, err := Parse([]byte(in))
	const want = `/a/0/b/value: duplicate object key: key "value" repeated (line 4, column 7)`
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v\nwant %s", err, want)
	}
	for _, tt := range []struct{ in, want string }{
		{`NaN`, `/: non-finite JSON number is not allowed: NaN (line 1, column 1)`},
		{`[-Infinity]`, `/0: non-finite JSON number is not allowed: -Infinity (line 1, column 2)`},
		{`{"x":1e400}`, `/x: invalid JSON number: 1e400 overflows float64 (line 1, column 6)`},
		{`1e-4000`, `/: invalid JSON number: 1e-4000 underflows to zero in float64 (line 1, column 1)`},
		{`8.9999999999999999`, `/: invalid JSON number: 8.9999999999999999 is not exactly representable as float64 (line 1, column 1)`},
		{`{"a":1}x`, `/: trailing data after JSON value: unexpected character 'x' (line 1, column 8)`},
	} {
		if _, err := Parse([]byte(tt.in)); err == nil || err.Error() != tt.want {
			t.Errorf("Parse(%q) error = %v\nwant %s", tt.in, err, tt.want)
		}
	}
	if got := (&DecodeError{Pointer: "/x", Offset: -1, Err: ErrNumber, Detail: "d"}).Error(); got != "/x: invalid JSON number: d" {
		t.Errorf("error without position = %q", got)
	}
}

func TestDecodeErrorPosition(t *testing.T) {
	in := "{\r\n\"a\": 1,\n\"b\": [true,\n  nul]}"
	_, err := Parse([]byte(in))
	var de *DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("Parse error = %v, want *DecodeError", err)
	}
	want := DecodeError{Pointer: "/b/1", Offset: int64(strings.Index(in, "nul]") + 3), Line: 4, Column: 6, Err: ErrSyntax}
	if de.Pointer != want.Pointer || de.Offset != want.Offset || de.Line != want.Line || de.Column != want.Column || de.Err != want.Err {
		t.Errorf("error = %+v, want %+v", *de, want)
	}
	if de.Unwrap() != ErrSyntax {
		t.Errorf("Unwrap = %v", de.Unwrap())
	}
}

func TestPointerEscaping(t *testing.T) {
	_, err := Parse([]byte(`{"a/b":{"c~d":{"":[{"x":1,"x":2}]}}}`))
	var de *DecodeError
	if !errors.As(err, &de) || !errors.Is(err, ErrDuplicateKey) {
		t.Fatalf("error = %v, want duplicate key", err)
	}
	if want := "/a~1b/c~0d//0/x"; de.Pointer != want {
		t.Errorf("pointer = %q, want %q", de.Pointer, want)
	}
}

func TestParseLimits(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	nestObj := func(n int) string { return strings.Repeat(`{"a":`, n-1) + "{}" + strings.Repeat("}", n-1) }
	tests := []struct {
		name    string
		in      string
		opts    []DecodeOption
		want    error // nil: accepted
		pointer string
	}{
		{"depth 64 arrays", nest(MaxDepth), nil, nil, ""},
		{"depth 65 arrays", nest(MaxDepth + 1), nil, ErrTooDeep, "/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0/0"},
		{"depth 64 objects", nestObj(MaxDepth), nil, nil, ""},
		{"depth 65 objects", nestObj(MaxDepth + 1), nil, ErrTooDeep, strings.Repeat("/a", MaxDepth)},
		{"unclosed deep nesting", strings.Repeat("[", 1_000_000), nil, ErrTooDeep, ""},
		{"custom depth", nest(3), []DecodeOption{WithMaxDepth(2)}, ErrTooDeep, "/0/0"},
		{"custom depth ok", nest(2), []DecodeOption{WithMaxDepth(2)}, nil, ""},
		{"deep custom depth", nest(5000), []DecodeOption{WithMaxDepth(5000)}, nil, ""},
		{"depth ceiling", nest(maxDepthCeiling + 1), []DecodeOption{WithMaxDepth(1 << 30)}, ErrTooDeep, ""},
		{"non-positive depth keeps default", nest(MaxDepth), []DecodeOption{WithMaxDepth(0)}, nil, ""},
		{"size limit", `"0123456789"`, []DecodeOption{WithMaxBytes(11)}, ErrTooLarge, ""},
		{"size limit exact", `"012345678"`, []DecodeOption{WithMaxBytes(11)}, nil, ""},
		{"string limit", `["` + strings.Repeat("a", MaxStringBytes+1) + `"]`, nil, ErrTooLarge, "/0"},
		{"string limit ok", `["` + strings.Repeat("a", MaxStringBytes) + `"]`, nil, nil, ""},
		{"escaped string limit", `["\n` + strings.Repeat("a", MaxStringBytes) + `"]`, nil, ErrTooLarge, "/0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in), tt.opts...)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Parse error: %v", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Parse error = %v, want %v", err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if tt.pointer != "" && de.Pointer != tt.pointer {
				t.Errorf("pointer = %q, want %q", de.Pointer, tt.pointer)
			}
		})
	}
	t.Run("default size limit", func(t *testing.T) {
		big := make([]byte, MaxDocumentBytes+1)
		_, err := Parse(big)
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("Parse(%d bytes) error = %v, want ErrTooLarge", len(big), err)
		}
	})
}

// bigRatExact is the rule Parse applies to float literals, written the slow
// and obvious way: the literal's decimal value equals the decimal value of
// the shortest round-trip form of the float64 nearest to it.
func bigRatExact(lit string) (ok bool, finite bool) {
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(f, 0) {
		return false, false
	}
	want, ok1 := new(big.Rat).SetString(lit)
	got, ok2 := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	if !ok1 || !ok2 {
		return false, true
	}
	if f == 0 && want.Sign() != 0 {
		return false, true // underflow
	}
	return want.Cmp(got) == 0, true
}

func TestFloatExactnessMatchesBigRat(t *testing.T) {
	lits := []string{
		"0.1", "0.2", "0.3", "300.0", "1.5e3", "4.50", "1E30", "0.000000000000000000000000001",
		"8.9999999999999999", "9007199254740993.0", "9007199254740992.0", "4e-324", "5e-324",
		"2.4703282292062328e-324", "2.4703282292062327e-324", "1.7976931348623157e308",
		"1.7976931348623158e308", "333333333.33333329", "333333333.3333333", "123456789012345678.0",
		"0.30000000000000004", "100000000000000000000000.0", "1e23", "9.999999999999999e22",
		"0.0000000000000000000000000000000000000000000000000000000000000000000000001e73",
		"10000000000000000000000000000000000000000000000000000000000000000000000e-70",
		"1.00000000000000000000000000000000000000000000000000000000000000000000000",
		"1.00000000000000000000000000000000000000000000000000000000000000000000001",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		var lit string
		switch rng.IntN(3) {
		case 0: // a float64's shortest form, maybe padded: exact
			f := math.Float64frombits(rng.Uint64())
			if math.IsNaN(f) || math.IsInf(f, 0) {
				continue
			}
			lit = strconv.FormatFloat(f, 'e', -1, 64)
		case 1: // random digits and exponent: usually inexact
			nd := 1 + rng.IntN(25)
			var b strings.Builder
			b.WriteString(strconv.Itoa(1 + rng.IntN(9)))
			b.WriteByte('.')
			for range nd {
				b.WriteByte(byte('0' + rng.IntN(10)))
			}
			fmt.Fprintf(&b, "e%d", rng.IntN(700)-350)
			lit = b.String()
		case 2: // short decimals: often exact
			lit = fmt.Sprintf("%d.%de%d", rng.IntN(1000), rng.IntN(1000), rng.IntN(40)-20)
		}
		lits = append(lits, lit)
	}
	for _, lit := range lits {
		_, prob := floatValue(lit)
		if fast := checkFloatLiteral(lit); fast != prob {
			t.Errorf("checkFloatLiteral(%s) = %v, floatValue says %v", lit, fast, prob)
		}
		want, finite := bigRatExact(lit)
		if !finite {
			if prob != numOverflow {
				t.Errorf("floatValue(%s) = %v, want overflow", lit, prob)
			}
			continue
		}
		if got := prob == numOK; got != want {
			t.Errorf("floatValue(%s) exact = %v (%v), big.Rat says %v", lit, got, prob, want)
		}
	}
}

// Types for DecodeInto.
type strictCase struct {
	Name  string          `json:"name"`
	Args  []string        `json:"args,omitempty"`
	Env   map[string]any  `json:"env,omitempty"`
	Extra json.RawMessage `json:"extra_raw,omitempty"`
}

type strictVariant struct {
	ID    string       `json:"id"`
	Cases []strictCase `json:"cases"`
}

type strictMeta struct {
	Schema  string `json:"schema"`
	Comment string `json:"comment,omitempty"`
}

type strictUnmarshaler struct{ raw string }

func (u *strictUnmarshaler) UnmarshalJSON(b []byte) error { u.raw = string(b); return nil }

type strictWorkload struct {
	strictMeta
	*OptionalPart
	Variants []strictVariant         `json:"variants"`
	Labels   map[string]string       `json:"labels,omitempty"`
	Matrix   map[string][]strictCase `json:"matrix,omitempty"`
	Any      any                     `json:"any,omitempty"`
	Custom   strictUnmarshaler       `json:"custom,omitzero"`
	Seed     *json.Number            `json:"seed,omitempty"`
	Grid     [2][]strictCase         `json:"grid,omitzero"`
	Ignored  string                  `json:"-"`
	//lint:ignore SA5008 encoding/json names this field "-"; DecodeInto must agree
	Dash      string                       `json:"-,"`
	Untagged  int                          ``
	Nested    map[string]map[string]string `json:"nested,omitempty"`
	unexposed int
}

// OptionalPart is exported: encoding/json cannot fill an embedded pointer
// to an unexported struct.
type OptionalPart struct {
	Timeout int `json:"timeout,omitempty"`
}

func TestDecodeInto(t *testing.T) {
	in := `{
  "schema": "w.v1", "comment": "embedded fields are promoted", "timeout": 5,
  "variants": [{"id": "a", "cases": [{"name": "c0", "env": {"ANY": {"x": [1]}}}, {"name": "c1", "extra_raw": {"free": 1}}]}],
  "labels": {"whatever": "x"},
  "matrix": {"m": [{"name": "c2"}]},
  "any": {"free": {"form": [true]}},
  "custom": {"anything": ["goes"]},
  "seed": 9007199254740993,
  "grid": [[], [{"name": "g"}]],
  "-": "dash",
  "Untagged": 7,
  "nested": {"a": {"b": "c"}}
}`
	var w strictWorkload
	if err := DecodeInto([]byte(in), &w); err != nil {
		t.Fatalf("DecodeInto: %v", err)
	}
	if w.Schema != "w.v1" || w.OptionalPart == nil || w.Timeout != 5 || len(w.Variants) != 1 || w.Variants[0].Cases[1].Name != "c1" ||
		w.Labels["whatever"] != "x" || w.Seed == nil || *w.Seed != "9007199254740993" || w.Dash != "dash" || w.Untagged != 7 ||
		w.Custom.raw != `{"anything": ["goes"]}` || w.Grid[1][0].Name != "g" || w.Nested["a"]["b"] != "c" || w.unexposed != 0 {
		t.Errorf("DecodeInto result = %+v", w)
	}
	if env := w.Variants[0].Cases[0].Env["ANY"]; !reflect.DeepEqual(env, map[string]any{"x": []any{json.Number("1")}}) {
		t.Errorf("env = %#v, want json.Number leaves", env)
	}
}

func TestDecodeIntoRejects(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    error
		pointer string
	}{
		{"unknown top-level", `{"schema":"x","bogus":1}`, ErrUnknownField, "/bogus"},
		{"unknown nested", `{"variants":[{"id":"a","cases":[{"name":"x"},{"name":"y","extra":true}]}]}`, ErrUnknownField, "/variants/0/cases/1/extra"},
		{"unknown in map value struct", `{"matrix":{"k/1":[{"nme":"x"}]}}`, ErrUnknownField, "/matrix/k~11/0/nme"},
		{"unknown in array of arrays", `{"grid":[[{"x":1}],[]]}`, ErrUnknownField, "/grid/0/0/x"},
		{"case differs", `{"Schema":"x"}`, ErrUnknownField, "/Schema"},
		{"skipped field", `{"Ignored":"x"}`, ErrUnknownField, "/Ignored"},
		{"unexported field", `{"unexposed":1}`, ErrUnknownField, "/unexposed"},
		{"embedded type name", `{"strictMeta":{}}`, ErrUnknownField, "/strictMeta"},
		{"first unknown in document order", `{"zzz":1,"variants":[{"id":"a","qq":1}],"aaa":2}`, ErrUnknownField, "/zzz"},
		{"strict parse first", `{"schema":"x","schema":"y","bogus":1}`, ErrDuplicateKey, "/schema"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w strictWorkload
			err := DecodeInto([]byte(tt.in), &w)
			if !errors.Is(err, tt.want) {
				t.Fatalf("DecodeInto error = %v, want %v", err, tt.want)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError", err)
			}
			if de.Pointer != tt.pointer {
				t.Errorf("pointer = %q, want %q", de.Pointer, tt.pointer)
			}
			if de.Offset < 0 || de.Line < 1 {
				t.Errorf("position = offset %d line %d, want a position", de.Offset, de.Line)
			}
		})
	}
	t.Run("offset of the unknown key", func(t *testing.T) {
		in := "{\"variants\": [\n {\"id\": \"a\", \"cases\": [{\"name\": \"x\"}, {\"name\": \"y\",\n  \"extra\": true}]}]}"
		var w strictWorkload
		var de *DecodeError
		if err := DecodeInto([]byte(in), &w); !errors.As(err, &de) {
			t.Fatalf("DecodeInto error = %v", err)
		}
		if de.Offset != int64(strings.Index(in, `"extra"`)) || de.Line != 3 || de.Column != 3 {
			t.Errorf("position = offset %d line %d column %d", de.Offset, de.Line, de.Column)
		}
	})
	t.Run("type mismatch is wrapped", func(t *testing.T) {
		var w strictWorkload
		err := DecodeInto([]byte(`{"Untagged":"seven"}`), &w)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Errorf("DecodeInto error = %v, want a wrapped *json.UnmarshalTypeError", err)
		}
	})
	t.Run("non-pointer target", func(t *testing.T) {
		var w strictWorkload
		if err := DecodeInto([]byte(`{}`), w); err == nil {
			t.Error("DecodeInto(non-pointer) succeeded")
		}
		if err := DecodeInto([]byte(`{}`), (*strictWorkload)(nil)); err == nil {
			t.Error("DecodeInto(nil pointer) succeeded")
		}
	})
	t.Run("into map and any", func(t *testing.T) {
		var m map[string]any
		if err := DecodeInto([]byte(`{"a":{"b":1}}`), &m); err != nil {
			t.Fatal(err)
		}
		if m["a"].(map[string]any)["b"] != json.Number("1") {
			t.Errorf("m = %#v", m)
		}
	})
}

// Ambiguous embedded fields: encoding/json hides a name two embedded structs
// at the same depth both define without tags, so DecodeInto rejects it.
type strictAmbA struct{ Name string }
type strictAmbB struct{ Name string }
type strictAmbTagged struct {
	Name string `json:"Name"`
}
type strictAmbiguous struct {
	strictAmbA
	strictAmbB
}
type strictDominated struct {
	strictAmbA
	strictAmbTagged
}

func TestDecodeIntoEmbeddedConflicts(t *testing.T) {
	var a strictAmbiguous
	if err := DecodeInto([]byte(`{"Name":"x"}`), &a); !errors.Is(err, ErrUnknownField) {
		t.Errorf("strictAmbiguous embedded name: error = %v, want ErrUnknownField", err)
	}
	var d strictDominated
	if err := DecodeInto([]byte(`{"Name":"x"}`), &d); err != nil || d.strictAmbTagged.Name != "x" {
		t.Errorf("tagged embedded name: error = %v, value %+v", err, d)
	}
}

// strictBenchDocument returns a ~100 KB JSON document shaped like qualkit's
// evidence: objects with string, integer, float and boolean members, nested
// arrays, and a few escapes.
func strictBenchDocument() []byte {
	var b strings.Builder
	b.WriteString(`{"schema":"qualkit.receipt.v1","requests":[`)
	for i := 0; b.Len() < 100_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"index":%d,"seed":%d,"body_sha256":"sha256:%064x","started_ms":%d.%03d,`+
			`"events":[{"kind":"token","offset_ms":%d.25,"text":"tok\u00e9n %d\n"},{"kind":"done","offset_ms":%d.5}],`+
			`"usage":{"prompt_tokens":%d,"completion_tokens":%d},"finish_reason":"stop","ok":true,"error":null}`,
			i, 1000+i*7, i*2654435761, i*13, i%1000, i*3, i, i*5, 100+i%50, 16)
	}
	b.WriteString(`]}`)
	return []byte(b.String())
}

func BenchmarkParse(b *testing.B) {
	doc := strictBenchDocument()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(doc); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodingJSONUnmarshal(b *testing.B) {
	doc := strictBenchDocument()
	b.SetBytes(int64(len(doc)))
	b.ReportAllocs()
	for b.Loop() {
		var v any
		if err := json.Unmarshal(doc, &v); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCanonical(b *testing.B) {
	v, err := Parse(strictBenchDocument())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Canonical(v); err != nil {
			b.Fatal(err)
		}
	}
}
