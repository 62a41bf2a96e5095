package sim

import (
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// job is one accepted completion request on its way to the client.
type job struct {
	s        *Server
	q        *request
	gen      Generation
	id       string
	endpoint string
	created  int64
	prompt   int // prompt tokens
	cached   int // prompt tokens the prefix cache had, known once the request holds a slot
	call     *toolCall
}

// hold runs once the request holds a decode slot: it counts the prompt tokens and asks the
// prefix cache.
func (j *job) hold() {
	s := j.s
	s.m.promptTokens.Add(uint64(j.prompt))
	if s.cache != nil {
		j.cached = s.cache.lookupInsert(s.cfg.Seed, j.q.prompt, j.prompt)
		s.m.prefixQueries.Add(uint64(j.prompt))
		s.m.prefixHits.Add(uint64(j.cached))
	}
}

// The completion APIs qualsim serves.
const (
	apiCompletions = iota
	apiChat
	apiResponses
)

func (s *Server) handleCompletion(w http.ResponseWriter, r *http.Request, api int) {
	endpoint, prefix := "/v1/completions", "cmpl-qs-"
	switch api {
	case apiChat:
		endpoint, prefix = "/v1/chat/completions", "chatcmpl-qs-"
	case apiResponses:
		endpoint, prefix = "/v1/responses", "resp_qs_"
	}
	n := s.seq.Add(1)
	if !s.ready.Load() {
		s.m.fail(reasonNotReady)
		s.writeError(w, endpoint, notReady())
		return
	}
	var q *request
	var err error
	if body := http.MaxBytesReader(w, r.Body, MaxRequestBodyBytes); api == apiResponses {
		q, err = decodeResponsesRequest(body, s.cfg.DefaultMaxTokens)
	} else {
		q, err = decodeRequest(body, api == apiChat, s.cfg.DefaultMaxTokens)
	}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = badRequest("", "%v", err)
		}
		if ae.status == http.StatusRequestEntityTooLarge {
			s.m.fail(reasonBodyTooLarge)
		} else {
			s.m.fail(reasonBadRequest)
		}
		s.writeError(w, endpoint, ae)
		return
	}
	if images := q.prompt.Images(); images > 0 {
		if s.cfg.ImageTokens == 0 {
			s.m.fail(reasonBadRequest)
			s.writeError(w, endpoint, badRequest("messages", "model %.80q takes no images (qualsim's image_tokens is 0)", q.model))
			return
		}
		q.prompt.ImageTokens = s.cfg.ImageTokens
		s.m.promptImages.Add(uint64(images))
	}
	if !s.models[q.model] {
		s.m.fail(reasonUnknownModel)
		s.writeError(w, endpoint, &apiError{status: http.StatusNotFound, typ: "invalid_request_error", param: "model", code: "model_not_found", message: "model " + strconv.Quote(q.model) + " not found"})
		return
	}
	if f := s.cfg.Faults; f.HTTP429 > 0 || f.HTTP500 > 0 {
		u := unitFloat(splitmix64(s.cfg.Seed ^ splitmix64(n)))
		switch {
		case u < f.HTTP429:
			s.m.fail(reasonInjected429)
			s.writeError(w, endpoint, &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "rate_limit_exceeded", message: "rate limited (qualsim fault http-429)"})
			return
		case u < f.HTTP429+f.HTTP500:
			s.m.fail(reasonInjected500)
			s.writeError(w, endpoint, &apiError{status: http.StatusInternalServerError, typ: "server_error", message: "internal error (qualsim fault http-500)"})
			return
		}
	}
	j := &job{
		s: s, q: q, endpoint: endpoint, id: prefix + strconv.FormatUint(n, 10), created: time.Now().Unix(),
		gen: Generate(GenSpec{
			ModelSeed: s.cfg.Seed, RequestSeed: q.seed, Prompt: q.prompt, MaxTokens: q.maxTokens,
			Stop: q.stop, IgnoreEOS: q.ignoreEOS, EOSAfter: s.cfg.EOSAfter,
		}),
		prompt: q.prompt.Tokens(),
	}
	j.callTool(n)
	if tc := s.cfg.Tokens; tc != nil && j.call == nil {
		if err := j.countTokens(tc); err != nil {
			s.m.fail(reasonBadRequest)
			s.writeError(w, endpoint, badRequest("messages", "count the prompt's tokens: %v", err))
			return
		}
	}
	switch {
	case q.stream && q.responses:
		err = j.streamResponses(r.Context(), w)
	case q.stream:
		err = j.stream(r.Context(), w)
	default:
		err = j.respond(r.Context(), w)
	}
	if err != nil {
		if s.cutting.Load() {
			s.m.fail(reasonCut)
		} else {
			s.m.fail(reasonClientGone)
		}
		s.log.Debug("request ended early", "request_id", j.id, "err", err)
		// End the response without the chunked terminator, so that a client sees a cut stream.
		panic(http.ErrAbortHandler)
	}
}

// acquire waits for a decode slot; the caller releases it with <-s.slots.
func (s *Server) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		s.m.running.Add(1)
		s.m.queued(0)
		return nil
	default:
	}
	s.m.waiting.Add(1)
	defer s.m.waiting.Add(-1)
	start := time.Now()
	select {
	case s.slots <- struct{}{}:
		s.m.running.Add(1)
		s.m.queued(time.Since(start))
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Server) release() {
	s.m.running.Add(-1)
	<-s.slots
}

// schedule yields the offsets of successive tokens from slot acquisition (see Timing).
type schedule struct {
	t    Timing
	rng  *rand.Rand
	next time.Duration
	k    int
}

func newSchedule(t Timing, modelSeed, hash uint64, promptTokens int) *schedule {
	sc := &schedule{t: t}
	if t.Jitter > 0 {
		sc.rng = rand.New(rand.NewPCG(hash, modelSeed))
	}
	sc.next = t.TTFT + time.Duration(promptTokens)*t.PrefillPerToken
	return sc
}

func (sc *schedule) jitter() time.Duration {
	if sc.rng == nil {
		return 0
	}
	return time.Duration(sc.rng.Int64N(int64(sc.t.Jitter)))
}

// token returns the offset of the next token.
func (sc *schedule) token() time.Duration {
	if sc.k > 0 {
		sc.next += sc.t.TokenInterval
	}
	sc.next += sc.jitter()
	sc.k++
	return sc.next
}

// clock waits for absolute deadlines with one reusable timer.
type clock struct {
	timer *time.Timer
}

func (c *clock) until(ctx context.Context, at time.Time) error {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err()
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-c.timer.C:
		return nil
	case <-ctx.Done():
		c.timer.Stop()
		return ctx.Err()
	}
}

func (c *clock) stop() {
	if c.timer != nil {
		c.timer.Stop()
	}
}

// respond answers a non-streamed request once its last token is due.
func (j *job) respond(ctx context.Context, w http.ResponseWriter) error {
	s := j.s
	if err := s.acquire(ctx); err != nil {
		return err
	}
	defer s.release()
	t0 := time.Now()
	j.hold()
	s.gt.record(gtRecord{id: j.id, t: t0, kind: KindSlot})
	sc := newSchedule(s.cfg.Timing, s.cfg.Seed, j.gen.hash, j.prompt-j.cached)
	var due time.Duration
	for range j.gen.Tokens {
		due = sc.token()
	}
	var c clock
	defer c.stop()
	if err := c.until(ctx, t0.Add(due)); err != nil {
		return err
	}
	if j.q.responses {
		b := append(j.appendResponse(nil, true), '\n')
		s.writeJSON(w, j.endpoint, http.StatusOK, b)
		s.gt.record(gtRecord{id: j.id, event: 1, t: time.Now(), bytes: len(b), kind: KindBody})
		j.finished()
		return nil
	}
	b := j.appendHead(nil, false)
	if j.q.chat {
		r, field := j.reasoning()
		b = append(b, `{"index":0,"message":{"role":"assistant",`...)
		if r > 0 {
			b = appendJSONString(b, field)
			b = append(b, ':')
			b = appendJSONString(b, j.gen.span(0, r))
			b = append(b, ',')
		}
		if j.call != nil {
			b = append(b, `"content":null,"tool_calls":[`...)
			b = j.appendCall(b, j.gen.Text)
			b = append(b, ']')
		} else {
			b = append(b, `"content":`...)
			b = appendJSONString(b, j.gen.span(r, j.gen.Tokens))
		}
		b = append(b, `},"logprobs":null,"finish_reason":`...)
	} else {
		b = append(b, `{"index":0,"text":`...)
		b = appendJSONString(b, j.gen.Text)
		b = append(b, `,"logprobs":null,"finish_reason":`...)
	}
	b = appendJSONString(b, j.gen.Finish)
	b = append(b, "}]"...)
	if !s.cfg.Faults.MissingUsage {
		b = append(b, `,"usage":`...)
		b = j.appendUsage(b, j.gen.Tokens)
	}
	b = append(b, "}\n"...)
	s.writeJSON(w, j.endpoint, http.StatusOK, b)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	s.gt.record(gtRecord{id: j.id, event: 1, t: time.Now(), bytes: len(b), kind: KindBody})
	j.finished()
	return nil
}

// finished counts a completed response's tokens and its speculative-decoding steps.
func (j *job) finished() {
	m := &j.s.m
	m.generationTokens.Add(uint64(j.gen.Tokens))
	if sd := j.s.cfg.SpecDecode; sd.DraftTokens > 0 {
		steps, accepted := specSteps(sd, j.s.cfg.Seed, j.gen.hash, j.gen.Tokens)
		m.specDrafts.Add(uint64(steps))
		m.specDraftTokens.Add(uint64(steps * sd.DraftTokens))
		m.specAccepted.Add(uint64(accepted))
	}
}

// specSteps are the decode steps of an n-token completion under the acceptance model (see
// SpecDecode) and the draft tokens they accepted.
func specSteps(sd SpecDecode, modelSeed, hash uint64, n int) (steps, accepted int) {
	rng := rand.New(rand.NewPCG(hash^0x5bd1e995, modelSeed))
	for pos := 0; pos < n; steps++ {
		a := 0
		for a < sd.DraftTokens && pos+a+1 < n && rng.Float64() < sd.Acceptance {
			a++
		}
		accepted += a
		pos += a + 1
	}
	return steps, accepted
}

// appendCall appends the call as a tool_calls item with these arguments.
func (j *job) appendCall(b []byte, args string) []byte {
	b = append(b, `{"index":0,"id":`...)
	b = appendJSONString(b, j.call.id)
	b = append(b, `,"type":"function","function":{"name":`...)
	b = appendJSONString(b, j.call.name)
	b = append(b, `,"arguments":`...)
	b = appendJSONString(b, args)
	return append(b, `}}`...)
}

// reasoning is how many of the completion's tokens are reasoning, and the field that carries them
// (0 for completions and without a reasoning model).
func (j *job) reasoning() (int, string) {
	r := j.s.cfg.Reasoning
	if !j.q.chat || r.Tokens == 0 || j.call != nil {
		return 0, ""
	}
	field := r.Field
	if field == "" {
		field = ReasoningContent
	}
	return min(r.Tokens, j.gen.Tokens), field
}

// appendHead appends the response object up to the opening of its choices array.
func (j *job) appendHead(b []byte, chunk bool) []byte {
	b = append(b, `{"id":`...)
	b = appendJSONString(b, j.id)
	b = append(b, `,"object":`...)
	switch {
	case j.q.chat && chunk:
		b = append(b, `"chat.completion.chunk"`...)
	case j.q.chat:
		b = append(b, `"chat.completion"`...)
	default:
		b = append(b, `"text_completion"`...)
	}
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, j.created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, j.q.model)
	return append(b, `,"system_fingerprint":"qualsim","choices":[`...)
}

// usageCounts are the numbers a usage record states.
type usageCounts struct{ prompt, completion, total, reasoning int }

// usage is the usage for completion tokens n (inconsistent under the usage faults). With a
// tokenizer, n output tokens are counted as the tokenizer counts their returned text (a tool
// call's fragments are counted as they are).
func (j *job) usage(n int) usageCounts {
	tc := j.s.cfg.Tokens
	if tc != nil && j.call == nil {
		c, _ := tc.TextTokens(j.gen.span(0, n))
		n = int(c)
	}
	r, _ := j.reasoning()
	r = min(r, n)
	if tc != nil && r > 0 {
		c, _ := tc.TextTokens(j.gen.span(0, r))
		r = int(c)
	}
	f := j.s.cfg.Faults
	if f.UsageOffByOne {
		n++
	}
	if f.UsageExceedsMaxTokens {
		n = j.q.maxTokens * 1000000
	}
	if f.UsageZeroCompletion {
		n = 0
	}
	prompt := j.prompt
	if f.UsageAbsurdPrompt {
		prompt = 1 << 62
	}
	total := prompt + n
	if f.InconsistentUsage {
		total++
	}
	return usageCounts{prompt: prompt, completion: n, total: total, reasoning: r}
}

// appendUsage appends the chat or completions usage object for completion tokens n.
func (j *job) appendUsage(b []byte, n int) []byte {
	u := j.usage(n)
	b = append(b, `{"prompt_tokens":`...)
	b = appendInt(b, u.prompt)
	b = append(b, `,"completion_tokens":`...)
	b = appendInt(b, u.completion)
	b = append(b, `,"total_tokens":`...)
	b = appendInt(b, u.total)
	if j.s.cfg.Reasoning.Tokens > 0 && j.q.chat {
		b = append(b, `,"completion_tokens_details":{"reasoning_tokens":`...)
		b = appendInt(b, u.reasoning)
		b = append(b, '}')
	}
	if j.s.cache != nil {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = appendInt(b, j.cached)
		b = append(b, '}')
	}
	return append(b, '}')
}

// sse writes one stream's events, applying the event faults.
type sse struct {
	j     *job
	w     http.ResponseWriter
	rc    *http.ResponseController
	ctx   context.Context
	head  []byte // "data: " and the chunk object up to its choices array, the same in every event
	t0    time.Time
	shift time.Duration // added by a stall
	idx   int           // events written so far
	buf   []byte
	clk   clock
}

// stream answers a streamed request: headers at once, then the events on the declared schedule.
func (j *job) stream(ctx context.Context, w http.ResponseWriter) error {
	s := j.s
	e, done, err := j.openStream(ctx, w)
	if err != nil {
		return err
	}
	defer done()
	e.head = j.appendHead([]byte("data: "), true)

	q := j.q
	usageOn := q.includeUsage && !s.cfg.Faults.MissingUsage
	continuous := usageOn && q.continuousUsage
	if q.chat && s.cfg.RolePrelude {
		err := e.send(0, KindRole, func(b []byte) []byte {
			b = append(b, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]`...)
			return j.appendChunkUsage(b, usageOn, continuous, 0)
		})
		if err != nil {
			return err
		}
	}
	if usageOn && s.cfg.Faults.UsageBeforeContent {
		err := e.send(0, KindUsage+"+usage-before-content", func(b []byte) []byte {
			b = append(b, `],"usage":`...)
			return append(j.appendUsage(b, j.gen.Tokens), '}')
		})
		if err != nil {
			return err
		}
	}
	sc := newSchedule(s.cfg.Timing, s.cfg.Seed, j.gen.hash, j.prompt-j.cached)
	per, sent := s.cfg.Timing.TokensPerEvent, 0
	reason, field := j.reasoning()
	named := false
	var due time.Duration
	for k := range j.gen.Tokens {
		due = sc.token()
		// An event ends at the first token, every per tokens, at the last token and at the last
		// reasoning token (an event never mixes reasoning and content).
		if k != 0 && k%per != 0 && k != j.gen.Tokens-1 && k != reason-1 {
			continue
		}
		text, thinking := j.gen.span(sent, k+1), k < reason
		sent = k + 1
		if text == "" {
			continue // cut by a stop string: nothing to send
		}
		kind, key := KindContent, `{"index":0,"delta":{"content":`
		if thinking {
			kind, key = KindReasoning, `{"index":0,"delta":{"`+field+`":`
		}
		err := e.send(due, kind, func(b []byte) []byte {
			if j.call != nil {
				b = append(b, `{"index":0,"delta":{"tool_calls":[`...)
				if !named { // the call's first fragment names it
					b, named = j.appendCall(b, text), true
				} else {
					b = append(b, `{"index":0,"function":{"arguments":`...)
					b = appendJSONString(b, text)
					b = append(b, `}}`...)
				}
				b = append(b, `]},"logprobs":null,"finish_reason":null}]`...)
			} else if q.chat {
				b = append(b, key...)
				b = appendJSONString(b, text)
				b = append(b, `},"logprobs":null,"finish_reason":null}]`...)
			} else {
				b = append(b, `{"index":0,"text":`...)
				b = appendJSONString(b, text)
				b = append(b, `,"logprobs":null,"finish_reason":null}]`...)
			}
			return j.appendChunkUsage(b, usageOn, continuous, sent)
		})
		if err != nil {
			return err
		}
	}
	finish := func(b []byte) []byte {
		if q.chat {
			b = append(b, `{"index":0,"delta":{},"logprobs":null,"finish_reason":`...)
		} else {
			b = append(b, `{"index":0,"text":"","logprobs":null,"finish_reason":`...)
		}
		b = appendJSONString(b, j.gen.Finish)
		b = append(b, "}]"...)
		return j.appendChunkUsage(b, usageOn, continuous, j.gen.Tokens)
	}
	if err := e.send(due, KindFinish, finish); err != nil {
		return err
	}
	if s.cfg.Faults.DuplicateFinishReason {
		if err := e.send(due, KindFinish+"+duplicate-finish-reason", finish); err != nil {
			return err
		}
	}
	if s.cfg.Faults.ContentAfterFinish {
		err := e.send(due, KindContent+"+content-after-finish", func(b []byte) []byte {
			if q.chat {
				b = append(b, `{"index":0,"delta":{"content":" after finish"},"logprobs":null,"finish_reason":null}]`...)
			} else {
				b = append(b, `{"index":0,"text":" after finish","logprobs":null,"finish_reason":null}]`...)
			}
			return j.appendChunkUsage(b, usageOn, continuous, j.gen.Tokens)
		})
		if err != nil {
			return err
		}
	}
	if usageOn && !s.cfg.Faults.UsageBeforeContent {
		err := e.send(due, KindUsage, func(b []byte) []byte {
			b = append(b, `],"usage":`...)
			return append(j.appendUsage(b, j.gen.Tokens), '}')
		})
		if err != nil {
			return err
		}
	}
	if !s.cfg.Faults.NoDone {
		if err := e.send(due, KindDone, nil); err != nil {
			return err
		}
	}
	j.finished()
	return nil
}

// openStream starts a streamed answer: headers at once, then a decode slot; it returns the event
// writer (its head still empty) and done, which gives the slot back and ends the stream's count.
func (j *job) openStream(ctx context.Context, w http.ResponseWriter) (*sse, func(), error) {
	s := j.s
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return nil, nil, err
	}
	s.gt.record(gtRecord{id: j.id, t: time.Now(), kind: KindHeaders})
	s.m.request(j.endpoint, http.StatusOK)
	s.m.activeStreams.Add(1)
	if err := s.acquire(ctx); err != nil {
		s.m.activeStreams.Add(-1)
		return nil, nil, err
	}
	e := &sse{j: j, w: w, rc: rc, ctx: ctx, t0: time.Now(), buf: make([]byte, 0, 512)}
	j.hold()
	s.gt.record(gtRecord{id: j.id, t: e.t0, kind: KindSlot})
	return e, func() {
		e.clk.stop()
		s.release()
		s.m.activeStreams.Add(-1)
	}, nil
}

// appendChunkUsage closes a chunk object: with include_usage, "usage" is null (as OpenAI sends),
// or the running count with continuous_usage_stats (as vLLM sends).
func (j *job) appendChunkUsage(b []byte, usageOn, continuous bool, n int) []byte {
	switch {
	case continuous:
		b = append(b, `,"usage":`...)
		b = j.appendUsage(b, n)
	case usageOn:
		b = append(b, `,"usage":null`...)
	}
	return append(b, '}')
}

const paddingField = `"qualsim_padding":"",`

// send writes event idx+1 at t0+due (plus any stall shift). body appends the payload after the
// chunk head; nil means [DONE]. After the bytes are flushed it stamps the event, counts it, logs
// it to the ground truth and carries out crash-after-events.
func (e *sse) send(due time.Duration, kind string, body func([]byte) []byte) error {
	s, f := e.j.s, &e.j.s.cfg.Faults
	e.idx++
	if f.StallAt == e.idx {
		e.shift += f.Stall
		kind += "+stall"
	}
	if err := e.clk.until(e.ctx, e.t0.Add(due+e.shift)); err != nil {
		return err
	}
	var b []byte
	if body == nil {
		b = append(e.buf[:0], "data: [DONE]"...)
	} else {
		b = body(append(e.buf[:0], e.head...))
	}
	if f.HugeEventAt == e.idx && body != nil {
		pad := max(0, f.HugeEventBytes-len(b)-len(paddingField))
		huge := make([]byte, 0, len(b)+len(paddingField)+pad+2)
		huge = append(huge, "data: {"...)
		huge = append(huge, paddingField[:len(paddingField)-2]...)
		for range pad {
			huge = append(huge, 'x')
		}
		huge = append(huge, `",`...)
		huge = append(huge, b[len("data: {"):]...)
		b = huge
		kind += "+huge-event"
	}
	if f.MalformedJSONAt == e.idx {
		payload := b[len("data: "):]
		b = b[:len("data: ")+len(payload)/2]
		kind += "+malformed-json"
	}
	if f.MissingDataPrefixAt == e.idx {
		b = b[len("data: "):]
		kind += "+missing-data-prefix"
	}
	b = append(b, "\n\n"...)
	if cap(b) <= 64<<10 {
		e.buf = b
	}
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	if err := e.rc.Flush(); err != nil {
		return err
	}
	now := time.Now()
	s.m.events.Add(1)
	s.m.eventBytes.Add(uint64(len(b)))
	s.gt.record(gtRecord{id: e.j.id, event: e.idx, t: now, bytes: len(b), kind: kind})
	if f.CrashAfterEvents == e.idx {
		s.crash(e.j.id, e.idx)
	}
	return nil
}
