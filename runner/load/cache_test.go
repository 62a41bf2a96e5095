package load

import (
	"strings"
	"testing"
)

// TestColdNonces: a row's nonces are seeded (the same twice), unique within the row and across
// rows, one word each, and go in front of the system message, or of the text without one.
func TestColdNonces(t *testing.T) {
	a, b := nonces(7, 2, 0, 50), nonces(7, 2, 0, 50)
	seen := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("nonce %d differs between two plans: %s vs %s", i, a[i], b[i])
		}
		if seen[a[i]] || len(strings.Fields(a[i])) != 1 || !strings.HasPrefix(a[i], "qk-nonce-") {
			t.Fatalf("nonce %d %q repeats or is not one qk-nonce- word", i, a[i])
		}
		seen[a[i]] = true
	}
	for _, other := range [][]string{nonces(7, 2, 1, 50), nonces(7, 4, 0, 50), nonces(8, 2, 0, 50)} {
		for _, n := range other {
			if seen[n] {
				t.Fatalf("nonce %s of another row, repetition or seed repeats one of this row's", n)
			}
		}
	}
	p := withNonce(Prompt{ID: "p-one", System: "be terse", Text: "hi"}, "qk-nonce-1")
	if p.System != "qk-nonce-1 be terse" || p.Text != "hi" || p.ID != "p-one" {
		t.Fatalf("with a system message: %+v", p)
	}
	if p := withNonce(Prompt{ID: "p-two", Text: "hi"}, "qk-nonce-2"); p.Text != "qk-nonce-2 hi" || p.System != "" {
		t.Fatalf("without one: %+v", p)
	}
}
