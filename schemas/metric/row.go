package metric

import (
	"cmp"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Request is one measured request record reduced to what the formulas read. Times are
// nanoseconds on the campaign's monotonic clock; a Has flag is false when the record lacks the
// time.
type Request struct {
	// Failed is true when the record has an error; ErrorClass is its class.
	Failed     bool
	ErrorClass string
	Sched      int64
	Send       int64
	Hdr        int64
	End        int64
	Close      int64
	HasSend    bool
	HasHdr     bool
	HasEnd     bool
	HasClose   bool
	// Sent, when HasSent, is the return of the write that carried the request (t_sent_ns).
	Sent    int64
	HasSent bool
	// Content is the arrival of each token event (kind content, reasoning or tool_call), in order.
	Content []int64
	// Reasoned is true when the record has a reasoning event; FirstContent, when
	// HasFirstContent, is the arrival of its first answer event (kind content or tool_call).
	Reasoned        bool
	FirstContent    int64
	HasFirstContent bool
	// FirstToolCall, when HasFirstToolCall, is the arrival of the record's first tool_call event.
	FirstToolCall    int64
	HasFirstToolCall bool
	// ToolCalls counts the record's tool_calls and ToolCallsValid those of them judged valid.
	ToolCalls, ToolCallsValid int64
	// HasReasoning is true when the usage record states reasoning_tokens; Reasoning is that count
	// (inside Completion).
	HasReasoning bool
	Reasoning    int64
	// HasUsage is true when the record has a usage record; Completion and Prompt are its
	// completion and prompt tokens (N and P).
	HasUsage   bool
	Completion int64
	Prompt     int64
	// HasCached is true when the record has cached_prompt_tokens; Cached is its value.
	HasCached bool
	Cached    int64
	// Session is the record's session id ("" outside a session row), Turn its turn and Round its
	// tool round (session.go).
	Session     string
	Turn, Round int64
	// HasClient is true when the record has client_tokens: ClientPrompt is its prompt count,
	// and HasClientCompletion with ClientCompletion its completion count when not null.
	HasClient    bool
	ClientPrompt int64
	// ClientPromptPartial: the prompt carried images the client could not count, so ClientPrompt
	// is its text's count and is not compared with the server's.
	ClientPromptPartial bool
	HasClientCompletion bool
	ClientCompletion    int64
}

// AddTokenEvent adds a record's event of kind at t to r's token events (content, reasoning and
// tool_call; other kinds are not token events), in arrival order: the one reading of an event
// kind that the runner and the verifier share.
func AddTokenEvent(r *Request, kind contract.EventKind, t int64) {
	switch kind {
	case contract.EventKindContent:
		if !r.HasFirstContent {
			r.FirstContent, r.HasFirstContent = t, true
		}
	case contract.EventKindToolCall:
		if !r.HasFirstContent {
			r.FirstContent, r.HasFirstContent = t, true
		}
		if !r.HasFirstToolCall {
			r.FirstToolCall, r.HasFirstToolCall = t, true
		}
	case contract.EventKindReasoning:
		r.Reasoned = true
	default:
		return
	}
	r.Content = append(r.Content, t)
}

// AddToolCalls adds a record's tool calls to r: n calls, valid of them judged valid (the runner
// and the verifier share it).
func AddToolCalls(r *Request, n, valid int64) { r.ToolCalls, r.ToolCallsValid = n, valid }

// answered reports whether a request's response was whole and judged: no error, or only a failed
// output assertion.
func (r *Request) answered() bool {
	return (!r.Failed || r.ErrorClass == string(contract.ErrorClassAssertion)) && r.HasSend && r.HasEnd && r.HasUsage
}

// OK reports whether the request counts as a success: no error, and the times and usage the
// formulas need (a success without them breaks the record contract; it is counted, but no
// number is derived from it).
func (r *Request) OK() bool { return !r.Failed && r.HasSend && r.HasEnd && r.HasUsage }

// SLO holds a serving case's declared gates (zero: not declared).
type SLO struct{ TTFTMs, ICLMs, E2EMs float64 }

// RowSpec is what a row's numbers depend on besides its requests.
type RowSpec struct {
	Concurrency int64
	// Loop is closed (concurrency slots) or open (a declared rate; concurrency caps the requests
	// in flight).
	Loop contract.RowLoop
	// OfferedRate is the declared open-loop rate in requests/s; nil in closed loop. It enters
	// only the reasons.
	OfferedRate *float64
	// SLO is the case's SLO; nil when it is not known (the SLO metrics are then not computed).
	SLO *SLO
	// Bound is the case's fidelity bound (the zero value: the defaults, BoundOf(nil)).
	Bound FidelityBound
	// Calibration is the row's send calibration (empty in evidence written before it existed:
	// no serialisation allowance).
	Calibration Calibration
	// Legacy judges by the rule of evidence written before the judgement was recorded
	// (legacy.go); the verifier sets it for such rows.
	Legacy bool
}

// Value is one computed metric.
type Value struct {
	Name        string
	Value       float64
	Unit        string
	Aggregation contract.Aggregation
	Direction   contract.Direction
	Formula     string
	Samples     int
	Diagnostic  bool
}

// Identity is the value's identity.
func (v Value) Identity() Identity {
	return Identity{Unit: v.Unit, Aggregation: v.Aggregation, Direction: v.Direction, Formula: v.Formula}
}

// Fidelity measures the client (docs/metrics.md, "Client fidelity").
type Fidelity struct {
	ScheduleLagP50Ms, ScheduleLagP99Ms, ScheduleLagMaxMs float64
	AchievedRate                                         float64
	Degraded                                             bool
	Reasons                                              []string
	// InFlightPeak and InFlightMean are the achieved concurrency; HasInFlight is false when no
	// request was in flight or the window is empty.
	InFlightPeak int64
	InFlightMean float64
	HasInFlight  bool
	// Judgement is how the row was judged (fidelity.go).
	Judgement Judgement
}

// RowResult is a row's numbers.
type RowResult struct {
	Requests, Successes, Failures int64
	// WindowSeconds is W (request_window.v1), 0 when undefined.
	WindowSeconds float64
	Values        []Value
	Fidelity      Fidelity
}

func ms(ns int64) float64 { return float64(ns) / 1e6 }

// Row computes a serving row from its measured requests, in index order (the caller drops
// warmups and sorts): the counts, the request window, every metric of docs/metrics.md and the
// client fidelity. It is a pure function of its arguments.
//
// Latency distributions (TTFT, TTFB, E2E, TPOT, decode rate, ICL) are over the successful
// requests only; failures count in the request total, in the SLO good fraction's denominator and
// in request_failures. A metric with no sample is not emitted (for example TPOT when every
// response had one token).
func Row(spec RowSpec, measured []Request) RowResult {
	out := RowResult{Requests: int64(len(measured))}
	for i := range measured {
		if measured[i].OK() {
			out.Successes++
		}
	}
	out.Failures = out.Requests - out.Successes
	b := &builder{}
	w, hasWindow := Window(measured)
	out.WindowSeconds = float64(w) / 1e9

	sm := SamplesOf(measured)
	b.dist(TTFT, sm.TTFTMs)
	b.dist(TTFTSched, sm.TTFTSchedMs)
	b.dist(TTFB, sm.TTFBMs)
	b.dist(E2E, sm.E2EMs)
	b.dist(E2ESched, sm.E2ESchedMs)
	b.dist(TPOT, sm.TPOTMs)
	b.dist(DecodeRate, sm.DecodeRate)
	b.dist(ICL, sm.ICLMs)
	b.dist(ICLMax, sm.ICLMaxMs)
	if sm.Reasoned {
		b.dist(TTFTContent, sm.TTFTContentMs)
	}
	b.dist(TTFTToolCall, sm.TTFTToolCallMs)
	if sm.ToolCallRequests > 0 {
		b.add(ToolCallValidity, "", float64(sm.ToolCallValidRequests)/float64(sm.ToolCallRequests), int(sm.ToolCallRequests))
	}
	if len(sm.ChunkingFactor) > 0 {
		b.add(ChunkingFactor, "", Summarize(sm.ChunkingFactor).Mean, len(sm.ChunkingFactor))
	}

	n := len(measured)
	b.add(RequestFailures, "", float64(out.Failures), n)
	for _, cc := range failureClasses(measured) {
		b.add(RequestFailuresByClass, cc.class, float64(cc.n), n)
	}
	b.add(OutputTokens, "", float64(sm.OutputTokens), int(out.Successes))
	if sm.ReasoningCounted {
		b.add(ReasoningTokens, "", float64(sm.ReasoningTokens), int(out.Successes))
		b.add(ContentTokens, "", float64(sm.OutputTokens-sm.ReasoningTokens), int(out.Successes))
	}
	b.add(PromptTokens, "", float64(sm.PromptTokens), int(out.Successes))
	if hasWindow {
		ws := float64(w) / 1e9
		b.add(RequestWindow, "", ws, n)
		b.add(RequestThroughput, "", float64(out.Successes)/ws, int(out.Successes))
		b.add(OutputThroughputWindow, "", float64(sm.OutputTokens)/ws, int(out.Successes))
		if sm.ReasoningCounted {
			b.add(ContentThroughputWindow, "", float64(sm.OutputTokens-sm.ReasoningTokens)/ws, int(out.Successes))
		}
		b.add(TotalThroughputWindow, "", float64(sm.OutputTokens+sm.PromptTokens)/ws, int(out.Successes))
		if spec.SLO != nil {
			good, goodTokens := Goodput(measured, *spec.SLO)
			b.add(SLOGoodput, "", float64(good)/ws, n)
			b.add(SLOGoodputTokens, "", float64(goodTokens)/ws, n)
		}
	}
	if n > 0 && spec.SLO != nil {
		good, _ := Goodput(measured, *spec.SLO)
		b.add(SLOGoodFraction, "", float64(good)/float64(n), n)
	}

	b.dist(ScheduleLag, sm.ScheduleLagMs)
	if spec.Loop == contract.RowLoopClosed {
		if spread, k, ok := DispatchSpreadNs(measured, spec.Concurrency); ok {
			b.add(DispatchSpread, "", ms(spread), k)
		}
	}
	achieved, nSent := Achieved(measured)
	if nSent >= 2 {
		b.add(AchievedRate, "", achieved, nSent)
	}
	if c := CacheOf(measured); c.Reporting > 0 && c.ReportedPrompt > 0 {
		b.add(PrefixCacheHitFraction, "", float64(c.CachedTokens)/float64(c.ReportedPrompt), int(c.Reporting))
	}
	b.sessions(measured)
	out.Fidelity = fidelity(spec, measured, sm.ScheduleLagMs, achieved)
	if peak, mean, ok := InFlight(measured); ok {
		out.Fidelity.InFlightPeak, out.Fidelity.InFlightMean, out.Fidelity.HasInFlight = peak, mean, true
	}
	out.Values = b.vs
	return out
}

// Samples are the per-request samples of a row's distributions (docs/metrics.md), in the order
// of the measured requests: latencies over the successes (ICL pooled over their gaps), schedule
// lag over every request sent; and the token sums over the successes.
type Samples struct {
	TTFTMs, TTFTSchedMs, TTFBMs, E2EMs, E2ESchedMs []float64
	TPOTMs, DecodeRate, ICLMs, ICLMaxMs            []float64
	ChunkingFactor, ScheduleLagMs                  []float64
	OutputTokens, PromptTokens                     int64
	// Reasoned says a success had a reasoning event; TTFTContentMs is then t_send to the first
	// content event of each success that had one.
	Reasoned      bool
	TTFTContentMs []float64
	// ReasoningCounted says every success's usage stated reasoning_tokens (and there was one);
	// ReasoningTokens is their sum.
	ReasoningCounted bool
	ReasoningTokens  int64
	// TTFTToolCallMs is t_send to the first tool_call event of each success that had one.
	TTFTToolCallMs []float64
	// ToolCallRequests counts the answered requests (no error, or only a failed output
	// assertion) that made a tool call; ToolCallValidRequests those whose every call is valid.
	ToolCallRequests, ToolCallValidRequests int64
}

// SamplesOf applies the per-request formulas to a row's measured requests.
func SamplesOf(measured []Request) Samples {
	var sm Samples
	// The inter-chunk gaps are most of a row's samples (one per streamed chunk): sized once, not
	// grown by append (which, over the verifier's calls for a 100,000-record receipt, allocated
	// 380 MB to hold about 25 MB).
	gaps := 0
	for i := range measured {
		if r := &measured[i]; r.OK() && len(r.Content) >= 2 {
			gaps += len(r.Content) - 1
		}
	}
	sm.ICLMs = make([]float64, 0, gaps)
	counted, uncounted := false, false
	for i := range measured {
		r := &measured[i]
		if r.HasSend {
			sm.ScheduleLagMs = append(sm.ScheduleLagMs, ms(r.Send-r.Sched))
		}
		if r.ToolCalls > 0 && r.answered() {
			sm.ToolCallRequests++
			if r.ToolCallsValid == r.ToolCalls {
				sm.ToolCallValidRequests++
			}
		}
		if !r.OK() {
			continue
		}
		sm.OutputTokens += r.Completion
		sm.PromptTokens += r.Prompt
		if r.HasReasoning {
			counted = true
			sm.ReasoningTokens += r.Reasoning
		} else {
			uncounted = true
		}
		if r.Reasoned {
			sm.Reasoned = true
		}
		if r.HasFirstContent {
			sm.TTFTContentMs = append(sm.TTFTContentMs, ms(r.FirstContent-r.Send))
		}
		if r.HasFirstToolCall {
			sm.TTFTToolCallMs = append(sm.TTFTToolCallMs, ms(r.FirstToolCall-r.Send))
		}
		sm.E2EMs = append(sm.E2EMs, r.e2eMs())
		sm.E2ESchedMs = append(sm.E2ESchedMs, ms(r.End-r.Sched))
		if r.HasHdr {
			sm.TTFBMs = append(sm.TTFBMs, ms(r.Hdr-r.Send))
		}
		if len(r.Content) == 0 {
			continue
		}
		cf := r.Content[0]
		sm.TTFTMs = append(sm.TTFTMs, r.ttftMs())
		sm.TTFTSchedMs = append(sm.TTFTSchedMs, ms(cf-r.Sched))
		if r.Completion >= 2 {
			d := r.End - cf
			sm.TPOTMs = append(sm.TPOTMs, ms(d)/float64(r.Completion-1))
			if d > 0 {
				sm.DecodeRate = append(sm.DecodeRate, float64(r.Completion-1)/(float64(d)/1e9))
			}
		}
		if len(r.Content) >= 2 {
			m := int64(0)
			for k := 1; k < len(r.Content); k++ {
				g := r.Content[k] - r.Content[k-1]
				sm.ICLMs = append(sm.ICLMs, ms(g))
				m = max(m, g)
			}
			sm.ICLMaxMs = append(sm.ICLMaxMs, ms(m))
		}
		sm.ChunkingFactor = append(sm.ChunkingFactor, float64(r.Completion)/float64(len(r.Content)))
	}
	sm.ReasoningCounted = counted && !uncounted
	return sm
}

type builder struct{ vs []Value }

// add emits the scalar of formula id (for a per-class formula, of class) with n samples.
func (b *builder) add(id, class string, v float64, n int) {
	f := mustLookup(id)
	b.vs = append(b.vs, Value{Name: f.Name + class, Value: v, Unit: f.Unit, Aggregation: f.Aggregation, Direction: f.Direction, Formula: f.ID, Samples: n, Diagnostic: f.Diagnostic})
}

// dist emits the summary of a distribution: p50, p90, p95, p99, p99.9 (with at least
// MinSamplesP999 samples), min, max and mean; nothing for an empty sample.
func (b *builder) dist(id string, xs []float64) {
	if len(xs) == 0 {
		return
	}
	f := mustLookup(id)
	s := Summarize(xs)
	for _, a := range DistributionAggregations {
		if v, ok := s.Of(a); ok {
			b.vs = append(b.vs, Value{Name: f.Name + "." + string(a), Value: v, Unit: f.Unit, Aggregation: a, Direction: f.Direction, Formula: f.ID, Samples: s.Count})
		}
	}
}

// Window is W = max t_end - min t_send over the measured requests in nanoseconds (a request
// without t_end does not extend it); ok is false when no request has both ends or W is not
// positive.
func Window(measured []Request) (int64, bool) {
	lo, hi, ok := WindowBounds(measured)
	return hi - lo, ok
}

// WindowBounds are min t_send and max t_end of the measured requests (see Window).
func WindowBounds(measured []Request) (lo, hi int64, ok bool) {
	hasLo, hasHi := false, false
	for i := range measured {
		r := &measured[i]
		if r.HasSend && (!hasLo || r.Send < lo) {
			lo, hasLo = r.Send, true
		}
		if r.HasEnd && (!hasHi || r.End > hi) {
			hi, hasHi = r.End, true
		}
	}
	if !hasLo || !hasHi || hi <= lo {
		return 0, 0, false
	}
	return lo, hi, true
}

// Goodput counts the successful requests that pass every declared gate, and their tokens. TTFT
// and E2E gates use the scheduled variants (TTFT_sched, E2E_sched: queueing in the client
// counts, coordinated omission is not hidden); the ICL gate bounds each request's largest
// inter-event gap and is vacuous with fewer than two content events; a TTFT gate fails a request
// without a content event. With no gate declared every success passes.
func Goodput(measured []Request, slo SLO) (int, int64) {
	good, tokens := 0, int64(0)
	for i := range measured {
		r := &measured[i]
		if !r.OK() {
			continue
		}
		if slo.TTFTMs > 0 && (len(r.Content) == 0 || ms(r.Content[0]-r.Sched) > slo.TTFTMs) {
			continue
		}
		if slo.E2EMs > 0 && ms(r.End-r.Sched) > slo.E2EMs {
			continue
		}
		if slo.ICLMs > 0 {
			pass := true
			for k := 1; k < len(r.Content); k++ {
				if ms(r.Content[k]-r.Content[k-1]) > slo.ICLMs {
					pass = false
					break
				}
			}
			if !pass {
				continue
			}
		}
		good++
		tokens += r.Completion
	}
	return good, tokens
}

// DispatchSpreadNs is max t_send - min t_send over the first min(concurrency, requests) measured
// requests (the ones a closed-loop row releases together through its barrier) and how many of
// them were sent; ok is false when none was.
func DispatchSpreadNs(measured []Request, concurrency int64) (spread int64, n int, ok bool) {
	k := min(int(concurrency), len(measured))
	var lo, hi int64
	for i := range measured[:k] {
		r := &measured[i]
		if !r.HasSend {
			continue
		}
		if n == 0 || r.Send < lo {
			lo = r.Send
		}
		if n == 0 || r.Send > hi {
			hi = r.Send
		}
		n++
	}
	return hi - lo, n, n >= 1
}

// Achieved is achieved_rate.v1: (n - 1) / (max t_send - min t_send) over the n measured requests
// sent (the send rate the client sustained; exact for evenly spaced sends), with n; the rate is
// 0 with fewer than two sends or no spread.
func Achieved(measured []Request) (float64, int) {
	return sentRate(measured, func(r *Request) int64 { return r.Send })
}

// Scheduled is the scheduled rate (n - 1) / (max t_sched - min t_sched) over the n measured
// requests sent (the same requests Achieved counts), with n; 0 with fewer than two or no spread.
func Scheduled(measured []Request) (float64, int) {
	return sentRate(measured, func(r *Request) int64 { return r.Sched })
}

func sentRate(measured []Request, at func(*Request) int64) (float64, int) {
	var lo, hi int64
	n := 0
	for i := range measured {
		r := &measured[i]
		if !r.HasSend {
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

// fidelity measures the client: the lag summary over every sent request and the judgement of
// fidelity.go.
func fidelity(spec RowSpec, measured []Request, lags []float64, achieved float64) Fidelity {
	if spec.Legacy {
		return legacyFidelity(spec, measured, lags, achieved)
	}
	s := Summarize(lags)
	f := Fidelity{
		ScheduleLagP50Ms: max(0, s.P50), ScheduleLagP99Ms: max(0, s.P99), ScheduleLagMaxMs: max(0, s.Max),
		AchievedRate: achieved, Reasons: []string{},
	}
	jd, degraded, reasons := judge(spec, measured, achieved)
	f.Judgement, f.Degraded = jd, degraded
	if degraded {
		f.Reasons = append(f.Reasons, reasons...)
	}
	return f
}

type classCount struct {
	class string
	n     int
}

// failureClasses counts the failed requests per error class, by class name.
func failureClasses(measured []Request) []classCount {
	counts := map[string]int{}
	for i := range measured {
		if measured[i].Failed {
			counts[measured[i].ErrorClass]++
		}
	}
	out := make([]classCount, 0, len(counts))
	for c, n := range counts {
		out = append(out, classCount{c, n})
	}
	slices.SortFunc(out, func(a, b classCount) int { return cmp.Compare(a.class, b.class) })
	return out
}

// InFlight measures the achieved concurrency of a row's measured requests: the most in flight at
// once (peak) and the time average of that count over the request window [min t_send, max t_end]
// (mean). A request that was sent is in flight from t_send to t_close (lacking t_close, to t_end;
// lacking both, it is never counted); a request closing at the instant another is sent is not
// concurrent with it. ok is false when no request was in flight or the window is empty.
func InFlight(measured []Request) (peak int64, mean float64, ok bool) {
	lo, hi, ok := WindowBounds(measured)
	if !ok {
		return 0, 0, false
	}
	type edge struct{ t, delta int64 }
	var edges []edge
	for i := range measured {
		end, ok := measured[i].inFlightEnd()
		if !ok {
			continue
		}
		edges = append(edges, edge{measured[i].Send, 1}, edge{end, -1})
	}
	if len(edges) == 0 {
		return 0, 0, false
	}
	// Ends before starts at equal times.
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.t, b.t), cmp.Compare(a.delta, b.delta)) })
	var n int64
	var area float64
	prev := edges[0].t
	for _, e := range edges {
		// Integrate the count over [prev, e.t] clipped to the window.
		if a, b := max(prev, lo), min(e.t, hi); b > a {
			area += float64(n) * float64(b-a)
		}
		prev = e.t
		n += e.delta
		peak = max(peak, n)
	}
	return peak, area / float64(hi-lo), true
}

// e2eMs is a success's E2E, t_end − t_send, in ms: the one definition SamplesOf, the per-second
// series and the per-turn figures use.
func (r *Request) e2eMs() float64 { return ms(r.End - r.Send) }

// ttftMs is a success's TTFT, c_f − t_send (its first content event), in ms; only for a request
// with a content event.
func (r *Request) ttftMs() float64 { return ms(r.Content[0] - r.Send) }

// inFlightEnd is when a sent request stopped being in flight: t_close, else t_end; ok is false
// for a request never sent or without a later end (it was never in flight).
func (r *Request) inFlightEnd() (int64, bool) {
	if !r.HasSend {
		return 0, false
	}
	end, has := r.Close, r.HasClose
	if !has {
		end, has = r.End, r.HasEnd
	}
	return end, has && end > r.Send
}
