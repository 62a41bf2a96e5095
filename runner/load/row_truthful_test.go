package load

import (
	"math"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestRowInFlight: the achieved concurrency of the hand-computed row. Intervals [t_send,
// t_close]: R0 [1, 21], R1 [2, 13], R2 [20.5, 21], R3 [21.2, 35.5]; window [1, 35]. Peak 2 (R0
// with R1, then R0 with R2); area 1x1 + 2x11 + 1x7.5 + 2x0.5 + 0x0.2 + 1x13.8 = 45.3 over 34 ms.
func TestRowInFlight(t *testing.T) {
	row := Row(RowSpec{Concurrency: 2, Loop: "closed"}, handRecords())
	f := row.Fidelity
	if f.InFlightPeak == nil || *f.InFlightPeak != 2 {
		t.Fatalf("in_flight_peak %v, want 2", f.InFlightPeak)
	}
	if want := 45.3 / 34; f.InFlightMean == nil || math.Abs(*f.InFlightMean-want) > 1e-9 {
		t.Fatalf("in_flight_mean %v, want %v", f.InFlightMean, want)
	}
}

// overCapacity is an open-loop row offered 2,000/s (an arrival every 0.5 ms) against a server
// that holds one request for 40 ms: every arrival after the first finds the single slot busy and
// waits, so the client sends at 25/s and the p99 schedule lag is about 1.5 s.
func overCapacity(n int) []contract.RequestRecordDoc {
	out := make([]contract.RequestRecordDoc, 0, n)
	free := 0.0
	for i := range n {
		sched := float64(i) * 0.5
		send := math.Max(sched, free)
		end := send + 40
		free = end
		out = append(out, rec(int64(i), false, sched, send, send+1, end, end, []ev{{send + 5, "content"}, {end, "content"}}, 2, 3, ""))
	}
	return out
}

// TestRowOpenLoopOverCapacityDegraded: the row of the issue (offered 2,000/s, achieved 25/s,
// p99 schedule lag 1.5 s) is degraded, saying why; before, the lag of arrivals that found every
// slot busy was excluded and the row read degraded: false.
func TestRowOpenLoopOverCapacityDegraded(t *testing.T) {
	offered := 2000.0
	row := Row(RowSpec{Concurrency: 1, Loop: "open", OfferedRate: &offered}, overCapacity(40))
	f := row.Fidelity
	if math.Abs(f.AchievedRate-25) > 0.01 || f.ScheduleLagP99Ms < 1400 || f.ScheduleLagP99Ms > 1600 {
		t.Fatalf("achieved %v/s, lag p99 %v ms: the fixture is not the issue's row", f.AchievedRate, f.ScheduleLagP99Ms)
	}
	if !f.Degraded {
		t.Fatalf("an open-loop row offered 2000/s achieving %.1f/s with p99 lag %.0f ms is not degraded: %q", f.AchievedRate, f.ScheduleLagP99Ms, f.Reasons)
	}
	all := strings.Join(f.Reasons, "; ")
	for _, want := range []string{"below 0.9 of the scheduled rate 2000.000/s", "exceeds 10.000 ms", "39 of 40 found all 1 slots busy"} {
		if !strings.Contains(all, want) {
			t.Errorf("reasons %q lack %q", all, want)
		}
	}
	if *f.InFlightPeak != 1 {
		t.Errorf("in_flight_peak %d, want 1", *f.InFlightPeak)
	}
}

// TestRowOpenLoopOnScheduleNotDegraded: the same server offered 20/s (an arrival every 50 ms)
// keeps up: no lag, achieved = scheduled, not degraded.
func TestRowOpenLoopOnScheduleNotDegraded(t *testing.T) {
	offered := 20.0
	var recs []contract.RequestRecordDoc
	for i := range 40 {
		s := float64(i) * 50
		recs = append(recs, rec(int64(i), false, s, s+0.05, s+1, s+40, s+40, []ev{{s + 5, "content"}, {s + 40, "content"}}, 2, 3, ""))
	}
	f := Row(RowSpec{Concurrency: 1, Loop: "open", OfferedRate: &offered}, recs).Fidelity
	if f.Degraded || len(f.Reasons) != 0 {
		t.Fatalf("degraded %v: %q", f.Degraded, f.Reasons)
	}
}
