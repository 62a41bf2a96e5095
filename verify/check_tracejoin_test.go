package verify

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// TestCheckTraceJoin: an entry that waits for several (a join) is scheduled at
// metric.AfterParents of its offset and all its parents' ends, and its trace_entry names the
// parents; a join sent when only its earlier parent had ended, a parent dropped from (or added
// to) the record's list, a join recorded with one parent, and a parent missing from the row are
// found.
func TestCheckTraceJoin(t *testing.T) {
	// Entry 0 spawns 1 and 2 (2 ends 30 ms after 1); 3 joins them.
	entries := []trace.Entry{{TimestampMs: 0, InputLength: 5, OutputLength: 3}, {TimestampMs: 1, InputLength: 9, OutputLength: 2, After: 1}, {TimestampMs: 1, InputLength: 9, OutputLength: 2, After: 1}, {TimestampMs: 5, InputLength: 12, OutputLength: 2, Join: []int64{1, 2}}}
	offs, err := trace.Offsets(entries, 1)
	if err != nil {
		t.Fatal(err)
	}
	zero := int64(0)
	const origin = int64(5e9)
	build := func() []*record.Record {
		rec := func(k, sched, closeNs int64, te *contract.TraceEntry) *record.Record {
			return &record.Record{Line: int(k), Index: k, Sched: origin + sched, Send: origin + sched + 1e5, HasSend: true, Close: origin + closeNs, HasClose: true, HasUsage: true, CompletionTokens: 2, Trace: te}
		}
		return []*record.Record{
			rec(0, 0, 10e6, &contract.TraceEntry{Entry: 0, Turn: 1}),
			rec(1, 10e6, 20e6, &contract.TraceEntry{Entry: 1, Parent: &zero, Turn: 2}),
			rec(2, 10e6, 50e6, &contract.TraceEntry{Entry: 2, Parent: &zero, Turn: 2}),
			rec(3, 50e6, 60e6, &contract.TraceEntry{Entry: 3, Parents: []int64{1, 2}, Turn: 3}),
		}
	}
	for _, tc := range []struct {
		name   string
		tamper func([]*record.Record) []*record.Record
		want   string
	}{
		{"honest", func(r []*record.Record) []*record.Record { return r }, ""},
		{"sent when the first parent ended", func(r []*record.Record) []*record.Record { r[3].Sched = origin + 20e6; return r }, "request 3 is scheduled at 5020000000 ns, its trace entry (at its offset, or when its parent ended: a join's last) at 5050000000 ns"},
		{"the later parent's end moved", func(r []*record.Record) []*record.Record { r[2].Close += 1e6; return r }, "request 3 is scheduled at"},
		{"a parent dropped from the list", func(r []*record.Record) []*record.Record { r[3].Trace.Parents = []int64{1}; return r }, "records trace_entry {entry 3, parents [1], turn 3}; the bound trace says {entry 3, parents [1 2], turn 3}"},
		{"a parent added to the list", func(r []*record.Record) []*record.Record { r[3].Trace.Parents = []int64{0, 1, 2}; return r }, "records trace_entry {entry 3, parents [0 1 2], turn 3}"},
		{"one parent instead of the join", func(r []*record.Record) []*record.Record {
			one := int64(2)
			r[3].Trace.Parents, r[3].Trace.Parent = nil, &one
			return r
		}, "records trace_entry {entry 3, parent 2, turn 3}; the bound trace says {entry 3, parents [1 2], turn 3}"},
		{"a parent's record missing", func(r []*record.Record) []*record.Record { return []*record.Record{r[0], r[1], r[3]} }, "request 3 (entry 3) waits for entry 2, which the row did not record"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &finding.Collector{Check: CheckTolerances}
			rowcheck.TraceSchedule(c, contract.Row{Concurrency: 4}, entries, offs, tc.tamper(build()), 0, false)
			res := c.Result()
			if tc.want == "" {
				if len(res.Findings) != 0 {
					t.Fatalf("findings %v", res.Findings)
				}
				return
			}
			for _, f := range res.Findings {
				if strings.Contains(f.Error(), tc.want) {
					return
				}
			}
			t.Fatalf("no finding mentioning %q: %v", tc.want, res.Findings)
		})
	}
}
