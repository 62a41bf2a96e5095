package metric

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// The client-fidelity judgement (docs/metrics.md, "Client fidelity"). A row is judged on the
// schedule lag the client itself caused, each arrival's lag taken against its serialisation
// position (a client that sends one request at a time cannot send the k-th arrival of a burst
// before the k - 1 sends ahead of it were made, each credited its calibrated cost or its own
// measured write time, the longer, up to the bound), and on a declared quantile of those
// lags through the binomial order statistic that is a lower confidence bound of it: the row is
// degraded when, at FidelityConfidence, the quantile lies above the declared bound. The rule is
// exact and distribution-free at every sample size, so a 16-request row is judged on its second
// largest lag (a 95 % lower bound of the p99 of 16), never on an interpolated "p99 of 16".

// Defaults of a case's fidelity block (workload.v1 "Fidelity").
const (
	// DefaultFidelityLagMs bounds the client's own lag when the case declares no lag_ms.
	DefaultFidelityLagMs = 1.0
	// DefaultFidelityQuantile is the judged quantile when the case declares none.
	DefaultFidelityQuantile = 0.99
	// FidelityConfidence is the confidence of the order statistic judged.
	FidelityConfidence = 0.95
)

// Open-loop schedule bounds: an open-loop row is also degraded (not a measurement of its offered
// load) when its measured requests went out behind their schedule, whoever delayed them: the
// judged quantile of the serialisation-adjusted lag over every sent measured request (arrivals
// that found all concurrency slots busy included) lies above DegradedOpenLagMs, or the achieved
// send rate is below DegradedRateFraction of the scheduled rate ((n - 1) / (max t_sched - min
// t_sched) over the same n requests: the rate the row's own schedule asked for, so Poisson
// variance does not count).
const (
	DegradedOpenLagMs    = 10.0
	DegradedRateFraction = 0.9
)

// Send calibration: before each row the client times CalibrationSends of its own sends (the row's
// request bytes written on its own send path to a loopback sink that never answers). The per-send
// cost is the CalibrationQuantile of those times, and a burst is allowed at most MaxSendCostNs per
// position however slow the calibration was (a client slower than that distorts a burst).
const (
	CalibrationSends    = 32
	MaxCalibrationSends = 256
	CalibrationQuantile = 0.9
	MaxSendCostNs       = 100_000
)

// Causes a degraded row names (case-result.v1 fidelity.judgement.cause).
const (
	CauseNone               = string(contract.FidelityJudgementCauseNone)
	CauseStarvedClient      = string(contract.FidelityJudgementCauseStarvedClient)
	CauseBurstSerialisation = string(contract.FidelityJudgementCauseBurstSerialisation)
	CauseConnectionWait     = string(contract.FidelityJudgementCauseConnectionWait)
	CauseServerSaturation   = string(contract.FidelityJudgementCauseServerSaturation)
)

// FidelityBound is a case's declared fidelity bound with its defaults filled in.
type FidelityBound struct{ LagMs, Quantile float64 }

// BoundOf is the bound a case declares (nil or a missing member: the default).
func BoundOf(f *contract.FidelitySpec) FidelityBound {
	b := FidelityBound{LagMs: DefaultFidelityLagMs, Quantile: DefaultFidelityQuantile}
	if f != nil && f.LagMs != nil {
		b.LagMs = *f.LagMs
	}
	if f != nil && f.Quantile != nil {
		b.Quantile = *f.Quantile
	}
	return b
}

// Calibration is what a row's send calibration measured.
type Calibration struct {
	// SamplesNs are the timed sends, in order.
	SamplesNs []int64
	// Connections is the client's connection limit (0: none).
	Connections int64
}

// SendCostNs is the calibrated per-send cost: the CalibrationQuantile (type 7) of the samples,
// rounded to the nanosecond; 0 without samples.
func SendCostNs(samples []int64) int64 {
	if len(samples) == 0 {
		return 0
	}
	xs := make([]float64, len(samples))
	for i, v := range samples {
		xs[i] = float64(max(v, 0))
	}
	slices.Sort(xs)
	return int64(math.Round(Percentile(xs, CalibrationQuantile)))
}

// LowerOrder is the 1-based index j of the order statistic X_(j) of n samples that is a lower
// confidence bound of the q-quantile at confidence conf: the largest j with
// P(Binomial(n, q) >= j) >= conf. ok is false when no order statistic is (too few samples).
func LowerOrder(n int, q, conf float64) (int, bool) {
	if n <= 0 || q <= 0 || q >= 1 {
		return 0, false
	}
	lq, lp := math.Log(q), math.Log1p(-q)
	lgn, _ := math.Lgamma(float64(n + 1))
	tail := 0.0
	for k := n; k >= 1; k-- {
		a, _ := math.Lgamma(float64(k + 1))
		b, _ := math.Lgamma(float64(n - k + 1))
		tail += math.Exp(lgn - a - b + float64(k)*lq + float64(n-k)*lp)
		if tail >= conf {
			return k, true
		}
	}
	return 0, false
}

// Judgement is how a row's fidelity was judged.
type Judgement struct {
	Cause string
	// Quantile and LagBoundMs are the bound judged; Samples the lags judged (the client's own),
	// Order the order statistic judged (0 when too few samples) and LagMs its value.
	Quantile, LagBoundMs float64
	Samples, Order       int
	LagMs                float64
	// Serialised counts the judged arrivals that lay behind another within the per-send cost
	// (judged at a serialisation position > 0); SendCostNs is the per-send cost used.
	Serialised int
	SendCostNs int64
}

// judged is one sent measured arrival.
type judged struct {
	lagMs    float64 // serialisation-adjusted lag, >= 0
	position int     // place in its burst (0: not behind another)
	capped   bool    // found every concurrency slot busy
	pooled   bool    // found every connection of the client's pool busy
	stalled  bool    // behind a write of its burst that took longer than the row's lag bound
}

// serialised adjusts the lags of the sent measured requests for serialisation: sorted by t_sched,
// arrival i could not leave before e_i = max(t_sched_i, e_{i-1} + credit_{i-1}), where e_{i-1}
// is the previous arrival's t_send instead when that one found every concurrency slot busy (the
// dispatcher waited for the server, in order), and credit_{i-1} is what sending the previous
// arrival cost: the calibrated cost, or the time its own write took (t_sent - t_send) when that
// was longer, but never more than maxCredit (the row's lag bound: a write longer than the whole
// bound is a stall, not a send); its lag is t_send - e_i (at least 0). Its position counts the
// arrivals before it in its burst of the schedule: the run of arrivals each at most cost after the previous (arrivals sharing an instant
// are one burst even at cost 0). busy counts, per request, the other requests in flight at its
// t_sched (sent at or before it, not yet closed). An arrival found every slot (or connection)
// busy when, at any instant between its t_sched and its t_send, that many other requests were in
// flight: counting only at t_sched would miss the arrivals queued behind earlier ones the client had
// not sent yet, which then wait for the server all the same.
func serialised(measured []Request, cost, maxCredit int64, concurrency, conns int64) []judged {
	idx := make([]int, 0, len(measured))
	for i := range measured {
		if measured[i].HasSend {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(measured[a].Sched, measured[b].Sched) })
	sends, closes := make([]int64, 0, len(idx)), make([]int64, 0, len(idx))
	for _, i := range idx {
		sends = append(sends, measured[i].Send)
		if measured[i].HasClose {
			closes = append(closes, measured[i].Close)
		}
	}
	slices.Sort(sends)
	slices.Sort(closes)
	capSpans, poolSpans := saturated(sends, closes, concurrency), saturated(sends, closes, conns)
	out := make([]judged, 0, len(idx))
	var e int64 // when the previous arrival could have left
	pos, stalled := 0, false
	for k, i := range idx {
		v := &measured[i]
		// Its place in a burst of the schedule: arrivals at most cost after the previous one (or
		// at its instant) follow it.
		if k > 0 && v.Sched-measured[idx[k-1]].Sched <= cost {
			pos++
		} else {
			pos = 0
		}
		if k == 0 {
			e = v.Sched
		} else {
			credit, w := sendCredit(&measured[idx[k-1]], cost, maxCredit)
			// An arrival behind a write that stalled past the bound (in its burst) was held
			// by that stall, not by serialisation.
			stalled = pos > 0 && (stalled || w > maxCredit)
			e = max(v.Sched, e+credit)
		}
		a := judged{lagMs: max(0, ms(v.Send-e)), position: pos, stalled: stalled,
			capped: waited(sends, closes, v, capSpans, concurrency),
			pooled: conns > 0 && waited(sends, closes, v, poolSpans, conns)}
		out = append(out, a)
		if a.capped {
			// It waited for the server: the dispatcher could not have sent the next arrivals
			// before it.
			e = max(e, v.Send)
		}
	}
	return out
}

// lagBoundNs is a lag bound in ns: the workload schema bounds lag_ms to (0, 60000], and any other
// value (none reaches here from valid evidence) is the default.
func lagBoundNs(ms float64) int64 {
	if !(ms > 0 && ms <= 60_000) {
		ms = DefaultFidelityLagMs
	}
	return int64(math.Round(ms * 1e6))
}

// sendCredit is what sending p is credited for the arrival behind it (see serialised), and the
// time p's write took (0 when its record has no t_sent).
func sendCredit(p *Request, cost, maxCredit int64) (credit, write int64) {
	if p.HasSent && p.HasSend {
		write = p.Sent - p.Send
	}
	return max(cost, min(write, maxCredit)), write
}

// span is a half-open interval [from, to) of time in ns.
type span struct{ from, to int64 }

// saturated are the maximal spans, in order, in which at least k sent requests were in flight
// (sends and closes sorted; a request never closed stays in flight). None for k <= 0.
func saturated(sends, closes []int64, k int64) []span {
	if k <= 0 {
		return nil
	}
	var out []span
	var n int64
	open, from := false, int64(0)
	i, j := 0, 0
	for i < len(sends) || j < len(closes) {
		t := int64(math.MaxInt64)
		if i < len(sends) {
			t = sends[i]
		}
		if j < len(closes) {
			t = min(t, closes[j])
		}
		for ; i < len(sends) && sends[i] == t; i++ {
			n++
		}
		for ; j < len(closes) && closes[j] == t; j++ {
			n--
		}
		switch {
		case n >= k && !open:
			open, from = true, t
		case n < k && open:
			open = false
			out = append(out, span{from, t})
		}
	}
	if open {
		out = append(out, span{from, math.MaxInt64})
	}
	return out
}

// waited reports whether at least k other requests were in flight at some instant in which v
// waited to be sent ([t_sched, t_send)), or at its t_sched when it left on time.
func waited(sends, closes []int64, v *Request, spans []span, k int64) bool {
	if v.Send <= v.Sched {
		return busyAt(sends, closes, v) >= k
	}
	// The first span that ends after t_sched overlaps the wait when it starts before t_send.
	i, _ := slices.BinarySearchFunc(spans, v.Sched, func(s span, t int64) int { return cmp.Compare(s.to, t+1) })
	return i < len(spans) && spans[i].from < v.Send
}

// busyAt counts the other sent requests in flight at v's t_sched: sent at or before it and not
// closed by then (sends and closes sorted).
func busyAt(sends, closes []int64, v *Request) int64 {
	t := v.Sched
	upto := func(xs []int64) int64 {
		n, _ := slices.BinarySearch(xs, t+1)
		return int64(n)
	}
	busy := upto(sends) - upto(closes)
	if v.Send <= t && (!v.HasClose || v.Close > t) {
		busy-- // itself
	}
	return busy
}

// orderStat is X_(j) of the lags (1-based) and j; ok false with too few samples.
func orderStat(lags []float64, q float64) (float64, int, bool) {
	j, ok := LowerOrder(len(lags), q, FidelityConfidence)
	if !ok {
		return 0, 0, false
	}
	s := slices.Clone(lags)
	slices.Sort(s)
	return s[j-1], j, true
}

// judge is the fidelity verdict of a row (see the file comment): the rules, the cause and the
// reasons. In closed loop every lag is the client's; in open loop an arrival that found all
// concurrency slots busy waited for the server and is judged only by the open-loop rules.
func judge(spec RowSpec, measured []Request, achieved float64) (Judgement, bool, []string) {
	b := spec.Bound
	if b.LagMs <= 0 || b.Quantile <= 0 {
		b = BoundOf(nil)
	}
	cost := min(SendCostNs(spec.Calibration.SamplesNs), MaxSendCostNs)
	all := serialised(measured, cost, lagBoundNs(b.LagMs), spec.Concurrency, spec.Calibration.Connections)
	open := spec.Loop == contract.RowLoopOpen
	var own []float64
	var over []judged
	capped, serial := 0, 0
	for _, a := range all {
		if open && a.capped {
			capped++
			continue
		}
		own = append(own, a.lagMs)
		if a.position > 0 {
			serial++
		}
		if a.lagMs > b.LagMs {
			over = append(over, a)
		}
	}
	jd := Judgement{Cause: CauseNone, Quantile: b.Quantile, LagBoundMs: b.LagMs, Samples: len(own), Serialised: serial, SendCostNs: cost}
	var reasons []string
	degraded := false
	stat := func(n, j int) string {
		s := fmt.Sprintf("the %s of %d lags (a %g %% lower confidence bound of their %g-quantile", ordinal(n-j+1), n, FidelityConfidence*100, b.Quantile)
		if n < MinSamplesQuantile(b.Quantile) {
			s += fmt.Sprintf("; %d samples are too few for the quantile itself, which needs %d", n, MinSamplesQuantile(b.Quantile))
		}
		return s + ")"
	}
	if v, j, ok := orderStat(own, b.Quantile); ok {
		jd.Order, jd.LagMs = j, v
		if v > b.LagMs {
			degraded = true
			jd.Cause = ownCause(over, spec.Calibration.Connections)
			what := "schedule lag"
			if open {
				what = "schedule lag of the arrivals that found a free slot"
			}
			reasons = append(reasons, fmt.Sprintf("%s: %s %.3f ms, %s, exceeds the bound %.3f ms (%d of %d lags over it, each against its serialisation position: %.1f µs calibrated per send ahead, or its write time up to the bound)",
				causeText(jd.Cause), what, v, stat(len(own), j), b.LagMs, len(over), len(own), float64(cost)/1e3))
		}
	} else if len(own) > 0 {
		reasons = append(reasons, fmt.Sprintf("too few samples: %d lags cannot bound their %g-quantile at %g %%, so the client's lag was not judged", len(own), b.Quantile, FidelityConfidence*100))
	}
	if !open {
		return jd, degraded, reasons
	}
	ownReasons, ownDegraded, behindFired := len(reasons), degraded, false
	lags := make([]float64, len(all))
	for i, a := range all {
		lags[i] = a.lagMs
	}
	behind := CauseStarvedClient
	if capped > 0 {
		behind = CauseServerSaturation
	}
	if v, j, ok := orderStat(lags, b.Quantile); ok && v > DegradedOpenLagMs {
		if !degraded {
			jd.Cause = behind
		}
		degraded, behindFired = true, true
		reasons = append(reasons, fmt.Sprintf("%s: schedule lag over every sent arrival %.3f ms, %s, exceeds %.3f ms: requests went out behind their schedule (%d of %d found all %d slots busy)",
			causeText(behind), v, stat(len(lags), j), DegradedOpenLagMs, capped, len(lags), spec.Concurrency))
	}
	if sched, n := Scheduled(measured); n >= 2 && sched > 0 && achieved < DegradedRateFraction*sched {
		if !degraded {
			jd.Cause = behind
		}
		degraded, behindFired = true, true
		offered := ""
		if spec.OfferedRate != nil {
			offered = fmt.Sprintf(", offered %g/s", *spec.OfferedRate)
		}
		reasons = append(reasons, fmt.Sprintf("%s: achieved rate %.3f/s is below %g of the scheduled rate %.3f/s%s: the row did not sustain its offered load", causeText(behind), achieved, DegradedRateFraction, sched, offered))
	}
	if degraded && capped > 0 {
		reasons = append(reasons, fmt.Sprintf("%d arrivals found all %d slots busy: in flight reached the cap (server-bound; judged only by the open-loop rules)", capped, spec.Concurrency))
	}
	// A row most of whose arrivals waited for a slot, that the open-loop rules degrade, and whose
	// free-slot arrivals lag within DegradedOpenLagMs is server-bound: the client's small lag
	// cannot explain a row that fell behind by more, and an idle host would not make it faithful,
	// so saturation is its cause, named first. A client that itself lagged more (a starved one
	// whose backlog then filled the slots) keeps its own cause.
	if ownDegraded && behindFired && 2*capped > len(all) && jd.LagMs <= DegradedOpenLagMs {
		jd.Cause = CauseServerSaturation
		reasons = slices.Concat(reasons[ownReasons:], reasons[:ownReasons])
	}
	return jd, degraded, reasons
}

// ownCause names the cause of over-bound client lag: the client's connection pool when most
// over-bound arrivals found every connection busy, burst serialisation when most lay in a burst,
// else a starved (or stalled) client.
func ownCause(over []judged, conns int64) string {
	pooled, burst := 0, 0
	for _, a := range over {
		if a.pooled {
			pooled++
		}
		if a.position > 0 && !a.stalled {
			burst++
		}
	}
	switch {
	case conns > 0 && 2*pooled > len(over):
		return CauseConnectionWait
	case 2*burst > len(over):
		return CauseBurstSerialisation
	}
	return CauseStarvedClient
}

// causeText is the words a reason starts with.
func causeText(cause string) string {
	switch cause {
	case CauseStarvedClient:
		return "starved client (the client's own send path ran late)"
	case CauseBurstSerialisation:
		return "burst serialisation (the client left time between the sends of a burst)"
	case CauseConnectionWait:
		return "connection wait (the client's connection pool was smaller than the load needs)"
	case CauseServerSaturation:
		return "server saturation (in flight reached the concurrency cap)"
	}
	return cause
}

// FidelityHint is what to do about a degraded row of this cause ("" for none).
func FidelityHint(cause string) string {
	switch cause {
	case CauseStarvedClient:
		return "run qualrun on an idle host or give it a core of its own; the row measured the client, not the server"
	case CauseBurstSerialisation:
		return "the schedule's bursts need faster sends than this host gave: run on an idle host, give qualrun a core the server does not use (taskset), or slow the trace (time_scale)"
	case CauseConnectionWait:
		return "give the client at least as many connections as the case's concurrency"
	case CauseServerSaturation:
		return "lower the offered rate or raise the concurrency cap, or declare measures_saturation: true if saturation is what it measures (the case then passes; the row is still no measurement of its offered rate)"
	}
	return ""
}

// ordinal names the k-th largest ("largest", "2nd-largest", ...).
func ordinal(k int) string {
	suffix := "th"
	switch {
	case k == 1:
		return "largest"
	case k%100 >= 11 && k%100 <= 13:
	case k%10 == 1:
		suffix = "st"
	case k%10 == 2:
		suffix = "nd"
	case k%10 == 3:
		suffix = "rd"
	}
	return fmt.Sprintf("%d%s-largest", k, suffix)
}
