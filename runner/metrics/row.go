package metrics

import (
	"fmt"
	"slices"
	"sort"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// DegradedLagP99Ms is the client-fidelity bound: a row whose schedule lag (t_send - t_sched,
// over the requests the client itself delayed) has a p99 above it is marked degraded, because
// the client, not the server, decided when requests went out.
const DegradedLagP99Ms = 1.0

// Open-loop schedule bounds: an open-loop row is degraded (not a measurement of its offered load)
// when its measured requests went out behind their schedule, whoever delayed them. It is
// degraded when the p99 schedule lag over every sent measured request (arrivals that found all
// concurrency slots busy included) exceeds DegradedOpenLagP99Ms, or when the achieved send rate
// is below DegradedRateFraction of the scheduled rate ((n - 1) / (max t_sched - min t_sched) over
// the same n requests: the rate the row's own schedule asked for, so Poisson variance does not
// count).
const (
	DegradedOpenLagP99Ms = 10.0
	DegradedRateFraction = 0.9
)

// RowSpec is what a row's numbers depend on besides its request records.
type RowSpec struct {
	Concurrency int64
	Repetition  int64
	// Loop is "closed" (concurrency slots) or "open" (a declared rate; concurrency caps the
	// requests in flight).
	Loop string
	// OfferedRate is the declared open-loop rate in requests/s; nil in closed loop.
	OfferedRate *float64
	// SLO holds the declared gates (zero: not declared).
	SLO contract.SLO
	// PromptSetSHA256 is PromptSetSHA256 of the row's prompts in measured order.
	PromptSetSHA256 string
}

// view is one record reduced to what the formulas read; times are nanoseconds.
type view struct {
	ok                  bool
	sched               int64
	send, hdr, end, cls int64
	hasSend, hasHdr     bool
	hasEnd, hasClose    bool
	content             []int64 // arrival of each content event, in order
	n, p                int64   // completion and prompt tokens (ok only)
}

func newView(r *contract.RequestRecordDoc) view {
	v := view{ok: r.Error == nil, sched: r.TSchedNs}
	if r.TSendNs != nil {
		v.send, v.hasSend = *r.TSendNs, true
	}
	if r.THdrNs != nil {
		v.hdr, v.hasHdr = *r.THdrNs, true
	}
	if r.TEndNs != nil {
		v.end, v.hasEnd = *r.TEndNs, true
	}
	if r.TCloseNs != nil {
		v.cls, v.hasClose = *r.TCloseNs, true
	}
	for _, e := range r.Events {
		if e.Kind == "content" {
			v.content = append(v.content, e.TNs)
		}
	}
	if r.Usage != nil {
		v.n, v.p = r.Usage.CompletionTokens, r.Usage.PromptTokens
	}
	// A success without t_send, t_end or usage breaks the record contract; it is counted, but
	// no number is derived from it.
	if v.ok && (!v.hasSend || !v.hasEnd || r.Usage == nil) {
		v.ok = false
	}
	return v
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// Row computes a serving row from its request records: the counts, the request window, the
// prompt and output set hashes, every metric of docs/metrics.md and the client fidelity. It is a
// pure function of its arguments (records in any order; warmup records are ignored), so a
// verifier can recompute every number from the retained records. Records is left empty (the
// caller binds the records file).
//
// Latency distributions (TTFT, TTFB, E2E, TPOT, decode rate, ICL) are over the successful measured
// requests only; failures count in the request total, in the SLO good fraction's denominator and
// in request_failures. A metric with no sample is not emitted (for example TPOT when every
// response had one token).
func Row(spec RowSpec, records []contract.RequestRecordDoc) contract.Row {
	var measured []*contract.RequestRecordDoc
	for i := range records {
		if !records[i].Warmup {
			measured = append(measured, &records[i])
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	views := make([]view, len(measured))
	row := contract.Row{
		Concurrency: spec.Concurrency, Repetition: spec.Repetition, Loop: spec.Loop,
		Requests: int64(len(measured)), PromptSetSHA256: spec.PromptSetSHA256,
		OutputSetSHA256: outputSet(measured),
	}
	for i, r := range measured {
		views[i] = newView(r)
		if views[i].ok {
			row.Successes++
		}
	}
	row.Failures = row.Requests - row.Successes

	b := &builder{}
	w, hasWindow := window(views)
	row.WindowSeconds = float64(w) / 1e9

	var ttft, ttftSched, ttfb, e2e, e2eSched, tpot, rate, icl, iclMax, chunking []float64
	var outTokens, promptTokens int64
	for _, v := range views {
		if !v.ok {
			continue
		}
		outTokens += v.n
		promptTokens += v.p
		e2e = append(e2e, ms(v.end-v.send))
		e2eSched = append(e2eSched, ms(v.end-v.sched))
		if v.hasHdr {
			ttfb = append(ttfb, ms(v.hdr-v.send))
		}
		if len(v.content) == 0 {
			continue
		}
		cf := v.content[0]
		ttft = append(ttft, ms(cf-v.send))
		ttftSched = append(ttftSched, ms(cf-v.sched))
		if v.n >= 2 {
			d := v.end - cf
			tpot = append(tpot, ms(d)/float64(v.n-1))
			if d > 0 {
				rate = append(rate, float64(v.n-1)/(float64(d)/1e9))
			}
		}
		if len(v.content) >= 2 {
			m := int64(0)
			for k := 1; k < len(v.content); k++ {
				g := v.content[k] - v.content[k-1]
				icl = append(icl, ms(g))
				m = max(m, g)
			}
			iclMax = append(iclMax, ms(m))
		}
		chunking = append(chunking, float64(v.n)/float64(len(v.content)))
	}

	b.dist("ttft_ms", "ms", lower, "ttft.v1", ttft)
	b.dist("ttft_sched_ms", "ms", lower, "ttft_sched.v1", ttftSched)
	b.dist("ttfb_ms", "ms", lower, "ttfb.v1", ttfb)
	b.dist("e2e_ms", "ms", lower, "e2e.v1", e2e)
	b.dist("e2e_sched_ms", "ms", lower, "e2e_sched.v1", e2eSched)
	b.dist("tpot_ms", "ms", lower, "tpot.v1", tpot)
	b.dist("decode_rate", "tokens/s", higher, "decode_rate.v1", rate)
	b.dist("icl_ms", "ms", lower, "icl.v1", icl)
	b.dist("icl_max_ms", "ms", lower, "icl_max.v1", iclMax)
	if len(chunking) > 0 {
		b.add("chunking_factor.mean", Summarize(chunking).Mean, "tokens/event", "mean", none, "chunking_factor.v1", len(chunking))
	}

	b.add("request_failures", float64(row.Failures), "requests", "count", lower, "request_failures.v1", len(views))
	for _, cf := range failureClasses(measured) {
		b.add("request_failures."+cf.class, float64(cf.n), "requests", "count", lower, "request_failures_by_class.v1", len(views))
	}
	b.add("output_tokens.sum", float64(outTokens), "tokens", "sum", none, "output_tokens.v1", int(row.Successes))
	b.add("prompt_tokens.sum", float64(promptTokens), "tokens", "sum", none, "prompt_tokens.v1", int(row.Successes))
	if hasWindow {
		ws := float64(w) / 1e9
		b.add("window_s", ws, "s", "exact", none, "request_window.v1", len(views))
		b.add("request_throughput", float64(row.Successes)/ws, "requests/s", "rate", higher, "request_throughput.v1", int(row.Successes))
		b.add("output_throughput_window", float64(outTokens)/ws, "tokens/s", "rate", higher, "output_throughput_window.v1", int(row.Successes))
		b.add("total_throughput_window", float64(outTokens+promptTokens)/ws, "tokens/s", "rate", higher, "total_throughput_window.v1", int(row.Successes))
		good, goodTokens := goodput(views, spec.SLO)
		b.add("slo_goodput", float64(good)/ws, "requests/s", "rate", higher, "slo_goodput.v1", len(views))
		b.add("slo_goodput_tokens", float64(goodTokens)/ws, "tokens/s", "rate", higher, "slo_goodput_tokens.v1", len(views))
	}
	if len(views) > 0 {
		good, _ := goodput(views, spec.SLO)
		b.add("slo_good_fraction", float64(good)/float64(len(views)), "fraction", "mean", higher, "slo_good_fraction.v1", len(views))
	}

	lags := lagSamples(views)
	b.dist("schedule_lag_ms", "ms", lower, "schedule_lag.v1", lags)
	if spec.Loop == "closed" {
		if spread, n, ok := dispatchSpread(views, spec.Concurrency); ok {
			b.add("dispatch_spread_ms", ms(spread), "ms", "exact", lower, "dispatch_spread.v1", n)
		}
	}
	achieved, nSent := achievedRate(views)
	if nSent >= 2 {
		b.add("achieved_rate", achieved, "requests/s", "rate", none, "achieved_rate.v1", nSent)
	}
	row.Fidelity = fidelity(spec, views, lags, achieved)
	if lo, hi, ok := windowBounds(views); ok {
		if peak, mean, ok := inFlight(views, lo, hi); ok {
			row.Fidelity.InFlightPeak, row.Fidelity.InFlightMean = &peak, &mean
		}
	}
	row.Metrics = b.ms
	if row.Metrics == nil {
		row.Metrics = []contract.Metric{}
	}
	return row
}

const (
	lower  = "lower_is_better"
	higher = "higher_is_better"
	none   = "none"
)

type builder struct{ ms []contract.Metric }

func (b *builder) add(name string, v float64, unit, agg, dir, formula string, n int) {
	s := int64(n)
	b.ms = append(b.ms, contract.Metric{Name: name, Value: v, Unit: unit, Aggregation: agg, Direction: dir, Formula: formula, Samples: &s})
}

// dist emits the summary of a per-request (or per-gap) distribution: p50, p90, p95, p99, p99.9
// (with at least MinSamplesP999 samples), min, max and mean; nothing for an empty sample.
func (b *builder) dist(base, unit, dir, formula string, xs []float64) {
	if len(xs) == 0 {
		return
	}
	s := Summarize(xs)
	for _, a := range []struct {
		agg string
		v   float64
	}{{"p50", s.P50}, {"p90", s.P90}, {"p95", s.P95}, {"p99", s.P99}} {
		b.add(base+"."+a.agg, a.v, unit, a.agg, dir, formula, s.Count)
	}
	if s.HasP999 {
		b.add(base+".p99.9", s.P999, unit, "p99.9", dir, formula, s.Count)
	}
	b.add(base+".min", s.Min, unit, "min", dir, formula, s.Count)
	b.add(base+".max", s.Max, unit, "max", dir, formula, s.Count)
	b.add(base+".mean", s.Mean, unit, "mean", dir, formula, s.Count)
}

// window is W = max t_end - min t_send over the measured requests (a request without t_end does
// not extend it); ok is false when no request has both ends or W is not positive.
func window(views []view) (int64, bool) {
	lo, hi, ok := windowBounds(views)
	return hi - lo, ok
}

// windowBounds are min t_send and max t_end of the measured requests (see window).
func windowBounds(views []view) (lo, hi int64, ok bool) {
	hasLo, hasHi := false, false
	for _, v := range views {
		if v.hasSend && (!hasLo || v.send < lo) {
			lo, hasLo = v.send, true
		}
		if v.hasEnd && (!hasHi || v.end > hi) {
			hi, hasHi = v.end, true
		}
	}
	if !hasLo || !hasHi || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// goodput counts the successful requests that pass every declared gate, and their tokens. TTFT
// and E2E gates use the scheduled variants (TTFT_sched, E2E_sched: queueing in the client
// counts, coordinated omission is not hidden); the ICL gate bounds each request's largest
// inter-event gap and is vacuous with fewer than two content events; a TTFT gate fails a request
// without a content event. With no gate declared every success passes.
func goodput(views []view, slo contract.SLO) (int, int64) {
	good, tokens := 0, int64(0)
	for _, v := range views {
		if !v.ok {
			continue
		}
		if slo.TTFTMs > 0 && (len(v.content) == 0 || ms(v.content[0]-v.sched) > slo.TTFTMs) {
			continue
		}
		if slo.E2EMs > 0 && ms(v.end-v.sched) > slo.E2EMs {
			continue
		}
		if slo.ICLMs > 0 {
			pass := true
			for k := 1; k < len(v.content); k++ {
				if ms(v.content[k]-v.content[k-1]) > slo.ICLMs {
					pass = false
					break
				}
			}
			if !pass {
				continue
			}
		}
		good++
		tokens += v.n
	}
	return good, tokens
}

// lagSamples are t_send - t_sched of every measured request that was sent (failures included:
// lag measures the client, not the response).
func lagSamples(views []view) []float64 {
	var out []float64
	for _, v := range views {
		if v.hasSend {
			out = append(out, ms(v.send-v.sched))
		}
	}
	return out
}

// dispatchSpread is max t_send - min t_send over the first min(concurrency, requests) measured
// requests: the ones a closed-loop row releases together through its barrier.
func dispatchSpread(views []view, concurrency int64) (int64, int, bool) {
	k := min(int(concurrency), len(views))
	var lo, hi int64
	n := 0
	for _, v := range views[:k] {
		if !v.hasSend {
			continue
		}
		if n == 0 || v.send < lo {
			lo = v.send
		}
		if n == 0 || v.send > hi {
			hi = v.send
		}
		n++
	}
	return hi - lo, n, n >= 1
}

// achievedRate is (n - 1) / (max t_send - min t_send) over the n measured requests sent: the
// send rate the client sustained (exact for evenly spaced sends); 0 with fewer than two sends.
func achievedRate(views []view) (float64, int) {
	return sentRate(views, func(v view) int64 { return v.send })
}

// fidelity measures the client. In closed loop every lag is the client's own. In open loop an
// arrival that found all concurrency slots busy (at least Concurrency other requests sent and not
// yet closed at its t_sched) waited for the server, not the client: its lag is reported but does
// not mark the row degraded.
func fidelity(spec RowSpec, views []view, lags []float64, achieved float64) contract.Fidelity {
	s := Summarize(lags)
	f := contract.Fidelity{
		ScheduleLagP50Ms: max(0, s.P50), ScheduleLagP99Ms: max(0, s.P99), ScheduleLagMaxMs: max(0, s.Max),
		OfferedRate: spec.OfferedRate, AchievedRate: achieved, Reasons: []string{},
	}
	own := lags
	capped := 0
	if spec.Loop == "open" {
		own = nil
		for j, v := range views {
			if !v.hasSend {
				continue
			}
			busy := int64(0)
			for i, u := range views {
				if i != j && u.hasSend && u.send <= v.sched && (!u.hasClose || u.cls > v.sched) {
					busy++
				}
			}
			if busy >= spec.Concurrency {
				capped++
				continue
			}
			own = append(own, ms(v.send-v.sched))
		}
	}
	if len(own) > 0 {
		if p99 := Summarize(own).P99; p99 > DegradedLagP99Ms {
			f.Degraded = true
			what := "schedule lag"
			if spec.Loop == "open" {
				what = "schedule lag of arrivals that found a free slot"
			}
			f.Reasons = append(f.Reasons, fmt.Sprintf("p99 %s %.3f ms exceeds %.3f ms: the client, not the server, delayed requests", what, p99, DegradedLagP99Ms))
		}
	}
	if f.Degraded && capped > 0 {
		f.Reasons = append(f.Reasons, fmt.Sprintf("%d arrivals found all %d slots busy (server-bound, excluded from the lag bound)", capped, spec.Concurrency))
	}
	if spec.Loop == "open" {
		if len(lags) > 0 && s.P99 > DegradedOpenLagP99Ms {
			f.Degraded = true
			f.Reasons = append(f.Reasons, fmt.Sprintf("p99 schedule lag %.3f ms over every sent arrival exceeds %.3f ms: requests went out behind their schedule (%d of %d found all %d slots busy)", s.P99, DegradedOpenLagP99Ms, capped, len(lags), spec.Concurrency))
		}
		if sched, n := scheduledRate(views); n >= 2 && sched > 0 && achieved < DegradedRateFraction*sched {
			f.Degraded = true
			offered := ""
			if spec.OfferedRate != nil {
				offered = fmt.Sprintf(", offered %g/s", *spec.OfferedRate)
			}
			f.Reasons = append(f.Reasons, fmt.Sprintf("achieved rate %.3f/s is below %g of the scheduled rate %.3f/s%s: the row did not sustain its offered load", achieved, DegradedRateFraction, sched, offered))
		}
	}
	return f
}

// scheduledRate is (n - 1) / (max t_sched - min t_sched) over the n measured requests sent (the
// same requests achievedRate counts); 0 with fewer than two or no spread.
func scheduledRate(views []view) (float64, int) {
	return sentRate(views, func(v view) int64 { return v.sched })
}

// sentRate is (n - 1) / (max at - min at) over the n requests that were sent; 0 with fewer than
// two or no spread.
func sentRate(views []view, at func(view) int64) (float64, int) {
	var lo, hi int64
	n := 0
	for _, v := range views {
		if !v.hasSend {
			continue
		}
		t := at(v)
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

type classCount struct {
	class string
	n     int
}

func failureClasses(measured []*contract.RequestRecordDoc) []classCount {
	counts := map[string]int{}
	for _, r := range measured {
		if r.Error != nil {
			counts[r.Error.Class]++
		}
	}
	out := make([]classCount, 0, len(counts))
	for c, n := range counts {
		out = append(out, classCount{c, n})
	}
	slices.SortFunc(out, func(a, b classCount) int {
		if a.class < b.class {
			return -1
		}
		if a.class > b.class {
			return 1
		}
		return 0
	})
	return out
}

// outputSet hashes the ordered output digests; nil when a measured request failed or has no
// output digest.
func outputSet(measured []*contract.RequestRecordDoc) *string {
	digests := make([]string, 0, len(measured))
	for _, r := range measured {
		if r.Error != nil || r.OutputDigest == nil {
			return nil
		}
		digests = append(digests, *r.OutputDigest)
	}
	h, err := hashCanonical(digests)
	if err != nil {
		return nil
	}
	return &h
}

// OutputSetSHA256 returns the output set hash of a row's records: the sha256 digest of the
// RFC 8785 canonical JSON array of the measured requests' output digests in index order
// (["sha256:…",…]); nil when a measured request failed.
func OutputSetSHA256(records []contract.RequestRecordDoc) *string {
	var measured []*contract.RequestRecordDoc
	for i := range records {
		if !records[i].Warmup {
			measured = append(measured, &records[i])
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	return outputSet(measured)
}

// PromptSetSHA256 returns the prompt set hash: the sha256 digest of the RFC 8785 canonical JSON
// array of the prompts in measured order, each {"id","text"} plus "system" when it has one. It
// fails only on text that is not UTF-8.
func PromptSetSHA256(prompts []contract.Prompt) (string, error) {
	if prompts == nil {
		prompts = []contract.Prompt{}
	}
	for i, p := range prompts {
		if !utf8.ValidString(p.ID) || !utf8.ValidString(p.Text) || !utf8.ValidString(p.System) {
			return "", fmt.Errorf("prompt %d is not UTF-8", i)
		}
	}
	return hashCanonical(prompts)
}

func hashCanonical(v any) (string, error) {
	b, err := jsonstrict.Canonical(v)
	if err != nil {
		return "", err
	}
	return evidence.DigestOf(b), nil
}
