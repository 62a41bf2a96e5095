package verify

import (
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// The metric formulas of docs/metrics.md, recomputed from request records. This is an independent
// implementation of the definitions (verify never imports the runner that wrote the numbers);
// TestRecomputeMatchesCampaign checks it against a real campaign's case result, and every
// verification compares the two within the policy's recompute tolerance.

// degradedLagP99Ms is the client-fidelity bound of the metric definitions: a row whose schedule
// lag p99 (over the requests the client itself delayed) exceeds it is degraded.
const degradedLagP99Ms = 1.0

// An open-loop row is also degraded when its requests went out behind their schedule: the p99
// lag over every sent measured request exceeds degradedOpenLagP99Ms, or the achieved send rate is
// below degradedRateFraction of the scheduled rate (n - 1) / (max t_sched - min t_sched).
const (
	degradedOpenLagP99Ms = 10.0
	degradedRateFraction = 0.9
)

// minSamplesP999 is the fewest samples for which a p99.9 is defined.
const minSamplesP999 = 1000

const (
	lowerBetter  = "lower_is_better"
	higherBetter = "higher_is_better"
	noDirection  = "none"
)

// percentile is Hyndman and Fan's type 7 (numpy's default) over sorted, non-empty xs.
func percentile(sorted []float64, q float64) float64 {
	n := len(sorted)
	h := float64(n-1) * q
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	if lo < 0 {
		return sorted[0]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

type summary struct {
	count              int
	min, max, mean     float64
	p50, p90, p95, p99 float64
	p999               float64
	hasP999, nonEmpty  bool
}

func summarize(xs []float64) summary {
	if len(xs) == 0 {
		return summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	out := summary{count: len(s), min: s[0], max: s[len(s)-1], mean: sum / float64(len(s)), nonEmpty: true,
		p50: percentile(s, 0.50), p90: percentile(s, 0.90), p95: percentile(s, 0.95), p99: percentile(s, 0.99)}
	if len(s) >= minSamplesP999 {
		out.p999, out.hasP999 = percentile(s, 0.999), true
	}
	return out
}

// rowSpec is what a row's numbers depend on besides its records.
type rowSpec struct {
	concurrency int64
	loop        string
	offered     *float64
	slo         contract.SLO
	// sloKnown is false when the workload (and so the SLO) is not available: the SLO metrics are
	// then not recomputed.
	sloKnown bool
}

// rowFacts is a recomputed row: its counts, window, output set and metrics.
type rowFacts struct {
	requests, successes, failures int64
	windowSeconds                 float64
	outputSet                     *string
	metrics                       []contract.Metric
	lagP50, lagP99, lagMax        float64
	achieved                      float64
	degraded                      bool
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// ok reports whether a record counts as a success: no error, and the times and usage the
// formulas need (a success without them breaks the record contract and is not used).
func (r *record) ok() bool { return !r.failed && r.hasSend && r.hasEnd && r.hasUsage }

// recomputeRow applies the row formulas to a row's records (any order; warmups are ignored).
func recomputeRow(spec rowSpec, records []*record) rowFacts {
	var measured []*record
	for _, r := range records {
		if !r.warmup {
			measured = append(measured, r)
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].index < measured[b].index })
	f := rowFacts{requests: int64(len(measured)), outputSet: outputSet(measured)}
	for _, r := range measured {
		if r.ok() {
			f.successes++
		}
	}
	f.failures = f.requests - f.successes
	b := &metricBuilder{}
	w, hasWindow := requestWindow(measured)
	f.windowSeconds = float64(w) / 1e9

	sm := samplesOf(measured)
	outTokens, promptTokens := sm.outTokens, sm.promptTokens
	b.dist("ttft_ms", "ms", lowerBetter, "ttft.v1", sm.ttft)
	b.dist("ttft_sched_ms", "ms", lowerBetter, "ttft_sched.v1", sm.ttftSched)
	b.dist("ttfb_ms", "ms", lowerBetter, "ttfb.v1", sm.ttfb)
	b.dist("e2e_ms", "ms", lowerBetter, "e2e.v1", sm.e2e)
	b.dist("e2e_sched_ms", "ms", lowerBetter, "e2e_sched.v1", sm.e2eSched)
	b.dist("tpot_ms", "ms", lowerBetter, "tpot.v1", sm.tpot)
	b.dist("decode_rate", "tokens/s", higherBetter, "decode_rate.v1", sm.rate)
	b.dist("icl_ms", "ms", lowerBetter, "icl.v1", sm.icl)
	b.dist("icl_max_ms", "ms", lowerBetter, "icl_max.v1", sm.iclMax)
	if len(sm.chunking) > 0 {
		b.add("chunking_factor.mean", summarize(sm.chunking).mean, "tokens/event", "mean", noDirection, "chunking_factor.v1", len(sm.chunking))
	}

	n := len(measured)
	b.add("request_failures", float64(f.failures), "requests", "count", lowerBetter, "request_failures.v1", n)
	classes := map[string]int{}
	for _, r := range measured {
		if r.failed {
			classes[r.errClass]++
		}
	}
	names := make([]string, 0, len(classes))
	for c := range classes {
		names = append(names, c)
	}
	sort.Strings(names)
	for _, c := range names {
		b.add("request_failures."+c, float64(classes[c]), "requests", "count", lowerBetter, "request_failures_by_class.v1", n)
	}
	b.add("output_tokens.sum", float64(outTokens), "tokens", "sum", noDirection, "output_tokens.v1", int(f.successes))
	b.add("prompt_tokens.sum", float64(promptTokens), "tokens", "sum", noDirection, "prompt_tokens.v1", int(f.successes))
	if hasWindow {
		ws := float64(w) / 1e9
		b.add("window_s", ws, "s", "exact", noDirection, "request_window.v1", n)
		b.add("request_throughput", float64(f.successes)/ws, "requests/s", "rate", higherBetter, "request_throughput.v1", int(f.successes))
		b.add("output_throughput_window", float64(outTokens)/ws, "tokens/s", "rate", higherBetter, "output_throughput_window.v1", int(f.successes))
		b.add("total_throughput_window", float64(outTokens+promptTokens)/ws, "tokens/s", "rate", higherBetter, "total_throughput_window.v1", int(f.successes))
		if spec.sloKnown {
			good, goodTokens := goodput(measured, spec.slo)
			b.add("slo_goodput", float64(good)/ws, "requests/s", "rate", higherBetter, "slo_goodput.v1", n)
			b.add("slo_goodput_tokens", float64(goodTokens)/ws, "tokens/s", "rate", higherBetter, "slo_goodput_tokens.v1", n)
		}
	}
	if n > 0 && spec.sloKnown {
		good, _ := goodput(measured, spec.slo)
		b.add("slo_good_fraction", float64(good)/float64(n), "fraction", "mean", higherBetter, "slo_good_fraction.v1", n)
	}

	b.dist("schedule_lag_ms", "ms", lowerBetter, "schedule_lag.v1", sm.lag)
	if spec.loop == "closed" {
		if spread, k, ok := dispatchSpread(measured, spec.concurrency); ok {
			b.add("dispatch_spread_ms", ms(spread), "ms", "exact", lowerBetter, "dispatch_spread.v1", k)
		}
	}
	achieved, nSent := achievedRate(measured)
	if nSent >= 2 {
		b.add("achieved_rate", achieved, "requests/s", "rate", noDirection, "achieved_rate.v1", nSent)
	}
	ls := summarize(sm.lag)
	f.lagP50, f.lagP99, f.lagMax = max(0, ls.p50), max(0, ls.p99), max(0, ls.max)
	f.achieved = achieved
	f.degraded = degraded(spec, measured, sm.lag)
	f.metrics = b.ms
	return f
}

// rowSamples are the per-request samples of a row's distributions (docs/metrics.md), in the order
// of the measured requests: latencies over the successes (ICL pooled over their gaps), schedule
// lag over every request sent.
type rowSamples struct {
	ttft, ttftSched, ttfb, e2e, e2eSched, tpot, rate, icl, iclMax, chunking, lag []float64
	outTokens, promptTokens                                                      int64
}

// samplesOf applies the per-request formulas to the measured requests of a row.
func samplesOf(measured []*record) rowSamples {
	var sm rowSamples
	for _, r := range measured {
		if r.hasSend {
			sm.lag = append(sm.lag, ms(r.send-r.sched))
		}
		if !r.ok() {
			continue
		}
		sm.outTokens += r.n
		sm.promptTokens += r.p
		sm.e2e = append(sm.e2e, ms(r.end-r.send))
		sm.e2eSched = append(sm.e2eSched, ms(r.end-r.sched))
		if r.hasHdr {
			sm.ttfb = append(sm.ttfb, ms(r.hdr-r.send))
		}
		if len(r.content) == 0 {
			continue
		}
		cf := r.content[0]
		sm.ttft = append(sm.ttft, ms(cf-r.send))
		sm.ttftSched = append(sm.ttftSched, ms(cf-r.sched))
		if r.n >= 2 {
			d := r.end - cf
			sm.tpot = append(sm.tpot, ms(d)/float64(r.n-1))
			if d > 0 {
				sm.rate = append(sm.rate, float64(r.n-1)/(float64(d)/1e9))
			}
		}
		if len(r.content) >= 2 {
			m := int64(0)
			for k := 1; k < len(r.content); k++ {
				g := r.content[k] - r.content[k-1]
				sm.icl = append(sm.icl, ms(g))
				m = max(m, g)
			}
			sm.iclMax = append(sm.iclMax, ms(m))
		}
		sm.chunking = append(sm.chunking, float64(r.n)/float64(len(r.content)))
	}
	return sm
}

// metricsUnsetWithoutSLO are the row metrics that need the workload's SLO.
var metricsUnsetWithoutSLO = []string{"slo_goodput", "slo_goodput_tokens", "slo_good_fraction"}

type metricBuilder struct{ ms []contract.Metric }

func (b *metricBuilder) add(name string, v float64, unit, agg, dir, formula string, n int) {
	s := int64(n)
	b.ms = append(b.ms, contract.Metric{Name: name, Value: v, Unit: unit, Aggregation: agg, Direction: dir, Formula: formula, Samples: &s})
}

func (b *metricBuilder) dist(base, unit, dir, formula string, xs []float64) {
	if len(xs) == 0 {
		return
	}
	s := summarize(xs)
	for _, a := range []struct {
		agg string
		v   float64
	}{{"p50", s.p50}, {"p90", s.p90}, {"p95", s.p95}, {"p99", s.p99}} {
		b.add(base+"."+a.agg, a.v, unit, a.agg, dir, formula, s.count)
	}
	if s.hasP999 {
		b.add(base+".p99.9", s.p999, unit, "p99.9", dir, formula, s.count)
	}
	b.add(base+".min", s.min, unit, "min", dir, formula, s.count)
	b.add(base+".max", s.max, unit, "max", dir, formula, s.count)
	b.add(base+".mean", s.mean, unit, "mean", dir, formula, s.count)
}

// requestWindow is W = max t_end - min t_send over the measured requests.
func requestWindow(rs []*record) (int64, bool) {
	var lo, hi int64
	hasLo, hasHi := false, false
	for _, r := range rs {
		if r.hasSend && (!hasLo || r.send < lo) {
			lo, hasLo = r.send, true
		}
		if r.hasEnd && (!hasHi || r.end > hi) {
			hi, hasHi = r.end, true
		}
	}
	if !hasLo || !hasHi || hi <= lo {
		return 0, false
	}
	return hi - lo, true
}

// goodput counts the successes passing every declared SLO gate (TTFT_sched, E2E_sched, the
// largest inter-event gap) and their tokens.
func goodput(rs []*record, slo contract.SLO) (int, int64) {
	good, tokens := 0, int64(0)
	for _, r := range rs {
		if !r.ok() {
			continue
		}
		if slo.TTFTMs > 0 && (len(r.content) == 0 || ms(r.content[0]-r.sched) > slo.TTFTMs) {
			continue
		}
		if slo.E2EMs > 0 && ms(r.end-r.sched) > slo.E2EMs {
			continue
		}
		if slo.ICLMs > 0 {
			pass := true
			for k := 1; k < len(r.content); k++ {
				if ms(r.content[k]-r.content[k-1]) > slo.ICLMs {
					pass = false
					break
				}
			}
			if !pass {
				continue
			}
		}
		good++
		tokens += r.n
	}
	return good, tokens
}

// dispatchSpread is max - min t_send over the first min(concurrency, n) measured requests.
func dispatchSpread(rs []*record, concurrency int64) (int64, int, bool) {
	k := min(int(concurrency), len(rs))
	var lo, hi int64
	n := 0
	for _, r := range rs[:k] {
		if !r.hasSend {
			continue
		}
		if n == 0 || r.send < lo {
			lo = r.send
		}
		if n == 0 || r.send > hi {
			hi = r.send
		}
		n++
	}
	return hi - lo, n, n >= 1
}

// achievedRate is (n - 1) / (max t_send - min t_send) over the n measured requests sent.
func achievedRate(rs []*record) (float64, int) {
	return sentRate(rs, func(r *record) int64 { return r.send })
}

// sentRate is (n - 1) / (max at - min at) over the n requests that were sent; 0 with fewer than
// two or no spread.
func sentRate(rs []*record, at func(*record) int64) (float64, int) {
	var lo, hi int64
	n := 0
	for _, r := range rs {
		if !r.hasSend {
			continue
		}
		t := at(r)
		if n == 0 || t < lo {
			lo = t
		}
		if n == 0 || t > hi {
			hi = t
		}
		n++
	}
	if n < 2 || hi <= lo {
		return 0, n
	}
	return float64(n-1) / (float64(hi-lo) / 1e9), n
}

// degraded applies the client-fidelity rule: in closed loop every lag is the client's; in open
// loop an arrival that found every slot busy waited for the server and does not count.
func degraded(spec rowSpec, rs []*record, lags []float64) bool {
	own := lags
	if spec.loop == "open" {
		own = nil
		for j, v := range rs {
			if !v.hasSend {
				continue
			}
			busy := int64(0)
			for i, u := range rs {
				if i != j && u.hasSend && u.send <= v.sched && (!u.hasClose || u.cls > v.sched) {
					busy++
				}
			}
			if busy >= spec.concurrency {
				continue
			}
			own = append(own, ms(v.send-v.sched))
		}
	}
	if len(own) > 0 && summarize(own).p99 > degradedLagP99Ms {
		return true
	}
	if spec.loop != "open" {
		return false
	}
	if len(lags) > 0 && summarize(lags).p99 > degradedOpenLagP99Ms {
		return true
	}
	sched, _ := sentRate(rs, func(r *record) int64 { return r.sched })
	if sched == 0 {
		return false
	}
	achieved, _ := achievedRate(rs)
	return achieved < degradedRateFraction*sched
}

// outputSet is the digest of the RFC 8785 JSON array of the measured output digests in index
// order; nil when a measured request failed or has no output digest. Digests are
// "sha256:<hex>", so the canonical array is written directly.
func outputSet(rs []*record) *string {
	var b strings.Builder
	b.WriteByte('[')
	for i, r := range rs {
		if r.failed || r.output == "" {
			return nil
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(r.output)
		b.WriteByte('"')
	}
	b.WriteByte(']')
	d := evidence.DigestOf([]byte(b.String()))
	return &d
}

// promptSet is the prompt set hash of prompts in measured order (docs/metrics.md).
func promptSet(prompts []contract.Prompt) (string, error) {
	if prompts == nil {
		prompts = []contract.Prompt{}
	}
	b, err := jsonstrict.Canonical(prompts)
	if err != nil {
		return "", err
	}
	return evidence.DigestOf(b), nil
}

// caseHeadline lists the row metrics a serving case summarizes across rows.
var caseHeadline = []struct {
	name string
	best bool
}{
	{"ttft_ms.p50", false},
	{"ttft_ms.p99", false},
	{"tpot_ms.p50", false},
	{"tpot_ms.p99", false},
	{"e2e_ms.p99", false},
	{"icl_max_ms.p99", false},
	{"decode_rate.p50", false},
	{"slo_good_fraction", false},
	{"schedule_lag_ms.p99", false},
	{"request_throughput", true},
	{"output_throughput_window", true},
	{"slo_goodput", true},
}

// recomputeCase applies the case formulas to a serving case's rows (as recorded): the request and
// row counts, the worst row of each latency and SLO metric, the best row of each throughput,
// the failure total and the degraded rows.
func recomputeCase(rows []contract.Row) []contract.Metric {
	b := &metricBuilder{}
	var requests int64
	for _, r := range rows {
		requests += r.Requests
	}
	cnt := func(name string, v int64) {
		n := v
		b.ms = append(b.ms, contract.Metric{Name: name, Value: float64(v), Unit: "count", Aggregation: "count", Direction: noDirection, Formula: "campaign." + name + ".v1", Samples: &n})
	}
	cnt("request_count", requests)
	cnt("row_count", int64(len(rows)))
	for _, h := range caseHeadline {
		var pick contract.Metric
		n := 0
		for _, r := range rows {
			for _, m := range r.Metrics {
				if m.Name != h.name || m.Diagnostic {
					continue
				}
				hb := m.Direction == higherBetter
				if n == 0 || (h.best && m.Value > pick.Value) || (!h.best && hb && m.Value < pick.Value) || (!h.best && !hb && m.Value > pick.Value) {
					pick = m
				}
				n++
			}
		}
		if n == 0 {
			continue
		}
		suffix, agg := ".worst_row", "max"
		switch {
		case h.best:
			suffix = ".best_row"
		case pick.Direction == higherBetter:
			agg = "min"
		}
		b.add(h.name+suffix, pick.Value, pick.Unit, agg, pick.Direction, pick.Formula, n)
	}
	failures, degradedRows := int64(0), 0
	for _, r := range rows {
		failures += r.Failures
		if r.Fidelity.Degraded {
			degradedRows++
		}
	}
	b.add("request_failures.sum", float64(failures), "requests", "sum", lowerBetter, "request_failures.v1", len(rows))
	b.add("degraded_rows", float64(degradedRows), "rows", "count", lowerBetter, "degraded_rows.v1", len(rows))
	return b.ms
}

// within reports whether got is within tol of want: |got - want| <= max(abs, |want| x rel).
func within(got, want float64, tol Tolerance) bool {
	if math.IsNaN(got) || math.IsNaN(want) || math.IsInf(got, 0) || math.IsInf(want, 0) {
		return false
	}
	return math.Abs(got-want) <= max(tol.Absolute, math.Abs(want)*tol.Relative)
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
