package load

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// openPlan is an open-loop plan of n Poisson arrivals at rate against url.
func openPlan(url string, conc int64, rate float64, n int64) Plan {
	c := servingCase([]int64{conc}, 1, 0, 4)
	c.Rate = &contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: rate}
	c.Requests = &n
	c.SLO = &contract.SLO{}
	return Plan{CaseID: "open", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: SyntheticWords(5, 40, 2, 6), Seed: 9, Epoch: time.Now()}
}

// A row records its send calibration and its judgement, and both recompute from the records.
func TestRunCalibrates(t *testing.T) {
	url := startSim(t, fastSim())
	plan := openPlan(url, 8, 200, 40)
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows[0].Row
	cal, jd := row.Fidelity.Calibration, row.Fidelity.Judgement
	if cal == nil || len(cal.SamplesNs) != metric.CalibrationSends || cal.SendCostNs != metric.SendCostNs(cal.SamplesNs) || cal.Connections != nil {
		t.Fatalf("calibration %+v", cal)
	}
	if jd == nil || jd.Samples == 0 || jd.Quantile != metric.DefaultFidelityQuantile || jd.LagBoundMs != metric.DefaultFidelityLagMs {
		t.Fatalf("judgement %+v", jd)
	}
	spec := rowSpec(plan, row)
	spec.Calibration = cal
	again := Row(spec, res.Rows[0].Records)
	if *again.Fidelity.Judgement != *jd || again.Fidelity.Degraded != row.Fidelity.Degraded {
		t.Fatalf("recomputed judgement %+v degraded %v, recorded %+v %v", again.Fidelity.Judgement, again.Fidelity.Degraded, jd, row.Fidelity.Degraded)
	}
	t.Logf("send cost %d ns (p90 of %d sends); judged the %d-th of %d lags: %.3f ms; degraded %v", cal.SendCostNs, len(cal.SamplesNs), jd.Order, jd.Samples, jd.LagMs, row.Fidelity.Degraded)
}

// A client that distorts its own load is judged degraded, naming the cause: stalled 5 ms every
// 100 sends at 1,000/s, and a connection pool of one under a load that needs more.
func TestRunDistortedClient(t *testing.T) {
	if testing.Short() {
		t.Skip("drives about 1,200 requests")
	}
	for _, tc := range []struct {
		name    string
		sim     func() string
		plan    func(url string) Plan
		distort string
		cause   string
	}{
		{"stalled 5 ms every 100 sends", func() string { return startSim(t, fastSim()) }, func(url string) Plan { return openPlan(url, 64, 1000, 1000) }, "stall=5ms/100", metric.CauseStarvedClient},
		{"one connection", func() string {
			c := fastSim()
			c.Timing.TTFT = 10 * time.Millisecond
			return startSim(t, c)
		}, func(url string) Plan { return openPlan(url, 16, 200, 60) }, "conns=1", metric.CauseConnectionWait},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(DistortionEnv, tc.distort)
			res, err := Run(context.Background(), tc.plan(tc.sim()))
			if err != nil {
				t.Fatal(err)
			}
			f := res.Rows[0].Row.Fidelity
			if !f.Degraded || f.Judgement == nil || string(f.Judgement.Cause) != tc.cause {
				t.Fatalf("degraded %v judgement %+v reasons %q; want cause %s", f.Degraded, f.Judgement, f.Reasons, tc.cause)
			}
			t.Logf("%s: %q", tc.name, f.Reasons[0])
		})
	}
}

func TestDistortionEnv(t *testing.T) {
	for _, bad := range []string{"stall=5ms", "stall=x/100", "stall=5ms/0", "conns=0", "pool=2"} {
		if _, err := distortion(bad); !errors.Is(err, ErrPlan) {
			t.Errorf("distortion(%q) = %v, want ErrPlan", bad, err)
		}
	}
	opts, err := distortion("stall=5ms/100, conns=2")
	if err != nil {
		t.Fatal(err)
	}
	o := buildOptions(opts)
	if o.stall != (stall{every: 100, d: 5 * time.Millisecond}) || o.maxConns != 2 {
		t.Fatalf("options %+v", o)
	}
}
