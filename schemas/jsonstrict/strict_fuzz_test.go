package jsonstrict

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"unicode/utf16"
	"unicode/utf8"
)

var strictSentinels = []error{ErrSyntax, ErrDuplicateKey, ErrNonFinite, ErrNumber, ErrTrailingData,
	ErrInvalidUTF8, ErrTooDeep, ErrTooLarge}

func addParseSeeds(f *testing.F) {
	for _, c := range parseAcceptCases {
		if len(c.in) < 1000 {
			f.Add([]byte(c.in))
		}
	}
	for _, c := range parseRejectCases {
		if len(c.in) < 1000 {
			f.Add([]byte(c.in))
		}
	}
	for _, s := range []string{
		`{"a":[1,2.5e-3,{"b":null}],"c":"\u00e9\ud83d\ude00","d":-0.0}`,
		`{"\u20ac":1,"\r":2,"\ufb33":3,"1":4,"\ud83d\ude00":5,"\u0080":6,"\u00f6":7}`,
		`[333333333.3333333,1E30,4.50,2e-3,0.000000000000000000000000001]`,
		`[295147905179352830000,9007199254740993,1e21,1e-7]`,
		`"\u0000\u001f\u007f\u2028"`,
	} {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile(filepath.Join("..", "testdata", "kiln", "oracle-result-v1-rocm-hf-next-token-guarded-fingerprint.json")); err == nil {
		f.Add(data)
	}
}

// stdDecode decodes with encoding/json as DecodeInto's second stage does.
func stdDecode(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

func FuzzParse(f *testing.F) {
	addParseSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T is not a *DecodeError: %v", err, err)
			}
			known := slices.ContainsFunc(strictSentinels, func(s error) bool { return errors.Is(err, s) })
			if !known || de.Offset < 0 || de.Offset > int64(len(data)) || de.Line < 1 || de.Column < 1 {
				t.Fatalf("bad error %#v", de)
			}
			return
		}
		if !json.Valid(data) {
			t.Fatalf("Parse accepted what encoding/json rejects: %q", data)
		}
		std, err := stdDecode(data)
		if err != nil {
			t.Fatalf("encoding/json cannot decode what Parse accepted: %v", err)
		}
		if !reflect.DeepEqual(v, std) {
			t.Fatalf("Parse = %#v, encoding/json = %#v", v, std)
		}

		c1, err := Canonical(v)
		if err != nil {
			// Only integer literals without an exact float64 are refused.
			if !errors.Is(err, ErrNumber) {
				t.Fatalf("Canonical of a parsed value: %v", err)
			}
		} else {
			v2, err := Parse(c1)
			if err != nil {
				t.Fatalf("Parse(Canonical) = %v for %q", err, c1)
			}
			c2, err := Canonical(v2)
			if err != nil || !bytes.Equal(c1, c2) {
				t.Fatalf("Canonical not idempotent: %q then %q, %v", c1, c2, err)
			}
		}

		for _, ascii := range []bool{true, false} {
			k, err := KilnCanonical(v, ascii)
			if err != nil {
				t.Fatalf("KilnCanonical(ascii=%v): %v", ascii, err)
			}
			back, err := Parse(k)
			if err != nil || !reflect.DeepEqual(back, v) {
				t.Fatalf("KilnCanonical(ascii=%v) = %q does not parse back: %v", ascii, k, err)
			}
			if ascii {
				for _, c := range k {
					if c < 0x20 || c >= 0x7f {
						t.Fatalf("KilnCanonical(ascii) has byte 0x%02x: %q", c, k)
					}
				}
			}
		}
	})
}

func FuzzCanonical(f *testing.F) {
	addParseSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Numbers: the bytes of data as float64 bits.
		if len(data) >= 8 {
			x := math.Float64frombits(uint64(data[0]) | uint64(data[1])<<8 | uint64(data[2])<<16 | uint64(data[3])<<24 |
				uint64(data[4])<<32 | uint64(data[5])<<40 | uint64(data[6])<<48 | uint64(data[7])<<56)
			checkNumberForms(t, x)
		}

		// Strings: data as one string value.
		if utf8.Valid(data) {
			c, err := Canonical(string(data))
			if err != nil {
				t.Fatalf("Canonical(string): %v", err)
			}
			back, err := Parse(c)
			if err != nil || back != string(data) {
				t.Fatalf("Canonical(%q) = %q parses back to %q, %v", data, c, back, err)
			}
			// Key order: split data in two and compare with UTF-16.
			mid := len(data) / 2
			for mid > 0 && !utf8.RuneStart(data[mid]) {
				mid--
			}
			a, b := string(data[:mid]), string(data[mid:])
			if got, want := compareUTF16(a, b), slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b))); got != want {
				t.Fatalf("compareUTF16(%q, %q) = %d, want %d", a, b, got, want)
			}
		} else if _, err := Canonical(string(data)); !errors.Is(err, ErrInvalidUTF8) {
			t.Fatalf("Canonical(invalid UTF-8) = %v", err)
		}

		// Documents: the canonical form of the json.Number tree equals that of
		// the float64 tree encoding/json builds.
		c, err := CanonicalJSON(data)
		if err != nil {
			return
		}
		var std any
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("encoding/json rejects a document CanonicalJSON accepts: %v", err)
		}
		cs, err := Canonical(std)
		if err != nil || !bytes.Equal(c, cs) {
			t.Fatalf("CanonicalJSON = %q, Canonical(float64 tree) = %q, %v", c, cs, err)
		}
	})
}

// checkNumberForms checks the ECMAScript and Python forms of x: both read
// back as x, and the strict parser accepts them as exact.
func checkNumberForms(t *testing.T, x float64) {
	t.Helper()
	es, err := Canonical(x)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		if !errors.Is(err, ErrNonFinite) {
			t.Fatalf("Canonical(%v) error = %v, want ErrNonFinite", x, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("Canonical(%v): %v", x, err)
	}
	py, err := KilnCanonical(x, true)
	if err != nil {
		t.Fatalf("KilnCanonical(%v): %v", x, err)
	}
	for _, form := range [][]byte{es, py} {
		back, err := strconv.ParseFloat(string(form), 64)
		if err != nil || (back != x && !(back == 0 && x == 0)) {
			t.Fatalf("%q reads back as %v, want %v (%v)", form, back, x, err)
		}
		v, err := Parse(form)
		if err != nil {
			t.Fatalf("Parse(%q): %v", form, err)
		}
		again, err := Canonical(v)
		if err != nil || !bytes.Equal(again, es) {
			t.Fatalf("Canonical(Parse(%q)) = %q, %v; want %q", form, again, err, es)
		}
	}
}

func FuzzDecodeInto(f *testing.F) {
	addParseSeeds(f)
	for _, c := range []string{
		`{"schema":"w","variants":[{"id":"a","cases":[{"name":"x","extra":1}]}],"matrix":{"m":[{"name":"y"}]}}`,
		`{"labels":{"a":"b"},"custom":[1,{"x":2}],"any":{"k":[]},"grid":[[{"name":"g","nope":0}],[]],"timeout":1}`,
	} {
		f.Add([]byte(c))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var w strictWorkload
		err := DecodeInto(data, &w)
		_, perr := Parse(data)
		if err == nil {
			if perr != nil {
				t.Fatalf("DecodeInto accepted what Parse rejects: %v", perr)
			}
			return
		}
		if !errors.Is(err, ErrUnknownField) {
			return
		}
		var de *DecodeError
		if !errors.As(err, &de) || perr != nil || de.Pointer == "" {
			t.Fatalf("unknown field error = %#v (parse error %v)", err, perr)
		}
		if de.Offset < 0 || de.Offset >= int64(len(data)) || data[de.Offset] != '"' {
			t.Fatalf("unknown field offset %d does not point at a key in %q", de.Offset, data)
		}
	})
}
