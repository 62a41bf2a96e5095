package load

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

func rowRun(t *testing.T, url string, c contract.Case) RowResult {
	t.Helper()
	plan := Plan{CaseID: "shape", Case: c, BaseURL: url, ModelID: "qualsim-tiny", Prompts: SyntheticWords(3, 8, 2, 6), Seed: 11, Epoch: time.Now()}
	res, err := Run(context.Background(), plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 1 {
		t.Fatalf("%d rows", len(res.Rows))
	}
	return res.Rows[0]
}

func measuredClasses(row RowResult) (n int, classes map[contract.ErrorClass]int) {
	classes = map[contract.ErrorClass]int{}
	for _, r := range row.Records {
		if r.Warmup {
			continue
		}
		n++
		if r.Error != nil {
			classes[r.Error.Class]++
		}
	}
	return n, classes
}

// TestRowDurationCutsAtGrace: a row whose requests take about 2 s, declared to run 0.2 s with a
// 0.1 s grace, stops sending after its duration and cuts the requests still in flight at the
// grace deadline, recording them cut_at_grace; the row says it ended by its duration and how
// many it cut.
func TestRowDurationCutsAtGrace(t *testing.T) {
	cfg := fastSim()
	cfg.Timing.TokenInterval = 50 * time.Millisecond
	url := startSim(t, cfg)
	c := servingCase([]int64{2}, 1, 0, 40)
	n := int64(50)
	c.Requests = &n
	c.Duration = &contract.RowDuration{Seconds: 0.2, MinRequests: 2, GraceSeconds: 0.1}
	row := rowRun(t, url, c)
	got, classes := measuredClasses(row)
	if got != 2 || classes[ClassCutAtGrace] != 2 {
		t.Fatalf("%d measured records, classes %v: want the 2 in flight, cut at the grace deadline", got, classes)
	}
	e := row.Row.Ended
	if e == nil || e.Reason != contract.RowEndReasonDuration || e.Cut != 2 {
		t.Fatalf("ended %+v, want duration with 2 cut", e)
	}
	if row.Row.Failures != 2 {
		t.Errorf("failures %d: cut requests did not complete, so they count as failures", row.Row.Failures)
	}
}

// TestRowDurationMinRequests: a row whose duration passes before its minimum request count was
// sent keeps sending until it was, then stops (long before its cap); nothing is cut with a
// long grace.
func TestRowDurationMinRequests(t *testing.T) {
	cfg := fastSim()
	cfg.Timing.TokenInterval = 5 * time.Millisecond
	url := startSim(t, cfg)
	c := servingCase([]int64{2}, 1, 1, 20)
	n := int64(50)
	c.Requests = &n
	c.Duration = &contract.RowDuration{Seconds: 0.01, MinRequests: 6, GraceSeconds: 30}
	row := rowRun(t, url, c)
	got, classes := measuredClasses(row)
	if got < 6 || got >= 50 || len(classes) != 0 {
		t.Fatalf("%d measured records (classes %v), want at least 6 and fewer than the cap 50, all successes", got, classes)
	}
	if e := row.Row.Ended; e == nil || e.Reason != contract.RowEndReasonDuration || e.Cut != 0 {
		t.Fatalf("ended %+v, want duration, none cut", e)
	}
}

// TestRowDurationOpenLoopGamma: an open-loop gamma row with a duration sends its arrivals until
// the duration passes, not its whole cap.
func TestRowDurationOpenLoopGamma(t *testing.T) {
	url := startSim(t, fastSim())
	c := servingCase([]int64{8}, 1, 0, 4)
	k := 0.5
	c.Rate = &contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: 200, Burstiness: &k}
	n := int64(5000)
	c.Requests = &n
	c.Duration = &contract.RowDuration{Seconds: 0.2, MinRequests: 8, GraceSeconds: 5}
	row := rowRun(t, url, c)
	got, _ := measuredClasses(row)
	if got < 8 || got >= 5000 {
		t.Fatalf("%d measured records, want at least 8 and far fewer than the cap", got)
	}
	if e := row.Row.Ended; e == nil || e.Reason != contract.RowEndReasonDuration {
		t.Fatalf("ended %+v, want duration", e)
	}
}

// TestStopRules: against qualsim answering 30 % of requests 500 (http-500=0.3) an error-fraction
// rule (above 10 % after 20) and a consecutive-failures rule (2) each stop the row early and say
// so; against a healthy qualsim neither fires and the row runs all its requests.
func TestStopRules(t *testing.T) {
	faulty := fastSim()
	if err := faulty.Faults.Set("http-500=0.3"); err != nil {
		t.Fatal(err)
	}
	urls := map[bool]string{true: startSim(t, faulty), false: startSim(t, fastSim())}
	two := int64(2)
	rules := map[contract.RowEndReason]*contract.StopRules{
		contract.RowEndReasonErrorFraction:       {ErrorFraction: &contract.ErrorFractionRule{Above: 0.1, MinRequests: 20}},
		contract.RowEndReasonConsecutiveFailures: {ConsecutiveFailures: &two},
	}
	for want, rule := range rules {
		for _, fault := range []bool{true, false} {
			c := servingCase([]int64{2}, 1, 0, 4)
			c.OutputAssertions = nil
			n := int64(300)
			c.Requests = &n
			c.Stop = rule
			row := rowRun(t, urls[fault], c)
			got, classes := measuredClasses(row)
			e := row.Row.Ended
			switch {
			case e == nil:
				t.Errorf("%s fault %v: no ended", want, fault)
			case fault && (e.Reason != want || got >= 300 || classes[ClassHTTPStatus] == 0):
				t.Errorf("%s under http-500=0.3: ended %+v after %d records (%v), want stopped early by %s", want, e, got, classes, want)
			case !fault && (e.Reason != contract.RowEndReasonRequests || got != 300 || len(classes) != 0):
				t.Errorf("%s without the fault: ended %+v after %d records (%v), want all 300 requests", want, e, got, classes)
			}
		}
	}
}

// TestPlanRefusesBadShapes: preflight refuses a gamma rate without burstiness (and burstiness
// elsewhere), a duration without requests or with min_requests above them, and an empty stop.
func TestPlanRefusesBadShapes(t *testing.T) {
	k, n, big := 0.5, int64(10), int64(11)
	for _, tc := range []struct {
		name string
		edit func(c *contract.Case)
		want string
	}{
		{"gamma without burstiness", func(c *contract.Case) {
			c.Rate = &contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: 10}
		}, "burstiness (0 to 1000) goes with mode gamma and only there"},
		{"poisson with burstiness", func(c *contract.Case) {
			c.Rate = &contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: 10, Burstiness: &k}
		}, "goes with mode gamma and only there"},
		{"duration without requests", func(c *contract.Case) {
			c.Requests = nil
			c.Duration = &contract.RowDuration{Seconds: 1, MinRequests: 1}
		}, "declares a duration without requests"},
		{"min_requests above requests", func(c *contract.Case) {
			c.Duration = &contract.RowDuration{Seconds: 1, MinRequests: big}
		}, "min_requests 11"},
		{"empty stop", func(c *contract.Case) { c.Stop = &contract.StopRules{} }, "declares stop without a rule"},
	} {
		c := servingCase([]int64{2}, 1, 0, 4)
		c.Requests = &n
		tc.edit(&c)
		plan := Plan{CaseID: "bad", Case: c, BaseURL: "http://127.0.0.1:19749", ModelID: "m", Prompts: SyntheticWords(3, 4, 2, 6), Seed: 1, Epoch: time.Now()}
		_, err := Run(context.Background(), plan)
		if !errors.Is(err, ErrPlan) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrPlan saying %q", tc.name, err, tc.want)
		}
	}
}

// TestStopSaturation: an open-loop row offered 100 requests/s, at most 4 in flight, against a
// qualsim with one slot and requests of about 80 ms falls behind its schedule, and the
// saturation rule (5 requests in a row sent more than 100 ms late) stops it; against a fast
// qualsim at 25 requests/s it holds its schedule and runs all its requests. The lag bound is
// wide so that a loaded host cannot fake saturation (the healthy row would have to stall 260 ms
// over five sends), while the slow row's lag grows by about 70 ms a request.
func TestStopSaturation(t *testing.T) {
	slow := fastSim()
	slow.Slots = 1
	slow.Timing.TokenInterval = 20 * time.Millisecond
	rule := &contract.StopRules{Saturation: &contract.SaturationRule{LagMs: 100, Consecutive: 5}}
	for _, tc := range []struct {
		name   string
		url    string
		rps    float64
		stops  bool
		wantOf contract.RowEndReason
	}{
		{"overloaded", startSim(t, slow), 100, true, contract.RowEndReasonSaturation},
		{"healthy", startSim(t, fastSim()), 25, false, contract.RowEndReasonRequests},
	} {
		c := servingCase([]int64{4}, 1, 0, 4)
		c.OutputAssertions = nil
		n := int64(60)
		c.Requests = &n
		c.Rate = &contract.Rate{Mode: contract.RateModeConstant, RequestsPerSecond: tc.rps}
		c.Stop = rule
		row := rowRun(t, tc.url, c)
		got, _ := measuredClasses(row)
		e := row.Row.Ended
		if e == nil || e.Reason != tc.wantOf || (tc.stops && got >= 60) || (!tc.stops && got != 60) {
			t.Errorf("%s: ended %+v after %d of 60 records, want %s", tc.name, e, got, tc.wantOf)
		}
	}
}
