package metric

import (
	"math"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Exact binomial order statistics (Python: the largest k with sum_{i>=k} C(n,i) q^i (1-q)^(n-i)
// >= 0.95, in exact integer arithmetic).
func TestLowerOrder(t *testing.T) {
	for _, tc := range []struct {
		n    int
		q    float64
		want int
	}{{16, .99, 15}, {5, .99, 5}, {6, .99, 5}, {1, .5, 0}, {5, .5, 1}, {100, .99, 97}, {1000, .99, 985}, {1500, .99, 1478}, {20, .9, 16}} {
		got, ok := LowerOrder(tc.n, tc.q, FidelityConfidence)
		if got != tc.want || ok != (tc.want > 0) {
			t.Errorf("LowerOrder(%d, %g) = %d, %v; want %d", tc.n, tc.q, got, ok, tc.want)
		}
	}
}

const msNs = int64(1e6)

// open builds open-loop requests: sched offsets (ns) and their lags (ns); each closes 50 ms after
// its send.
func open(sched, lag []int64) []Request {
	out := make([]Request, len(sched))
	for i := range sched {
		s := sched[i] + lag[i]
		out[i] = Request{Sched: sched[i], Send: s, HasSend: true, End: s + 40*msNs, HasEnd: true, Close: s + 50*msNs, HasClose: true, HasUsage: true, Completion: 4}
	}
	return out
}

func fidelityOf(spec RowSpec, reqs []Request) Fidelity {
	achieved, _ := Achieved(reqs)
	var lags []float64
	for _, r := range reqs {
		lags = append(lags, ms(r.Send-r.Sched))
	}
	return fidelity(spec, reqs, lags, achieved)
}

func TestFidelityJudgement(t *testing.T) {
	every := func(n int, gap int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = int64(i) * gap
		}
		return out
	}
	flat := func(n int, v int64) []int64 {
		out := make([]int64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	// One scheduler hiccup in a 16-request row at 2/s: the "p99 1.457 ms of 16".
	hiccup := flat(16, 80_000)
	hiccup[7] = 1_457_000
	two := flat(16, 80_000)
	two[3], two[9] = 1_457_000, 1_300_000
	// 28 arrivals at one instant, sent 60 µs apart (a Mooncake tick of long prompts).
	burst := make([]int64, 28)
	for i := range burst {
		burst[i] = 30_000 + int64(i)*60_000
	}
	// A client stalled 5 ms every 100 sends at 1,000/s: the next arrivals leave late.
	stall := flat(1000, 50_000)
	for i := 100; i < 1000; i += 100 {
		for k := range 5 {
			stall[i+k] = 5*msNs - int64(k)*msNs
		}
	}
	cal := Calibration{SamplesNs: flat(32, 25_000)}
	slow := Calibration{SamplesNs: flat(32, 60_000)}
	for _, tc := range []struct {
		name     string
		spec     RowSpec
		sched    []int64
		lag      []int64
		degraded bool
		cause    string
		order    int
	}{
		{"one hiccup of 16 is faithful", RowSpec{Concurrency: 4, Loop: contract.RowLoopOpen}, every(16, 500*msNs), hiccup, false, CauseNone, 15},
		{"two hiccups of 16 are degraded", RowSpec{Concurrency: 4, Loop: contract.RowLoopOpen}, every(16, 500*msNs), two, true, CauseStarvedClient, 15},
		{"a declared bound is the bound", RowSpec{Concurrency: 4, Loop: contract.RowLoopOpen, Bound: FidelityBound{LagMs: 2, Quantile: .99}}, every(16, 500*msNs), two, false, CauseNone, 15},
		{"a burst against its serialisation position", RowSpec{Concurrency: 64, Loop: contract.RowLoopOpen, Calibration: slow}, flat(28, 0), burst, false, CauseNone, 27},
		{"a burst without calibration", RowSpec{Concurrency: 64, Loop: contract.RowLoopOpen}, flat(28, 0), burst, true, CauseBurstSerialisation, 27},
		{"a stalled client", RowSpec{Concurrency: 64, Loop: contract.RowLoopOpen, Calibration: cal}, every(1000, msNs), stall, true, CauseStarvedClient, 985},
		{"an idle client at 1,000/s", RowSpec{Concurrency: 64, Loop: contract.RowLoopOpen, Calibration: cal}, every(1000, msNs), flat(1000, 50_000), false, CauseNone, 985},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fidelityOf(tc.spec, open(tc.sched, tc.lag))
			if f.Degraded != tc.degraded || f.Judgement.Cause != tc.cause || f.Judgement.Order != tc.order {
				t.Fatalf("degraded %v cause %s order %d (%v); want %v %s %d", f.Degraded, f.Judgement.Cause, f.Judgement.Order, f.Reasons, tc.degraded, tc.cause, tc.order)
			}
			if tc.degraded && !strings.Contains(f.Reasons[0], strings.ReplaceAll(tc.cause, "_", " ")) {
				t.Errorf("reason %q does not name %s", f.Reasons[0], tc.cause)
			}
		})
	}
}

// Arrivals that wait for one of the client's two connections while fewer than the concurrency
// cap are in flight: connection wait, not saturation.
func TestFidelityConnectionWait(t *testing.T) {
	var reqs []Request
	for i := range 40 {
		sched := int64(i) * 5 * msNs
		// 2 connections, each request holds one 20 ms: request i leaves when request i-2 closed.
		send := sched
		if i >= 2 {
			send = max(sched, reqs[i-2].Close)
		}
		reqs = append(reqs, Request{Sched: sched, Send: send, HasSend: true, End: send + 19*msNs, HasEnd: true, Close: send + 20*msNs, HasClose: true, HasUsage: true, Completion: 4})
	}
	f := fidelityOf(RowSpec{Concurrency: 16, Loop: contract.RowLoopOpen, Calibration: Calibration{SamplesNs: []int64{20_000}, Connections: 2}}, reqs)
	if !f.Degraded || f.Judgement.Cause != CauseConnectionWait {
		t.Fatalf("degraded %v cause %s: %v", f.Degraded, f.Judgement.Cause, f.Reasons)
	}
	f = fidelityOf(RowSpec{Concurrency: 2, Loop: contract.RowLoopOpen}, reqs)
	if !f.Degraded || f.Judgement.Cause != CauseServerSaturation {
		t.Fatalf("with a cap of 2: degraded %v cause %s: %v", f.Degraded, f.Judgement.Cause, f.Reasons)
	}
}

func TestSendCost(t *testing.T) {
	if got := SendCostNs([]int64{10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 1_000_000}); got != 100 {
		t.Fatalf("SendCostNs = %d, want 100 (the 0.9-quantile, type 7)", got)
	}
	if got := SendCostNs(nil); got != 0 {
		t.Fatalf("SendCostNs(nil) = %d", got)
	}
}

// Chi-square quantiles (Gamma(df/2, 2)) from tables, and the 16 Poisson arrivals at 2/s.
func TestRateRange(t *testing.T) {
	for _, tc := range []struct{ a, p, want float64 }{{15, .025, 16.791 / 2}, {15, .975, 46.979 / 2}, {0.5, .95, 3.841 / 2}, {50, .5, 99.334 / 2}} {
		if got := GammaQuantile(tc.a, tc.p); math.Abs(got-tc.want) > 1e-3*tc.want {
			t.Errorf("GammaQuantile(%g, %g) = %g, want %g", tc.a, tc.p, got, tc.want)
		}
	}
	lo, hi, ok := RateRange(&contract.Rate{Mode: contract.RateModePoisson, RequestsPerSecond: 2}, 16)
	if !ok || math.Abs(lo-15/(46.979/4)) > 1e-3 || math.Abs(hi-15/(16.791/4)) > 1e-3 {
		t.Fatalf("RateRange(poisson 2/s, 16) = %g, %g, %v", lo, hi, ok)
	}
	if lo, hi, _ := RateRange(&contract.Rate{Mode: contract.RateModeConstant, RequestsPerSecond: 2}, 16); lo != 2 || hi != 2 {
		t.Fatalf("constant: %g, %g", lo, hi)
	}
	k := 4.0
	glo, ghi, _ := RateRange(&contract.Rate{Mode: contract.RateModeGamma, RequestsPerSecond: 2, Burstiness: &k}, 16)
	if !(glo > lo && ghi < hi) {
		t.Fatalf("gamma shape 4 (more regular) range %g..%g is not inside Poisson's %g..%g", glo, ghi, lo, hi)
	}
}

// The over-capacity row CI saw on a slow host: 16 arrivals at 2,000/s against two slots of
// 60 ms, the first two sent 3 ms late (connection set-up). Arrivals scheduled before those two
// left found no request in flight at their t_sched, yet each then waited for a slot: they waited
// for the server, so the row is server saturation, not a starved client.
func TestFidelityQueuedBehindUnsentIsSaturation(t *testing.T) {
	var reqs []Request
	for i := range 16 {
		sched := int64(i) * msNs / 2
		send := 3 * msNs
		if i >= 2 {
			send = reqs[i-2].Close
		}
		reqs = append(reqs, Request{Sched: sched, Send: send, HasSend: true, End: send + 59*msNs, HasEnd: true, Close: send + 60*msNs, HasClose: true, HasUsage: true, Completion: 4})
	}
	f := fidelityOf(RowSpec{Concurrency: 2, Loop: contract.RowLoopOpen, Calibration: Calibration{SamplesNs: []int64{80_000}}}, reqs)
	if !f.Degraded || f.Judgement.Cause != CauseServerSaturation {
		t.Fatalf("degraded %v cause %s: %v", f.Degraded, f.Judgement.Cause, f.Reasons)
	}
	if f.Judgement.Samples != 2 {
		t.Errorf("judged %d lags as the client's own; want the 2 that found a free slot", f.Judgement.Samples)
	}
	if !strings.HasPrefix(f.Reasons[0], "server saturation") || !strings.Contains(strings.Join(f.Reasons, "\n"), "starved client") {
		t.Errorf("reasons do not lead with saturation and keep the client's lag: %q", f.Reasons)
	}
	// Sent on time, the two free-slot arrivals judge nothing over the bound; the queued ones
	// are still counted as waiting for the server although none was in flight at their t_sched.
	reqs[0].Send, reqs[1].Send = 0, msNs/2
	reqs[0].End, reqs[0].Close, reqs[1].End, reqs[1].Close = 59*msNs, 60*msNs, msNs/2+59*msNs, msNs/2+60*msNs
	for i := 2; i < 16; i++ {
		reqs[i].Send = reqs[i-2].Close
		reqs[i].End, reqs[i].Close = reqs[i].Send+59*msNs, reqs[i].Send+60*msNs
	}
	f = fidelityOf(RowSpec{Concurrency: 2, Loop: contract.RowLoopOpen}, reqs)
	if f.Judgement.Cause != CauseServerSaturation || f.Judgement.Samples != 2 {
		t.Fatalf("on-time first sends: cause %s samples %d: %v", f.Judgement.Cause, f.Judgement.Samples, f.Reasons)
	}
}

// A CPU-starved client (frozen 95 ms of every 100 ms, as a cgroup quota of 5 % does): arrivals
// pile up while it is frozen and go out in a burst that fills the 4 slots, so most arrivals then
// wait for a slot; but the arrivals that found a free slot lagged up to a frozen period, far more
// than the open-loop bound, so the cause stays the starved client.
func TestFidelityStarvedBacklogStaysClient(t *testing.T) {
	var reqs []Request
	for i := range 200 {
		sched := int64(i) * 5 * msNs // 200/s
		thaw := (sched/(100*msNs)+1)*100*msNs - 5*msNs
		if sched%(100*msNs) >= 95*msNs {
			thaw = sched // inside the 5 ms the client runs
		}
		send := thaw + int64(i%20)*20_000 // the backlog leaves 20 µs apart
		if i >= 4 {
			send = max(send, reqs[i-4].Close) // 4 slots
		}
		reqs = append(reqs, Request{Sched: sched, Send: send, HasSend: true, End: send + 9*msNs, HasEnd: true, Close: send + 10*msNs, HasClose: true, HasUsage: true, Completion: 4})
	}
	f := fidelityOf(RowSpec{Concurrency: 4, Loop: contract.RowLoopOpen, Calibration: Calibration{SamplesNs: []int64{20_000}}}, reqs)
	if !f.Degraded || f.Judgement.Cause != CauseStarvedClient {
		t.Fatalf("degraded %v cause %s (lag %.3f ms over %d own samples): %v", f.Degraded, f.Judgement.Cause, f.Judgement.LagMs, f.Judgement.Samples, f.Reasons)
	}
}

// A burst whose sends were slowed inside their writes (the co-located server ran on the client's
// CPU right after each request reached it) is judged against the writes it made; a stall between
// the sends is still lag, and a write that stalled past the bound is credited only the bound.
// The burst is the measured one of issue 28 (run_fidelity_faithful_mooncake_bursts on a shared
// host): calibration 8 µs a send, most writes 4 µs, but some 100-470 µs.
func TestFidelityBurstWriteCredit(t *testing.T) {
	cal := Calibration{SamplesNs: []int64{8_000}}
	spec := RowSpec{Concurrency: 64, Loop: contract.RowLoopOpen, Calibration: cal}
	// burst lays out 28 arrivals at one instant: each send starts gap after the previous write
	// returned, and write[i] is how long request i's write took.
	burst := func(gap func(i int) int64, write func(i int) int64) []Request {
		out := make([]Request, 28)
		t := int64(10_000) // the first leaves 10 µs late
		for i := range out {
			if i > 0 {
				t += gap(i)
			}
			w := write(i)
			out[i] = Request{Sched: 0, Send: t, HasSend: true, Sent: t + w, HasSent: true, End: t + 40*msNs, HasEnd: true, Close: t + 50*msNs, HasClose: true, HasUsage: true, Completion: 4}
			t += w
		}
		return out
	}
	gaps := func(int) int64 { return 3_000 }
	slowWrites := func(i int) int64 { // every write after the first few is preempted 150 µs
		if i >= 3 {
			return 150_000
		}
		return 4_000
	}
	for _, tc := range []struct {
		name     string
		reqs     []Request
		degraded bool
		cause    string
	}{
		{"slow writes are the cost of the burst", burst(gaps, slowWrites), false, CauseNone},
		{"slow writes without t_sent are judged at the calibrated cost", func() []Request {
			r := burst(gaps, slowWrites)
			for i := range r {
				r[i].HasSent = false
			}
			return r
		}(), true, CauseBurstSerialisation},
		{"a stall between sends is lag", burst(func(i int) int64 {
			if i == 4 {
				return 2 * msNs
			}
			return 3_000
		}, func(int) int64 { return 4_000 }), true, CauseBurstSerialisation},
		{"a write stalled past the bound is a starved client", burst(gaps, func(i int) int64 {
			if i == 4 {
				return 3 * msNs
			}
			return 4_000
		}), true, CauseStarvedClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fidelityOf(spec, tc.reqs)
			if f.Degraded != tc.degraded || f.Judgement.Cause != tc.cause {
				t.Fatalf("degraded %v cause %s (%v); want %v %s", f.Degraded, f.Judgement.Cause, f.Reasons, tc.degraded, tc.cause)
			}
		})
	}
}
