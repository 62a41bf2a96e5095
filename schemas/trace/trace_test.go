package trace

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// TestOffsets: offsets are from the first entry, scaled, in ns.
func TestOffsets(t *testing.T) {
	es := []Entry{{TimestampMs: 100}, {TimestampMs: 350}, {TimestampMs: 351}}
	if got := Offsets(es, 0.5); !slices.Equal(got, []int64{0, 125e6, 125.5e6}) {
		t.Fatalf("%v", got)
	}
	if _, err := Read([]byte(`{"timestamp":1,"input_length":1,"output_length":1,"hash_ids":[1,-2]}`)); !errors.Is(err, ErrTrace) {
		t.Fatalf("a negative hash id: %v", err)
	}
}

// FuzzRead: no input panics; what Read accepts, Write writes back to the same entries.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"timestamp":0,"input_length":5,"output_length":2,"hash_ids":[1,2]}` + "\n" + `{"timestamp":9,"input_length":1,"output_length":1}`))
	f.Add([]byte(`{"timestamp":1,"input_length":1,"output_length":1,"timestamp":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := Read(data)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Write(&buf, es); err != nil {
			t.Fatal(err)
		}
		back, err := Read(buf.Bytes())
		if err != nil || len(back) != len(es) {
			t.Fatalf("round trip: %v", err)
		}
		for i := range es {
			if back[i].TimestampMs != es[i].TimestampMs || back[i].InputLength != es[i].InputLength || !slices.Equal(back[i].HashIDs, es[i].HashIDs) {
				t.Fatalf("entry %d: %+v, wrote %+v", i, back[i], es[i])
			}
		}
	})
}
