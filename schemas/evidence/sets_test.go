package evidence

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// TestOutputSetDigestIsCanonical: the directly written array is the RFC 8785 form of the digests,
// and an empty or non-digest entry yields no set.
func TestOutputSetDigestIsCanonical(t *testing.T) {
	ds := []string{"sha256:" + strings.Repeat("a", 64), "sha256:" + strings.Repeat("0", 64)}
	b, err := jsonstrict.Canonical(ds)
	if err != nil {
		t.Fatal(err)
	}
	got, ok := OutputSetDigest(ds)
	if !ok || got != DigestOf(b) {
		t.Fatalf("OutputSetDigest = %s %v, want %s", got, ok, DigestOf(b))
	}
	if _, ok := OutputSetDigest([]string{ds[0], ""}); ok {
		t.Fatal("a missing output digest gave a set")
	}
	if _, ok := OutputSetDigest([]string{`sha256:"x`}); ok {
		t.Fatal("a digest needing escapes gave a set")
	}
	if got, ok := OutputSetDigest(nil); !ok || got != DigestOf([]byte("[]")) {
		t.Fatalf("empty set = %s %v", got, ok)
	}
}
