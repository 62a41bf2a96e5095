package synth

import (
	"strings"
	"testing"
)

// FuzzTextFields: TextFields counts exactly the fields strings.Fields returns, for any bytes
// (invalid UTF-8 and Unicode spaces included).
func FuzzTextFields(f *testing.F) {
	for _, s := range []string{"", " ", "a", " a  b\tc\n", "\u00a0x\u2003y\u3000", "\xff \xfe", "a\u0085b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := TextFields(s), len(strings.Fields(s)); got != want {
			t.Fatalf("TextFields(%q) = %d, strings.Fields has %d", s, got, want)
		}
	})
}
