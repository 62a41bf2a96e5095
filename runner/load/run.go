package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/schemas/promtext"
)

// Plan is one serving case, resolved.
type Plan struct {
	CaseID string
	// Case is the serving case (Kind "serving").
	Case contract.Case
	// BaseURL is the server's loopback base URL, e.g. http://127.0.0.1:18080.
	BaseURL string
	ModelID string
	// Prompts is the resolved corpus in declared order (see Resolve).
	Prompts []Prompt
	// Trace, when set in place of Prompts (then nil), is a trace corpus planned entry by entry
	// (ResolveTrace; ResolveTokenTrace for length_unit tokens): each measured request's prompt
	// and body are built just before it is sent (lookahead), so a row's memory does not grow with
	// the trace. The requests, bodies and records are those Prompts = Resolve's (TraceTokenCorpus')
	// prompts gives.
	Trace *TracePlan
	// Seed is the workload's determinism seed; warmup prompts and Poisson or gamma arrival gaps derive
	// from it.
	Seed int64
	// Epoch is the monotonic origin of every *_ns offset (shared with the lifecycle record); it
	// must carry a monotonic reading and not lie in the future.
	Epoch time.Time
	// TokenEnv names the variable of this process's environment that holds a bearer token ("" =
	// none; a launch recipe's auth.token_env). Run refuses to start when it is unset, empty or not
	// visible ASCII, naming the variable; the token is sent with every request and /metrics scrape
	// as "Authorization: Bearer <token>" and never recorded (a server answer that quotes it shows
	// [REDACTED]).
	TokenEnv string
	// CacheResetPath is the launch recipe's cache_reset path ("" = none): POSTed before every
	// cold row (prefixreset.go).
	CacheResetPath string
	// ScrapeMetrics scrapes BaseURL/metrics before and after each row's measured requests
	// (diagnostic counter deltas).
	ScrapeMetrics bool
	// ScrubPage, when set, replaces secret values in a scraped page (the campaign's redactor)
	// before anything is computed from it; the bearer token is replaced in any case.
	ScrubPage func([]byte) []byte
	// Tools are the case's resolved tools (ResolveTools) when it declares tools; Run refuses such
	// a case without them.
	Tools *Tools
	// Tokens counts every prompt and completion for the client-side token ledger when the case
	// binds a tokenizer (Case.Tokenizer; docs/tokens.md); Run refuses such a case without one.
	Tokens TokenCounter
	// Progress, when set, is told as the run goes: a row starts, a measured request ends, a row
	// ends. It is called from the request goroutines, so it must be safe for concurrent use and
	// return at once; it reports, it never changes the run.
	Progress func(Progress)
}

// Progress is a snapshot of a running row, passed to Plan.Progress.
type Progress struct {
	// Kind is ProgressRowStart (before the row's warmups), ProgressRequest (a measured request
	// ended) or ProgressRowDone (every request of the row ended or was cut).
	Kind                    string
	Concurrency, Repetition int64
	// Done counts the row's measured requests that ended so far, Failed those of them with an
	// error class, Total the row's measured requests: in a session row with tool results, its
	// user turns and the tool rounds sent so far (Total grows by one as each round is sent).
	Done, Failed, Total int64
	// Rounds is the most tool rounds one user turn may add (0 but in a session row with tool
	// results).
	Rounds int64
}

// Progress kinds.
const (
	ProgressRowStart = "row_start"
	ProgressRequest  = "request"
	ProgressRowDone  = "row_done"
)

// Result is the outcome of Run.
type Result struct{ Rows []RowResult }

// RowResult is one row.
type RowResult struct {
	// Row is filled except Records (the caller binds the records file it writes).
	Row contract.Row
	// Records are the row's request records, warmups (warmup: true) first, in index order.
	Records []contract.RequestRecordDoc
	// Telemetry is nil unless Plan.ScrapeMetrics.
	Telemetry *Telemetry
}

// Telemetry is what the /metrics scrapes around a row's measured requests showed.
type Telemetry struct {
	// TBeforeNs and TAfterNs are when the two scrapes began (offsets from the epoch).
	TBeforeNs int64 `json:"t_before_ns"`
	TAfterNs  int64 `json:"t_after_ns"`
	// Series are the counter deltas, per series.
	Series []promtext.SeriesDelta `json:"series"`
	// Warnings say what could not be scraped or compared; a telemetry problem never fails a row.
	Warnings []string `json:"warnings"`
	// Before and After are the two pages as scrubbed (Plan.ScrubPage), which the row's server
	// metrics were computed from: the evidence to keep beside the row. Both are nil unless both
	// scrapes succeeded and parsed.
	Before, After []byte `json:"-"`
}

// ErrPlan marks a plan Run cannot execute.
var ErrPlan = errors.New("invalid load plan")

// request is one planned request of a row.
type request struct {
	index  int64
	warmup bool
	prompt Prompt
	// corpusIndex and cycle place a measured request in the cycled corpus (-1 for a warmup).
	corpusIndex, cycle int64
	// priming marks a request of a warm row's priming pass (a warmup).
	priming bool
	seed    *int64
	body    []byte
	digest  string
	// session places a session row's turn (session.go); nil otherwise.
	session *contract.SessionTurn
	// promptTokens is the client's count of the prompt as sent (when the case binds a tokenizer).
	promptTokens int64
}

// Run executes every row of the case in declared order (for each concurrency value, each
// repetition), each preceded by its warmup requests, and returns the rows.
//
// A closed-loop row (no Case.Rate) runs Concurrency workers released together through a barrier
// once as many keep-alive connections are open; each worker takes the next request in index order
// as soon as its previous one ends, and that moment is the request's t_sched. An open-loop row
// (Case.Rate) schedules arrival i at a fixed offset from the row's start, i / rate (constant) or
// the sum of i seeded exponential (poisson) or gamma (gamma, shape burstiness) gaps; t_sched is that scheduled time, and the
// concurrency value caps the requests in flight, so an arrival that finds every slot busy waits,
// and that wait shows as schedule lag and in TTFT_sched and E2E_sched (coordinated omission is
// not hidden).
//
// Cancelling ctx stops traffic promptly: requests in flight are cut and recorded with class
// "cancelled", requests not yet started are not recorded, and Run returns the rows so far
// (the last one partial) with ctx's error. Run never returns a guessed number: a failed request
// carries an error class and is excluded from latency metrics. The error is nil otherwise, or
// wraps ErrPlan for a plan it cannot execute.
func Run(ctx context.Context, plan Plan, opts ...Option) (*Result, error) {
	distort, err := distortion(os.Getenv(DistortionEnv))
	if err != nil {
		return nil, err
	}
	o := buildOptions(append(opts, distort...))
	if err := plan.check(); err != nil {
		return nil, err
	}
	token := o.token
	if plan.TokenEnv != "" {
		v, ok := os.LookupEnv(plan.TokenEnv)
		switch {
		case !ok:
			return nil, fmt.Errorf("%w: token environment variable %s is not set; export the server's API key in it", ErrPlan, plan.TokenEnv)
		case v == "":
			return nil, fmt.Errorf("%w: token environment variable %s is empty; export the server's API key in it", ErrPlan, plan.TokenEnv)
		}
		token = v
	}
	asserts, err := compileAssertions(plan.Case.OutputAssertions)
	if err != nil {
		return nil, err
	}
	promptSet, err := plan.promptSet()
	if err != nil {
		return nil, fmt.Errorf("%w: prompt set: %v", ErrPlan, err)
	}
	maxC := int(slices.Max(plan.Case.Concurrency))
	copts := []Option{WithMaxIdleConns(maxC), WithLogger(o.log), WithMaxLineBytes(o.maxLine), WithBearerToken(token), WithMaxConns(o.maxConns)}
	if o.reactors > 0 {
		copts = append(copts, WithReactors(o.reactors))
	} else {
		copts = append(copts, WithReactors(defaultReactors(maxC)))
	}
	client, err := NewClient(plan.BaseURL, copts...)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlan, err)
	}
	defer client.Close()
	r := &runner{plan: plan, client: client, asserts: asserts, promptSet: promptSet, log: o}
	res := &Result{}
	for _, c := range plan.Case.Concurrency {
		for rep := int64(0); rep < plan.Case.Repetitions; rep++ {
			row, err := r.row(ctx, c, rep)
			if err != nil {
				return res, err
			}
			res.Rows = append(res.Rows, row)
			if err := ctx.Err(); err != nil {
				return res, err
			}
		}
	}
	return res, nil
}

func (p *Plan) check() error {
	c := &p.Case
	switch {
	case c.Kind != contract.CaseKindServing:
		return fmt.Errorf("%w: case %s is %q, not serving", ErrPlan, p.CaseID, c.Kind)
	case len(c.Concurrency) == 0:
		return fmt.Errorf("%w: case %s declares no concurrency", ErrPlan, p.CaseID)
	case c.Repetitions < 1:
		return fmt.Errorf("%w: case %s: repetitions %d", ErrPlan, p.CaseID, c.Repetitions)
	case c.MaxTokens < 1:
		return fmt.Errorf("%w: case %s: max_tokens %d", ErrPlan, p.CaseID, c.MaxTokens)
	case p.corpusLen() == 0:
		return fmt.Errorf("%w: case %s: no prompts", ErrPlan, p.CaseID)
	case p.Trace != nil && (p.Prompts != nil || !p.trace() || !LazyTrace(*c.Corpus) || (p.Trace.tok != nil) != (c.Corpus.LengthUnit == contract.TraceCorpusLengthUnitTokens)):
		return fmt.Errorf("%w: case %s: a trace plan goes with a trace corpus (length_unit %s or %s) and without prompts", ErrPlan, p.CaseID, contract.TraceCorpusLengthUnitWordsPerToken, contract.TraceCorpusLengthUnitTokens)
	case p.ModelID == "":
		return fmt.Errorf("%w: case %s: no model id", ErrPlan, p.CaseID)
	case !c.API.Valid():
		return fmt.Errorf("%w: case %s: api %q", ErrPlan, p.CaseID, c.API)
	case c.PromptOrder != "" && !c.PromptOrder.Valid():
		return fmt.Errorf("%w: case %s: prompt_order %q", ErrPlan, p.CaseID, c.PromptOrder)
	case p.Epoch.IsZero() || time.Since(p.Epoch) < 0:
		return fmt.Errorf("%w: epoch %v is unset or in the future", ErrPlan, p.Epoch)
	case p.Epoch == p.Epoch.Round(0):
		return fmt.Errorf("%w: epoch %v carries no monotonic clock reading (take it from time.Now)", ErrPlan, p.Epoch)
	case c.WarmupRequests < 0:
		return fmt.Errorf("%w: case %s: warmup_requests %d", ErrPlan, p.CaseID, c.WarmupRequests)
	case c.RequestTimeoutSeconds < 0:
		return fmt.Errorf("%w: case %s: request_timeout_seconds %g", ErrPlan, p.CaseID, c.RequestTimeoutSeconds)
	case c.Requests != nil && *c.Requests < 1:
		return fmt.Errorf("%w: case %s: requests %d", ErrPlan, p.CaseID, *c.Requests)
	case c.Tokenizer != nil && p.Tokens == nil:
		return fmt.Errorf("%w: case %s binds a tokenizer, but the plan has no token counter", ErrPlan, p.CaseID)
	}
	if err := p.checkTools(); err != nil {
		return err
	}
	if err := p.checkSchedule(); err != nil {
		return err
	}
	if err := p.checkTrace(); err != nil {
		return err
	}
	if n, maxC := p.measured(), slices.Max(c.Concurrency); n < maxC && c.Schedule == nil && !p.trace() {
		return fmt.Errorf("%w: case %s: %d requests per row cannot reach concurrency %d; set requests to at least %d", ErrPlan, p.CaseID, n, maxC, maxC)
	}
	for _, n := range c.Concurrency {
		if n < 1 || n > MaxConcurrency {
			return fmt.Errorf("%w: case %s: concurrency %d: want 1 to %d", ErrPlan, p.CaseID, n, MaxConcurrency)
		}
	}
	if r := c.Rate; r != nil {
		if !r.Mode.Valid() || !(r.RequestsPerSecond > 0) || math.IsInf(r.RequestsPerSecond, 0) {
			return fmt.Errorf("%w: case %s: rate %s at %g/s", ErrPlan, p.CaseID, r.Mode, r.RequestsPerSecond)
		}
		if badBurstiness(r.Mode == contract.RateModeGamma, r.Burstiness) {
			return fmt.Errorf("%w: case %s: rate mode %s with burstiness %v: burstiness (0 to 1000) goes with mode gamma and only there", ErrPlan, p.CaseID, r.Mode, fmtPtr(r.Burstiness))
		}
	}
	if d := c.Duration; d != nil {
		switch {
		case c.Requests == nil:
			return fmt.Errorf("%w: case %s declares a duration without requests: set requests, the most measured requests a row may send", ErrPlan, p.CaseID)
		case !(d.Seconds > 0) || d.GraceSeconds < 0 || d.MinRequests < 1 || d.MinRequests > *c.Requests:
			return fmt.Errorf("%w: case %s: duration %g s, grace %g s, min_requests %d: want a positive duration, a grace of 0 or more and 1 to requests (%d) minimum requests", ErrPlan, p.CaseID, d.Seconds, d.GraceSeconds, d.MinRequests, *c.Requests)
		}
	}
	if st := c.Stop; st != nil && st.ErrorFraction == nil && st.ConsecutiveFailures == nil && st.Saturation == nil {
		return fmt.Errorf("%w: case %s declares stop without a rule: declare error_fraction, consecutive_failures or saturation", ErrPlan, p.CaseID)
	}
	for i, pr := range p.Prompts {
		if err := checkPrompt(pr); err != nil {
			return fmt.Errorf("%w: prompt %d: %v", ErrPlan, i, err)
		}
	}
	if p.isSessions() {
		return p.checkSessions()
	}
	return nil
}

// measured is the number of measured requests of each row: Case.Requests, or the corpus size.
func (p *Plan) measured() int64 {
	if p.isSessions() {
		return p.sessionTurns()
	}
	if p.Case.Schedule != nil {
		return p.scheduledCap()
	}
	if p.Case.Requests != nil {
		return *p.Case.Requests
	}
	return p.corpusLen()
}

// corpusLen is the number of corpus prompts (N).
func (p *Plan) corpusLen() int64 {
	if p.Trace != nil {
		return int64(p.Trace.Len())
	}
	return int64(len(p.Prompts))
}

// prompt is corpus prompt i (a TracePlan's synthesised now).
func (p *Plan) prompt(i int64) Prompt {
	if p.Trace != nil {
		return p.Trace.Prompt(int(i))
	}
	return p.Prompts[i]
}

// promptAtNs and promptMaxTokens are corpus prompt i's AtNs and MaxTokens, without its text.
func (p *Plan) promptAtNs(i int64) int64 {
	if p.Trace != nil {
		return p.Trace.atNs(int(i))
	}
	return p.Prompts[i].AtNs
}

func (p *Plan) promptMaxTokens(i int64) int64 {
	if p.Trace != nil {
		return p.Trace.maxTokens(int(i))
	}
	return p.Prompts[i].MaxTokens
}

// promptSet is the prompt set hash every row records (PromptSetSHA256 of the corpus in
// declared order; a TracePlan's computed one prompt at a time).
func (p *Plan) promptSet() (string, error) {
	if p.Trace != nil {
		return p.Trace.PromptSetSHA256()
	}
	var sp []contract.Prompt
	if p.isSessions() {
		sp = sessionPromptSet(p.Prompts)
	} else {
		sp = make([]contract.Prompt, len(p.Prompts))
		for i, pr := range p.Prompts {
			sp[i] = contract.Prompt{ID: pr.ID, Text: pr.Text, System: pr.System}
		}
	}
	return PromptSetSHA256(sp)
}

type runner struct {
	plan      Plan
	client    *Client
	asserts   []assertion
	promptSet string
	log       options
	// done and failed count the current row's measured requests that ended (for Plan.Progress).
	done, failed atomic.Int64
	// total is the current row's measured requests (a Poisson schedule's vary by row).
	total atomic.Int64
}

// progress tells Plan.Progress, if set.
func (r *runner) progress(kind string, c, rep int64) {
	if r.plan.Progress != nil {
		r.plan.Progress(Progress{Kind: kind, Concurrency: c, Repetition: rep, Done: r.done.Load(), Failed: r.failed.Load(), Total: r.total.Load(), Rounds: r.plan.turnStride() - 1})
	}
}

// rowPlan is what builds a row's requests (rowPlan.build): warmups first (indexes 0..W-1), then
// a warm row's priming pass (W..W+P-1), then the measured requests (W+P..W+P+M-1, M =
// Plan.measured()): measured request k asks corpus prompt metric.CorpusOrder's k-th (k mod N in
// the declared order, or cycle k div N's seeded permutation), so the corpus cycles.
type rowPlan struct {
	warm []Prompt
	// order are the measured requests' corpus indexes; priming is the priming pass's length.
	order   []int64
	priming int64
	// nonce is a cold row's per-request nonce (nil otherwise).
	nonce []string
}

// total is the row's planned requests (W + P + M).
func (rp *rowPlan) total() int64 { return int64(len(rp.warm)) + rp.priming + int64(len(rp.order)) }

// measuredFrom is the index of the first measured request (W + P).
func (rp *rowPlan) measuredFrom() int64 { return int64(len(rp.warm)) + rp.priming }

// planRow plans a row (see rowPlan). offs are an open schedule's arrivals (row computes them
// once): M is their count.
func (r *runner) planRow(c, rep int64, offs []time.Duration) *rowPlan {
	cs := &r.plan.Case
	n := r.plan.corpusLen()
	var warm []Prompt
	if tp := r.plan.Trace; tp != nil {
		warm = warmupShaped(tp.Len(), func(i int) (string, int) { return "", tp.words(i) }, int(cs.WarmupRequests), r.plan.Seed, c, rep)
	} else {
		warm = warmupPrompts(r.plan.Prompts, int(cs.WarmupRequests), r.plan.Seed, c, rep)
	}
	m := r.plan.measured()
	if r.plan.isSessions() {
		m = 0 // a session row's measured requests are built turn by turn (session.go)
	} else if cs.Schedule != nil && !metric.Closed(cs.Schedule) {
		m = int64(len(offs))
	}
	rp := &rowPlan{warm: warm, order: metric.CorpusOrder(cs.PromptOrder, r.plan.Seed, n, m)}
	if regime(cs) == contract.CacheRegimeWarm {
		rp.priming = min(n, m)
	}
	if regime(cs) == contract.CacheRegimeCold {
		rp.nonce = nonces(r.plan.Seed, c, rep, int(rp.total()))
	}
	return rp
}

// build builds planned request idx: its prompt (synthesised now for a TracePlan), body, body
// digest and, when the case binds a tokenizer, the client's count of its prompt.
func (r *runner) build(rp *rowPlan, idx int64) (request, error) {
	cs := &r.plan.Case
	var q request
	w := int64(len(rp.warm))
	switch {
	case idx < w:
		q = request{prompt: rp.warm[idx], warmup: true, corpusIndex: -1, cycle: -1}
	case idx < w+rp.priming:
		// The priming pass asks each prompt the measured requests ask, once, in their order.
		q = request{prompt: r.plan.prompt(rp.order[idx-w]), warmup: true, priming: true, corpusIndex: -1, cycle: -1}
	default:
		k := idx - w - rp.priming
		ci := rp.order[k]
		q = request{prompt: r.plan.prompt(ci), corpusIndex: ci, cycle: k / r.plan.corpusLen()}
	}
	q.index, q.seed = idx, requestSeed(cs.Sampling, idx)
	sent := q.prompt
	if rp.nonce != nil {
		sent = withNonce(q.prompt, rp.nonce[idx])
	}
	body, err := BodyWithTools(cs, r.plan.ModelID, sent, q.seed, r.plan.Tools)
	if err != nil {
		return request{}, fmt.Errorf("%w: body of request %d: %v", ErrPlan, idx, err)
	}
	if r.plan.Trace != nil && cap(body) > len(body)+len(body)/8 {
		body = slices.Clone(body) // the encoder's buffer grew past it: hold only the body
	}
	q.body, q.digest = body, evidence.DigestOf(body)
	if tk := cs.Tokenizer; tk != nil {
		if q.promptTokens, err = promptTokens(r.plan.Tokens, tk.Template, body); err != nil {
			return request{}, fmt.Errorf("%w: count the prompt tokens of request %d: %v", ErrPlan, idx, err)
		}
	}
	if r.plan.Trace != nil {
		q.prompt.Text = "" // the body holds it; nothing reads it past here
	}
	return q, nil
}

// requests builds a row's requests [from, to) (rowPlan.build).
func (r *runner) requests(rp *rowPlan, from, to int64) ([]request, error) {
	out := make([]request, 0, to-from)
	for idx := from; idx < to; idx++ {
		q, err := r.build(rp, idx)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// row runs one row; the error is non-nil only when the plan cannot be executed.
func (r *runner) row(ctx context.Context, c, rep int64) (RowResult, error) {
	var offs []time.Duration // an open schedule's arrivals and the stage of each
	var stages []int
	if sc := r.plan.Case.Schedule; sc != nil && !metric.Closed(sc) && !r.plan.isSessions() {
		var err error
		if offs, stages, err = r.plan.schedule(c, rep); err != nil {
			return RowResult{}, err
		}
	}
	rp := r.planRow(c, rep, offs)
	nWarm, nPrime := len(rp.warm), int(rp.priming)
	// A TracePlan's measured requests are built just before they are sent (lookahead); every
	// other row's are built now.
	built := rp.total()
	if r.plan.Trace != nil {
		built = int64(len(rp.warm)) // its priming pass is built a window at a time too
	}
	reqs, err := r.requests(rp, 0, built)
	if err != nil {
		return RowResult{}, err
	}
	recs := make([]*contract.RequestRecordDoc, rp.total())
	total := int64(len(rp.order))
	if r.plan.isSessions() {
		total = r.plan.measured() // a session row builds its measured requests turn by turn
	}
	r.total.Store(total)
	r.done.Store(0)
	r.failed.Store(0)
	r.progress(ProgressRowStart, c, rep)
	defer r.progress(ProgressRowDone, c, rep)
	ctl := newRowCtl(ctx, &r.plan.Case)
	var reset *contract.CacheResetOutcome
	if r.plan.CacheResetPath != "" && regime(&r.plan.Case) == contract.CacheRegimeCold && ctx.Err() == nil {
		reset = r.resetCache(ctx)
	}
	if nWarm > 0 {
		r.closedLoop(ctx, reqs[:nWarm], recs[:nWarm], int(min(c, int64(nWarm))), c, rep, nil, nil)
	}
	if nPrime > 0 && ctx.Err() == nil {
		if r.plan.Trace != nil {
			// Built and run aheadRequests at a time, so that priming every entry holds one window.
			for from := nWarm; from < nWarm+nPrime && ctx.Err() == nil; from += aheadRequests {
				to := min(from+aheadRequests, nWarm+nPrime)
				chunk, err := r.requests(rp, int64(from), int64(to))
				if err != nil {
					return RowResult{}, err
				}
				r.closedLoop(ctx, chunk, recs[from:to], int(min(c, int64(to-from))), c, rep, nil, nil)
			}
		} else {
			r.closedLoop(ctx, reqs[nWarm:nWarm+nPrime], recs[nWarm:nWarm+nPrime], int(min(c, int64(nPrime))), c, rep, nil, nil)
		}
	}
	nWarm += nPrime
	var tel *Telemetry
	var before []byte
	var sched *rowSchedule
	var cal *contract.SendCalibration
	if ctx.Err() == nil {
		var la *lookahead
		if r.plan.Trace != nil {
			la = startLookahead(ctl.send, len(rp.order), func(k int) (request, error) { return r.build(rp, rp.measuredFrom()+int64(k)) })
			defer la.close()
		}
		if err := r.client.Prewarm(ctx, int(c)); err != nil {
			r.log.log.Debug("prewarm", "err", err)
		}
		if la != nil {
			// The calibration sends the first measured requests' bodies to its sink, once the
			// builder's window is full (so that it does not time the builder's work).
			first, err := r.requests(rp, rp.measuredFrom(), min(rp.total(), rp.measuredFrom()+metric.CalibrationSends))
			if err != nil {
				return RowResult{}, err
			}
			la.wait()
			cal = r.calibrate(ctx, first)
		} else {
			cal = r.calibrate(ctx, reqs[nWarm:])
		}
		if r.plan.ScrapeMetrics {
			tel = &Telemetry{Series: []promtext.SeriesDelta{}, Warnings: []string{}}
			tel.TBeforeNs = int64(time.Since(r.plan.Epoch))
			before = r.scrape(ctx, tel, "before")
		}
		if r.plan.isSessions() {
			srecs, err := r.sessionRecords(ctl.cut, c, rep, int64(len(reqs)))
			if err != nil {
				return RowResult{}, err
			}
			recs = append(recs, srecs...)
		} else if r.plan.trace() {
			offs := make([]time.Duration, len(rp.order))
			for k, ci := range rp.order {
				offs[k] = time.Duration(r.plan.promptAtNs(ci))
			}
			sched = &rowSchedule{offsets: offs}
			if la != nil {
				if sched.origin, err = r.openLoop(ctx, la.next, recs[nWarm:], c, rep, ctl, offs, newDepGate(r.plan.Trace, rp.order, r.plan.Epoch)); err != nil {
					return RowResult{}, err
				}
				r.log.log.Debug("trace lookahead", "concurrency", c, "repetition", rep, "requests", len(offs), "waited_for_builder", la.waits.Load())
			} else {
				sched.origin, _ = r.openLoop(ctx, indexed(reqs[nWarm:]), recs[nWarm:], c, rep, ctl, offs, nil)
			}
		} else if sc := r.plan.Case.Schedule; metric.Closed(sc) {
			sched = &rowSchedule{origin: time.Now()}
			r.closedLoop(ctx, reqs[nWarm:], recs[nWarm:], int(c), c, rep, ctl, closedGate(sc))
		} else if sc != nil {
			sched = &rowSchedule{offsets: offs, stages: stages}
			sched.origin, _ = r.openLoop(ctx, indexed(reqs[nWarm:]), recs[nWarm:], c, rep, ctl, offs, nil)
		} else if r.plan.Case.Rate != nil {
			r.openLoop(ctx, indexed(reqs[nWarm:]), recs[nWarm:], c, rep, ctl, arrivals(r.plan.Case.Rate, len(reqs)-nWarm, r.plan.Seed, c, rep), nil)
		} else {
			r.closedLoop(ctx, reqs[nWarm:], recs[nWarm:], int(c), c, rep, ctl, nil)
		}
	}
	var rowMetrics []contract.Metric
	if tel != nil && ctx.Err() == nil {
		tel.TAfterNs = int64(time.Since(r.plan.Epoch))
		rowMetrics = tel.deltas(before, r.scrape(ctx, tel, "after"))
	}
	out := RowResult{Telemetry: tel}
	for _, rec := range recs {
		if rec != nil {
			out.Records = append(out.Records, *rec)
		}
	}
	spec := RowSpec{Concurrency: c, Repetition: rep, Loop: contract.RowLoopClosed, SLO: r.slo(), PromptSetSHA256: r.promptSet, CacheRegime: r.plan.Case.CacheRegime, Tokenizer: r.plan.Case.Tokenizer,
		Fidelity: r.plan.Case.Fidelity, Calibration: cal}
	if rt := r.plan.Case.Rate; rt != nil {
		rate := rt.RequestsPerSecond
		spec.Loop, spec.OfferedRate = contract.RowLoopOpen, &rate
	}
	if sc := r.plan.Case.Schedule; sc != nil && !metric.Closed(sc) {
		rate := metric.ExpectedArrivals(sc) / metric.Horizon(sc)
		spec.Loop, spec.OfferedRate = contract.RowLoopOpen, &rate
	}
	if r.plan.trace() {
		spec.Loop, spec.OfferedRate = contract.RowLoopOpen, r.plan.traceRate()
	}
	out.Row = Row(spec, out.Records)
	out.Row.Metrics = append(out.Row.Metrics, rowMetrics...)
	if out.Row.Cache != nil {
		out.Row.Cache.Reset = reset
	}
	out.Row.Ended = ctl.finish(ctx, out.Records)
	if sched != nil && r.plan.trace() {
		sched.reportTrace(&out.Row, r.plan.Case.Corpus, out.Records, r.plan.Epoch)
	} else if sched != nil {
		sched.report(&out.Row, r.plan.Case.Schedule, spec, out.Records, r.plan.Epoch)
	}
	return out, nil
}

func (r *runner) slo() contract.SLO {
	if r.plan.Case.SLO == nil {
		return contract.SLO{}
	}
	return *r.plan.Case.SLO
}

// closedLoop runs reqs with n workers released together; a worker's t_sched is the moment it
// takes its next request.
//
// gate, when set (a closed schedule), is asked before worker w takes each request: it returns the
// moment the worker may (its t_sched), or false to end the worker.
func (r *runner) closedLoop(ctx context.Context, reqs []request, recs []*contract.RequestRecordDoc, n int, c, rep int64, ctl *rowCtl, gate func(context.Context, int) (time.Time, bool)) {
	if ctl != nil {
		ctx = ctl.cut
	}
	var next atomic.Int64
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	for w := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for {
				if gate != nil && next.Load() >= int64(len(reqs)) {
					return // no request left to wait for
				}
				now := time.Now()
				if gate != nil {
					var ok bool
					if now, ok = gate(ctx, w); !ok {
						return
					}
				}
				i := next.Add(1) - 1
				if i >= int64(len(reqs)) || ctx.Err() != nil {
					return
				}
				if ctl != nil && !ctl.take(now) {
					return
				}
				recs[i] = r.do(ctx, &reqs[i], now, c, rep, ctl)
			}
		}()
	}
	ready.Wait()
	close(start)
	done.Wait()
}

// arrivals returns the scheduled offsets of n open-loop arrivals: metric.Arrivals (constant,
// Poisson or gamma, from the workload seed), the schedule the verifier recomputes.
func arrivals(rate *contract.Rate, n int, seed int64, c, rep int64) []time.Duration {
	ns := metric.Arrivals(rate, n, seed, c, rep)
	out := make([]time.Duration, len(ns))
	for i, v := range ns {
		out[i] = time.Duration(v)
	}
	return out
}

// openLoop dispatches the row's measured requests at their scheduled times, at most c in flight:
// request i is next(i), taken just before its deadline (a lookahead's build, or a planned one).
// The dispatcher runs on a goroutine of its own, locked to a thread that sleeps until each
// deadline (see pacer) and then writes the request itself; another goroutine waits for each
// response.
//
// offsets are the arrivals' scheduled offsets from the schedule's start, which openLoop returns;
// the error is next's, which ends the dispatch.
func (r *runner) openLoop(ctx context.Context, next func(int) (*request, error), recs []*contract.RequestRecordDoc, c, rep int64, ctl *rowCtl, offsets []time.Duration, deps *depGate) (origin time.Time, err error) {
	send := ctl.send
	ctx = ctl.cut
	slots := make(chan struct{}, c)
	var wg sync.WaitGroup
	// waitFor starts the goroutine that waits for request i's response and frees its slot.
	waitFor := func(w sentCall) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[w.i] = r.record(w.q, w.call.Wait(), w.at, c, rep, ctl)
			deps.finish(w.i, recs[w.i])
			<-slots
		}()
	}
	// Inside a burst the dispatcher's own sends start no goroutine: starting one wakes a thread,
	// which on a host of few cores takes the dispatcher's core between two sends of the burst
	// (measured: the involuntary switches between sends). Their waiters start once the burst is
	// sent (the next deadline is far enough ahead to sleep), or when every slot is taken. A
	// response is read by the reactor all the same: only its record is built later. The waiter
	// also returns the connection to the pool, so a client with a connection limit starts each
	// waiter at once (its next send may wait for that connection), as do rows whose entries wait
	// for parents (a parent's end releases its children). Without a limit the row's slots bound
	// the connections in use and the idle ones prewarmed cover them.
	var held []sentCall // dispatcher goroutine only
	release := func() {
		for _, w := range held {
			waitFor(w)
		}
		held = held[:0]
	}
	// launch sends request i (call, prepared), scheduled at at, once a slot is free; false when
	// the row stops. hold says the caller is the dispatcher, which may start the waiter later.
	launch := func(i int, q *request, call *Call, at time.Time, hold bool) bool {
		select {
		case slots <- struct{}{}:
		default:
			if hold {
				release() // the held calls' waiters free the slots
			}
			select {
			case slots <- struct{}{}:
			case <-send.Done():
				return false
			}
		}
		if !ctl.take(at) {
			<-slots
			return false
		}
		call.Send(ctx)
		if st := r.log.stall; st.every > 0 && (i+1)%st.every == 0 {
			time.Sleep(st.d) // test-only distortion (DistortionEnv)
		}
		w := sentCall{i: i, q: q, call: call, at: at}
		if hold && deps == nil && r.client.opt.maxConns <= 0 {
			held = append(held, w)
		} else {
			waitFor(w)
		}
		return true
	}
	dispatched := make(chan struct{})
	go func() {
		defer close(dispatched)
		p := startPacer()
		defer p.stop()
		t0 := time.Now()
		origin = t0
		defer release()
		for i := range offsets {
			q, berr := next(i)
			if berr != nil {
				err = berr
				return
			}
			if q == nil {
				return // the row was cut while the request was being built
			}
			// Built before the wait, not on the send path (see Client.Prepare).
			call := r.client.Prepare(r.request(q))
			at := t0.Add(offsets[i])
			if len(held) > 0 && time.Until(at) > holdGap {
				release()
			}
			if p.until(send, at) != nil {
				return
			}
			if pks := deps.parentsOf(i); pks != nil {
				if !deps.allDone(pks) { // wait for the parents beside the dispatcher (tracedeps.go)
					wg.Add(1)
					go func() {
						defer wg.Done()
						if !deps.wait(send.Done(), pks) {
							deps.finish(i, nil)
							return
						}
						if at, ok := deps.after(at, pks); !ok || !launch(i, q, call, at, false) {
							deps.finish(i, nil)
						}
					}()
					continue
				}
				// the parents have ended: send now, or at the last one's end
				var ok bool
				if at, ok = deps.after(at, pks); !ok {
					deps.finish(i, nil)
					continue
				}
			}
			if !launch(i, q, call, at, true) {
				deps.finish(i, nil)
				return
			}
		}
	}()
	<-dispatched
	wg.Wait()
	return origin, err
}

// sentCall is a request the open-loop dispatcher sent, whose response is yet to be waited for.
type sentCall struct {
	i    int
	q    *request
	call *Call
	at   time.Time
}

// holdGap is the least time to the next deadline in which the dispatcher starts the waiters of
// the sends it held (openLoop): starting a burst's few dozen goroutines takes tens of µs.
const holdGap = 200 * time.Microsecond

// indexed serves planned requests to openLoop.
func indexed(reqs []request) func(int) (*request, error) {
	return func(i int) (*request, error) { return &reqs[i], nil }
}

// request is the client request of a planned one.
func (r *runner) request(q *request) Request {
	cs := &r.plan.Case
	return Request{
		Path: Endpoint(string(cs.API)), Body: q.body, Stream: cs.Stream, Epoch: r.plan.Epoch,
		Timeout: time.Duration(cs.RequestTimeoutSeconds * float64(time.Second)), ExpectEvents: int(q.maxTokens(cs)) + 8,
	}
}

// do sends one request and builds its record; sched is its t_sched.
func (r *runner) do(ctx context.Context, q *request, sched time.Time, c, rep int64, ctl *rowCtl) *contract.RequestRecordDoc {
	return r.record(q, r.client.Do(ctx, r.request(q)), sched, c, rep, ctl)
}

// record turns a response into the request's record, checking the output assertions of a
// measured success.
func (r *runner) record(q *request, resp *Response, sched time.Time, c, rep int64, ctl *rowCtl) *contract.RequestRecordDoc {
	cs := &r.plan.Case
	rec := &contract.RequestRecordDoc{
		Schema: contract.RequestRecordSchema, CaseID: r.plan.CaseID, Row: contract.RowKey{Concurrency: c, Repetition: rep},
		Index: q.index, Warmup: q.warmup, PromptID: q.prompt.ID, Seed: q.seed, BodyDigest: q.digest,
		TSchedNs: int64(sched.Sub(r.plan.Epoch)), TSendNs: resp.TSendNs, TSentNs: resp.TSentNs, THdrNs: resp.THdrNs, Events: resp.Events,
		TEndNs: resp.TEndNs, TCloseNs: resp.TCloseNs, Usage: resp.Usage, FinishReason: resp.FinishReason,
		OutputDigest: resp.OutputDigest(), Assertions: []contract.AssertionOutcome{}, Error: resp.Err,
	}
	if rec.Events == nil {
		rec.Events = []contract.Event{}
	} else if cap(rec.Events) > len(rec.Events) {
		// The stream sized its events for one per token; a record held for the whole row
		// keeps only those it got.
		rec.Events = slices.Clone(rec.Events)
	}
	if !q.warmup {
		// Copies: a pointer into q would keep q, and its body, alive as long as the record.
		ci, cy := q.corpusIndex, q.cycle
		rec.CorpusIndex, rec.Cycle = &ci, &cy
		rec.TraceEntry = r.plan.Trace.traceEntry(ci)
	}
	rec.Priming = q.priming
	rec.Session = q.session
	if resp.Usage != nil {
		rec.CachedPromptTokens = resp.CachedPromptTokens
	}
	if resp.Status != 0 {
		s := int64(resp.Status)
		rec.StatusCode = &s
	}
	if u := resp.Usage; rec.Error == nil && u != nil && u.CompletionTokens > q.maxTokens(cs) {
		rec.Error = reqError(ClassUsageExceedsMaxTokens, "usage completion_tokens %d exceeds the request's max_tokens %d: the server reported more tokens than it may generate", u.CompletionTokens, q.maxTokens(cs))
	}
	if u := resp.Usage; rec.Error == nil && u != nil && u.PromptTokens > int64(len(q.body))+MaxTemplateTokens {
		rec.Error = reqError(ClassInconsistentUsage, "usage prompt_tokens %d exceeds the request body's %d bytes plus %d template tokens: every prompt token but the chat template's stands for at least one byte of the body", u.PromptTokens, len(q.body), MaxTemplateTokens)
	}
	if cs.Tokenizer != nil {
		r.ledger(rec, q, resp)
	}
	if resp.Complete {
		resp.ToolCalls, resp.toolCallWhy = judgeCalls(&resp.calls, r.plan.Tools)
		rec.ToolCalls = resp.ToolCalls
	}
	if !q.warmup && rec.Error == nil {
		rec.Assertions = check(r.asserts, q.prompt.ID, resp, q.maxTokens(cs))
		if msg := failedAssertions(rec.Assertions); msg != "" {
			rec.Error = reqError(ClassAssertion, "%s", msg)
		}
	}
	if ctl != nil && !q.warmup {
		ctl.cutClass(rec)
		ctl.observe(rec)
	}
	if !q.warmup && r.plan.Progress != nil {
		if rec.Error != nil {
			r.failed.Add(1)
		}
		r.done.Add(1)
		r.progress(ProgressRequest, c, rep)
	}
	if r.log.sink != nil {
		r.log.sink(rec)
	}
	return rec
}

// maxTokens is the request's max_tokens: its prompt's (a trace entry's output_length), else the
// case's.
func (q *request) maxTokens(cs *contract.Case) int64 { return q.prompt.maxTokens(cs) }

// maxTokens is the max_tokens a request of this prompt sends (Body) and is judged by: the
// prompt's own (a trace entry's output_length) when set, else the case's.
func (p Prompt) maxTokens(cs *contract.Case) int64 {
	if p.MaxTokens > 0 {
		return p.MaxTokens
	}
	return cs.MaxTokens
}

// badBurstiness says a gamma process lacks its burstiness (0 to 1000), or another has one.
func badBurstiness(gamma bool, b *float64) bool {
	return gamma != (b != nil) || (gamma && !(*b > 0 && *b <= 1000))
}

// fmtPtr formats an optional number ("absent" when nil).
func fmtPtr(v *float64) string {
	if v == nil {
		return "absent"
	}
	return fmt.Sprint(*v)
}
