package metric

import "testing"

// TestTraceRate: (n − 1) over the span of the n entries' scaled offsets; none under two entries
// or over an empty span.
func TestTraceRate(t *testing.T) {
	for _, c := range []struct {
		n, first, last int64
		want           float64 // 0: nil
	}{
		{4, 0, 50_000_000, 60},
		{2, 1_000, 1_000_000_000 + 1_000, 1},
		{1, 0, 0, 0},
		{0, 0, 0, 0},
		{3, 5, 5, 0},
		{3, 10, 5, 0},
	} {
		got := TraceRate(c.n, c.first, c.last)
		if (got == nil) != (c.want == 0) || (got != nil && *got != c.want) {
			t.Errorf("TraceRate(%d, %d, %d) = %v, want %v", c.n, c.first, c.last, got, c.want)
		}
	}
}
