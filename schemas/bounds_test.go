package schemas

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestBoundsOf reads limits from the exported request-record schema through $ref, allOf and a
// nullable anyOf, and refuses a limit the schema does not set.
func TestBoundsOf(t *testing.T) {
	b, err := BoundsOf(contract.RequestRecord)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path, kw string
		want     float64
	}{
		{"row.concurrency", "minimum", 1},
		{"row.concurrency", "maximum", 4096},
		{"row.repetition", "maximum", 999},
		{"events", "maxItems", 1 << 20},
		{"status_code", "minimum", 100},
		{"status_code", "maximum", 599},
		{"error.message", "maxLength", 2048},
		{"assertions[].detail", "maxLength", 512},
	} {
		if got, ok := b[c.path][c.kw]; !ok || got != c.want {
			t.Errorf("%s %s = %v (%v), want %v", c.path, c.kw, got, ok, c.want)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Limit of a missing bound did not panic")
		}
	}()
	b.Limit("row.concurrency", "maxLength")
}
