package trace

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestOffsets: offsets are from the first entry, scaled, in ns.
func TestOffsets(t *testing.T) {
	es := []Entry{{TimestampMs: 100}, {TimestampMs: 350}, {TimestampMs: 351}}
	if got, err := Offsets(es, 0.5); err != nil || !slices.Equal(got, []int64{0, 125e6, 125.5e6}) {
		t.Fatalf("%v %v", got, err)
	}
	if _, err := Read([]byte(`{"timestamp":1,"input_length":1,"output_length":1,"hash_ids":[1,-2]}`)); !errors.Is(err, ErrTrace) {
		t.Fatalf("a negative hash id: %v", err)
	}
}

// FuzzRead: no input panics; what Read accepts, Write writes back to the same entries.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"timestamp":0,"input_length":5,"output_length":2,"hash_ids":[1,2]}` + "\n" + `{"timestamp":9,"input_length":1,"output_length":1}`))
	f.Add([]byte(`{"timestamp":1,"input_length":1,"output_length":1,"timestamp":2}`))
	f.Add([]byte(`{"timestamp":0,"input_length":5,"output_length":2}` + "\n" + `{"timestamp":9,"input_length":7,"output_length":1,"parent":0}`))
	f.Add([]byte(joinTrace))
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
			if back[i].TimestampMs != es[i].TimestampMs || back[i].InputLength != es[i].InputLength || back[i].After != es[i].After || !slices.Equal(back[i].Join, es[i].Join) || !slices.Equal(back[i].HashIDs, es[i].HashIDs) {
				t.Fatalf("entry %d: %+v, wrote %+v", i, back[i], es[i])
			}
		}
	})
}

// TestOffsetsOutOfRange: a scaled offset past int64 nanoseconds (10^10 ms at time_scale 1000 is
// 10^19 ns) is an error naming the entry, never a wrapped integer; so is a non-finite scale.
func TestOffsetsOutOfRange(t *testing.T) {
	es := []Entry{{TimestampMs: 0}, {TimestampMs: 5}, {TimestampMs: 1e10}}
	for _, tc := range []struct {
		scale float64
		want  string
	}{
		{1000, "entry 2 (line 3, timestamp 10000000000 ms)"},
		{math.Inf(1), "time_scale +Inf"},
		{math.NaN(), "time_scale NaN"},
		{0, "time_scale 0"},
	} {
		offs, err := Offsets(es, tc.scale)
		if !errors.Is(err, ErrSchedule) || !strings.Contains(err.Error(), tc.want) || offs != nil {
			t.Errorf("time_scale %g: %v %v, want %q", tc.scale, offs, err, tc.want)
		}
	}
	if offs, err := Offsets(es, 1); err != nil || offs[2] != 1e16 {
		t.Fatalf("time_scale 1: %v %v", offs, err)
	}
	for _, tc := range []struct {
		scale, limit float64
		want         int
	}{{1, 9e6, 2}, {1, 1e7, -1}, {1000, 1e300, 2}, {1, 0.004, 1}, {1, 0, 1}} {
		if got := FirstPast(es, tc.scale, tc.limit); got != tc.want {
			t.Errorf("FirstPast(scale %g, limit %g s) = %d, want %d", tc.scale, tc.limit, got, tc.want)
		}
	}
	if _, ok := OffsetNs(MaxTimestampMs, 0, 1e6); ok {
		t.Fatal("OffsetNs converted an offset past 2^62 ns")
	}
}

// joinTrace: entry 0 starts a conversation, 1 and 2 are two sub-agents it spawned, 3 joins them
// ("parents"), 4 follows 3 ("parents" of one member is "parent").
const joinTrace = `{"timestamp":0,"input_length":5,"output_length":2}
{"timestamp":1,"input_length":6,"output_length":2,"parent":0}
{"timestamp":1,"input_length":7,"output_length":2,"parent":0}
{"timestamp":9,"input_length":8,"output_length":2,"parents":[1,2]}
{"timestamp":9,"input_length":9,"output_length":2,"parents":[3]}
`

// TestReadParents: an entry may wait for several earlier entries; its turn is 1 + the deepest of
// theirs; a list out of order, with a repeat, naming a later entry, empty, too long, or beside
// "parent" is refused, naming the line.
func TestReadParents(t *testing.T) {
	es, err := Read([]byte(joinTrace))
	if err != nil {
		t.Fatal(err)
	}
	if es[3].After != 0 || !slices.Equal(es[3].Join, []int64{1, 2}) || es[4].After != 4 || es[4].Join != nil {
		t.Fatalf("%+v", es)
	}
	if got := slices.Collect(es[3].Parents()); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("parents of the join: %v", got)
	}
	if got := Turns(es); !slices.Equal(got, []int32{1, 2, 2, 3, 4}) {
		t.Fatalf("turns %v", got)
	}
	// The join's depth is the deepest parent's: 0 <- 1 <- 2, and 3 waits for 0 and 2.
	deep := []Entry{{}, {After: 1}, {After: 2}, {Join: []int64{0, 2}}}
	if got := Turns(deep); !slices.Equal(got, []int32{1, 2, 3, 4}) {
		t.Fatalf("turns %v", got)
	}
	var buf bytes.Buffer
	if err := Write(&buf, es); err != nil || !strings.Contains(buf.String(), `"parents":[1,2]}`) || strings.Contains(buf.String(), `"parents":[3]`) {
		t.Fatalf("write: %v %s", err, buf.String())
	}
	head := "{\"timestamp\":0,\"input_length\":1,\"output_length\":1}\n{\"timestamp\":0,\"input_length\":1,\"output_length\":1}\n"
	many := make([]string, MaxParents+1)
	for k := range many {
		many[k] = strconv.Itoa(k)
	}
	for _, c := range []struct{ name, line, want string }{
		{"out of order", `"parents":[1,0]`, "line 3: parents[1] 0 after 1"},
		{"repeated", `"parents":[0,0]`, "line 3: parents[1] 0 after 0"},
		{"later", `"parents":[0,2]`, "line 3: parent 2 is not an earlier entry"},
		{"own", `"parents":[2]`, "line 3: parent 2 is not an earlier entry"},
		{"negative", `"parents":[-1,1]`, "line 3: parents[0] -1"},
		{"empty", `"parents":[]`, "line 3: 0 parents: want 1 to 64"},
		{"too many", `"parents":[` + strings.Join(many, ",") + `]`, "line 3: 65 parents: want 1 to 64"},
		{"both spellings", `"parent":0,"parents":[0,1]`, `line 3: both "parent" and "parents"`},
	} {
		data := head + `{"timestamp":1,"input_length":1,"output_length":1,` + c.line + "}\n"
		if _, err := Read([]byte(data)); !errors.Is(err, ErrTrace) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
