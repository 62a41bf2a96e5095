package load

import (
	"context"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

func fp(v float64) *float64 { return &v }

// TestRunRampTracksSchedule runs a constant-arrival schedule against qualsim: a 1 s hold at 100/s,
// then a linear ramp 100→500/s over 3 s. Every measured t_sched is the schedule's offset from
// the row's origin (to the nanosecond), and the achieved send count of every per-second bin is
// within max(3 requests, 3 %) of the bin's scheduled count (the tolerance: the pacer's lag is
// well under a millisecond here, so only sends within a few ms of a second's boundary can
// change bins). The stages report offered and achieved rates (within 3 %) and the series has the
// schedule's four seconds.
func TestRunRampTracksSchedule(t *testing.T) {
	q := startQualsim(t, false, "--ttft", "2ms", "--token-interval", "1ms", "--slots", "256")
	c := servingCase([]int64{128}, 1, 0, 4)
	c.OutputAssertions = nil
	c.Schedule = &contract.Schedule{Arrival: contract.ScheduleArrivalConstant, Stages: []contract.Stage{
		{Kind: contract.StageKindHold, RequestsPerSecond: 100, Seconds: 1},
		{Kind: contract.StageKindRamp, RateFrom: fp(100), RateTo: fp(500), Seconds: 3},
	}}
	plan := Plan{CaseID: "ramp", Case: c, BaseURL: q.url, ModelID: "qualsim-tiny", Prompts: inlinePrompts(), Seed: 5, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0]
	want, _, err := metric.ScheduleArrivals(c.Schedule, 5, 128, 0, metric.MaxScheduleArrivals)
	if err != nil {
		t.Fatal(err)
	}
	if row.Row.Requests != int64(len(want)) || row.Row.Requests != 1000 || row.Row.Failures != 0 {
		t.Fatalf("%d requests (%d failed), the schedule has %d", row.Row.Requests, row.Row.Failures, len(want))
	}
	if row.Row.Loop != contract.RowLoopOpen {
		t.Fatalf("loop %s", row.Row.Loop)
	}
	// The degraded verdict depends on the host's load (a 1 ms lag bound): logged, not asserted.
	t.Logf("schedule lag p50 %.3f ms p99 %.3f ms, degraded %v %v", row.Row.Fidelity.ScheduleLagP50Ms, row.Row.Fidelity.ScheduleLagP99Ms, row.Row.Fidelity.Degraded, row.Row.Fidelity.Reasons)
	origin := row.Records[0].TSchedNs - want[0]
	for k, r := range row.Records {
		if r.TSchedNs-origin != want[k] {
			t.Fatalf("request %d scheduled at %d ns from the origin, the schedule says %d", k, r.TSchedNs-origin, want[k])
		}
	}
	s := row.Row.Series
	if s == nil || len(s.Bins) < 4 {
		t.Fatalf("series %+v", s)
	}
	for _, b := range s.Bins[:4] {
		tol := max(3, int64(0.03*float64(b.Scheduled)))
		if d := b.Sent - b.Scheduled; d < -tol || d > tol {
			t.Errorf("second %d: sent %d, scheduled %d (tolerance %d)", b.Second, b.Sent, b.Scheduled, tol)
		}
		t.Logf("second %d: scheduled %d sent %d completed %d in flight %.2f", b.Second, b.Scheduled, b.Sent, b.Completed, b.InFlightMean)
	}
	if got := []int64{s.Bins[0].Scheduled, s.Bins[1].Scheduled, s.Bins[2].Scheduled, s.Bins[3].Scheduled}; got[0] != 100 || got[1] != 167 || got[2] != 300 || got[3] != 433 {
		t.Errorf("scheduled per second %v, want [100 167 300 433] (the ramp's integral per second, rounded by the arrival grid)", got)
	}
	if len(row.Row.Stages) != 2 {
		t.Fatalf("stages %+v", row.Row.Stages)
	}
	for i, st := range row.Row.Stages {
		if st.AchievedRate < 0.97*st.OfferedRate || st.AchievedRate > 1.03*st.OfferedRate || st.Requests != st.Scheduled || len(st.Metrics) == 0 {
			t.Errorf("stage %d: offered %.1f achieved %.1f, %d of %d scheduled, %d metrics", i, st.OfferedRate, st.AchievedRate, st.Requests, st.Scheduled, len(st.Metrics))
		}
	}
	if row.Row.Stages[1].OfferedRate != 300 || row.Row.Stages[1].Scheduled != 900 {
		t.Errorf("ramp stage: offered %g, %d scheduled, want 300 and 900", row.Row.Stages[1].OfferedRate, row.Row.Stages[1].Scheduled)
	}
}

// TestPlanRefusesSchedule: a schedule beside a rate or a duration, and a ramp without its rates,
// are refused before any request.
func TestPlanRefusesSchedule(t *testing.T) {
	base := func() contract.Case {
		c := servingCase([]int64{2}, 1, 0, 4)
		c.Schedule = &contract.Schedule{Arrival: contract.ScheduleArrivalPoisson, Stages: []contract.Stage{{Kind: contract.StageKindHold, RequestsPerSecond: 10, Seconds: 1}}}
		return c
	}
	withRate := base()
	withRate.Rate = &contract.Rate{Mode: contract.RateModeConstant, RequestsPerSecond: 10}
	withDur := base()
	n := int64(10)
	withDur.Requests, withDur.Duration = &n, &contract.RowDuration{Seconds: 1, MinRequests: 1}
	noRates := base()
	noRates.Schedule.Stages = []contract.Stage{{Kind: contract.StageKindRamp, Seconds: 1}}
	empty := base()
	empty.Schedule.Stages = []contract.Stage{{Kind: contract.StageKindRamp, RateFrom: fp(0), RateTo: fp(0), Seconds: 1}}
	for name, c := range map[string]contract.Case{"rate": withRate, "duration": withDur, "ramp without rates": noRates, "no arrival": empty} {
		plan := Plan{CaseID: "bad", Case: c, BaseURL: "http://127.0.0.1:1", ModelID: "m", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()}
		if err := plan.check(); err == nil {
			t.Errorf("%s: not refused", name)
		}
	}
	ok := base()
	plan := Plan{CaseID: "ok", Case: ok, BaseURL: "http://127.0.0.1:1", ModelID: "m", Prompts: inlinePrompts(), Seed: 1, Epoch: time.Now()}
	if err := plan.check(); err != nil {
		t.Errorf("a plain schedule refused: %v", err)
	}
}
