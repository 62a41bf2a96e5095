package metric

import (
	"math"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

func ramp(from, to, sec float64) contract.Stage {
	return contract.Stage{Kind: contract.StageKindRamp, RateFrom: f64(from), RateTo: f64(to), Seconds: sec}
}

func hold(rate, sec float64) contract.Stage {
	return contract.Stage{Kind: contract.StageKindHold, RequestsPerSecond: rate, Seconds: sec}
}

// perSecond counts offsets per whole second.
func perSecond(offs []int64, n int) []int {
	out := make([]int, n)
	for _, o := range offs {
		if k := int(o / 1e9); k < n {
			out[k]++
		}
	}
	return out
}

// TestScheduleArrivalsConstant: a constant schedule places arrival i at Λ⁻¹(i) exactly: a hold
// at i/r, a ramp 0→100/s over 2 s at √(i·2·2/100) (Λ(1 s) = 25, so 25 arrivals in the first
// second and 75 in the second), a pause (ramp 0→0) holds none and shifts what follows, and the
// stage of each arrival is the one holding it.
func TestScheduleArrivalsConstant(t *testing.T) {
	s := &contract.Schedule{Arrival: contract.ScheduleArrivalConstant, Stages: []contract.Stage{hold(100, 1), ramp(0, 0, 0.5), ramp(0, 100, 2)}}
	offs, stage, err := ScheduleArrivals(s, 1, 4, 0, MaxScheduleArrivals)
	if err != nil {
		t.Fatal(err)
	}
	if len(offs) != 200 {
		t.Fatalf("%d arrivals, want 100 + 0 + 100", len(offs))
	}
	for i := range 100 {
		if want := int64(float64(i) / 100 * 1e9); offs[i] != want || stage[i] != 0 {
			t.Fatalf("hold arrival %d at %d ns in stage %d, want %d in 0", i, offs[i], stage[i], want)
		}
	}
	for i := 100; i < 200; i++ {
		y := float64(i - 100)
		want := (1.5 + math.Sqrt(y*2*2/100)) * 1e9
		if math.Abs(float64(offs[i])-want) > 2 || stage[i] != 2 {
			t.Fatalf("ramp arrival %d at %d ns in stage %d, want %.0f in 2", i, offs[i], stage[i], want)
		}
	}
	ramped := make([]int64, 0, 100)
	for _, o := range offs[100:] {
		ramped = append(ramped, o-1.5e9)
	}
	if got := perSecond(ramped, 2); got[0] != 25 || got[1] != 75 {
		t.Fatalf("ramp per second %v, want [25 75]", got)
	}
	if _, _, err := ScheduleArrivals(&contract.Schedule{Arrival: contract.ScheduleArrivalConstant, Stages: []contract.Stage{hold(100000, 86400)}}, 1, 1, 0, MaxScheduleArrivals); err == nil {
		t.Fatal("an 8.64e9-arrival schedule is not refused")
	}
	cut, _, err := ScheduleArrivals(s, 1, 4, 0, 7)
	if err != nil || len(cut) != 7 {
		t.Fatalf("a requests cap of 7: %d arrivals, %v", len(cut), err)
	}
}

// TestScheduleArrivalsPoisson: a Poisson ramp 10→190/s over 4 s has, over 400 seeds, a mean
// count per second within 3 % of the ramp's integral over that second (rate 10 + 45t: 32.5, 77.5,
// 122.5, 167.5; the standard error of the mean of a Poisson count of 32.5 over 400 draws is
// 0.9 %), and one seed's schedule is reproducible.
func TestScheduleArrivalsPoisson(t *testing.T) {
	s := &contract.Schedule{Arrival: contract.ScheduleArrivalPoisson, Stages: []contract.Stage{ramp(10, 190, 4)}}
	const seeds = 400
	sum := make([]float64, 4)
	for seed := range int64(seeds) {
		offs, _, err := ScheduleArrivals(s, seed, 8, 1, MaxScheduleArrivals)
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range perSecond(offs, 4) {
			sum[k] += float64(n)
		}
	}
	for k, want := range []float64{32.5, 77.5, 122.5, 167.5} {
		if got := sum[k] / seeds; math.Abs(got-want) > 0.03*want {
			t.Errorf("second %d: mean %.2f arrivals, want %g ± 3 %%", k, got, want)
		}
	}
	a, _, _ := ScheduleArrivals(s, 5, 8, 1, MaxScheduleArrivals)
	b, _, _ := ScheduleArrivals(s, 5, 8, 1, MaxScheduleArrivals)
	c, _, _ := ScheduleArrivals(s, 5, 8, 2, MaxScheduleArrivals)
	if len(a) != len(b) || a[len(a)/2] != b[len(b)/2] || (len(a) == len(c) && a[len(a)/2] == c[len(c)/2]) {
		t.Fatal("the schedule is not a function of (seed, concurrency, repetition)")
	}
}

// TestSeries: the per-second series of hand-made requests: scheduled, sent, completed and failed
// counts per bin, the in-flight time average (a request from 0.5 s to 1.5 s adds 0.5 to bins 0
// and 1) and the latency percentiles; an empty bin has null latencies.
func TestSeries(t *testing.T) {
	const s = int64(1e9)
	origin := int64(10 * s)
	ok := func(sched, send, end int64) Request {
		return Request{Sched: origin + sched, Send: origin + send, End: origin + end, Close: origin + end, HasSend: true, HasEnd: true, HasClose: true, HasUsage: true, Completion: 2, Content: []int64{origin + send + s/10, origin + end}}
	}
	reqs := []Request{ok(0, s/2, 3*s/2), ok(s/4, s/4, s/2), ok(s+s/2, s+s/2, s+s/2+s/5), {Sched: origin + 2*s + 1, Failed: true}}
	series, good := Series(reqs, origin, 3*s)
	if !good || len(series.Bins) != 3 || series.Formula != contract.RowSeriesFormula {
		t.Fatalf("%v %+v", good, series)
	}
	b := series.Bins
	if b[0].Scheduled != 2 || b[0].Sent != 2 || b[0].Completed != 1 || b[1].Scheduled != 1 || b[1].Completed != 2 || b[2].Failed != 1 || b[2].Scheduled != 1 {
		t.Fatalf("counts %+v", b)
	}
	if math.Abs(b[0].InFlightMean-0.75) > 1e-9 || math.Abs(b[1].InFlightMean-0.7) > 1e-9 || b[2].InFlightMean != 0 {
		t.Fatalf("in flight %g %g %g, want 0.75 0.7 0", b[0].InFlightMean, b[1].InFlightMean, b[2].InFlightMean)
	}
	if b[0].E2EP50Ms == nil || *b[0].E2EP50Ms != 250 || *b[1].E2EP50Ms != 600 || b[2].E2EP50Ms != nil || b[1].TTFTP50Ms == nil || math.Abs(*b[1].TTFTP50Ms-100) > 1e-9 {
		t.Fatalf("latency %+v", b)
	}
}

// TestScheduleArrivalsGamma: a gamma schedule (burstiness 0.5) over a 100/s hold for 1,000 s has
// gaps of mean 1/100 s within 2.5 % and coefficient of variation 1/√0.5 = 1.41 within 3 % (the
// bounds of TestGammaMoments, about 100,000 gaps).
func TestScheduleArrivalsGamma(t *testing.T) {
	k := 0.5
	s := &contract.Schedule{Arrival: contract.ScheduleArrivalGamma, Burstiness: &k, Stages: []contract.Stage{hold(100, 1000)}}
	offs, _, err := ScheduleArrivals(s, 9, 2, 0, MaxScheduleArrivals)
	if err != nil {
		t.Fatal(err)
	}
	var sum, sq float64
	n := len(offs) - 1
	for i := 1; i < len(offs); i++ {
		g := float64(offs[i]-offs[i-1]) / 1e9
		sum += g
		sq += g * g
	}
	mean := sum / float64(n)
	cv := math.Sqrt(sq/float64(n)-mean*mean) / mean
	if math.Abs(mean-0.01) > 0.025*0.01 || math.Abs(cv-math.Sqrt2) > 0.03*math.Sqrt2 {
		t.Fatalf("%d gaps: mean %.6f s, cv %.4f; want 0.01 and 1.414", n, mean, cv)
	}
}
