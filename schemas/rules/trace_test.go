package rules

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/trace"
)

// TestCheckTraceSchedule: a bound trace's replayed entries, scaled, must fit the case's
// timeout_seconds and int64 nanoseconds; the problem names the first entry past it, and entries
// past requests are not replayed.
func TestCheckTraceSchedule(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	n := func(v int64) *int64 { return &v }
	es := []trace.Entry{{TimestampMs: 0}, {TimestampMs: 30_000}, {TimestampMs: 1e10}}
	for _, tc := range []struct {
		name     string
		scale    *float64
		requests *int64
		timeout  int64
		want     string
	}{
		{"overflow", f(1000), nil, 172800, "entry 2 (line 3, timestamp 10000000000 ms) is scheduled 1e+10 s after the first at time_scale 1000: more than int64 nanoseconds"},
		{"past the timeout", nil, nil, 172800, "entry 2 (line 3, timestamp 10000000000 ms) is scheduled 1e+07 s after the first at time_scale 1: past the case's timeout_seconds 172800"},
		{"scaled past the timeout", f(2), n(2), 59, "entry 1 (line 2, timestamp 30000 ms) is scheduled 60 s after the first at time_scale 2: past the case's timeout_seconds 59"},
		{"within when only two are replayed", f(2), n(2), 60, ""},
		{"within when scaled down", f(1e-6), nil, 60, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := contract.Case{Kind: contract.CaseKindServing, TimeoutSeconds: tc.timeout, Requests: tc.requests,
				Corpus: &contract.Corpus{Source: contract.CorpusSourceTrace, Path: "traces/t.jsonl", TimeScale: tc.scale}}
			ps := CheckTraceSchedule("/variants/0/cases/0", c, es)
			if tc.want == "" {
				if len(ps) != 0 {
					t.Fatalf("%v", ps)
				}
				return
			}
			if len(ps) != 1 || ps[0].Pointer != "/variants/0/cases/0/corpus/time_scale" || !strings.Contains(ps[0].Err.Error(), tc.want) {
				t.Fatalf("%+v, want %q", ps, tc.want)
			}
		})
	}
}
