package load

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/schemas/wire"
)

// Multi-turn sessions (docs/caching.md "Conversations").
//
// A session corpus (conversations: a JSONL file of qualkit.conversation-session.v1 lines bound
// by digest; synthetic_conversations: SyntheticConversations) resolves to one Prompt per
// session whose Turns are its user turns (Text is turn 0's). A session row runs every session
// once, after the row's warmups: turn k of a session is sent with the whole history, the
// system message, each earlier user turn and the assistant's reply to it exactly as the client
// received it (the streamed text), then turn k; it is scheduled when turn k-1's reply ended and
// turn k's think time passed (turn 0: think time after the session started), and its t_sched is
// the moment the client took it. A turn that fails ends its session: the later turns are not
// sent (and not recorded). Closed loop (no rate): Concurrency sessions run at once, each worker
// taking the next session in declared order when its session ends. Open loop (rate): session i
// starts at metric.Arrivals' offset i (the arrival schedule of single requests, here of
// sessions), at most Concurrency sessions in flight; turn 0's t_sched is its scheduled arrival.
//
// Request indexes are fixed before the row starts: the warmups first, then session s's turn k
// round r at W + S × (turns of sessions 0..s-1) + S × k + r, S being 1 + the case's tool-round
// bound (1 without tool results), so a record's index, seed and body digest do not depend on
// timing; the indexes of rounds not sent stay unused. Every record carries session (id, turn,
// round, the messages and characters of the history sent, the output digests of the replies it
// re-sent, the tool messages among them, the declared think time).
//
// Tool rounds (docs/caching.md "Tool rounds"): in a case whose tools declare results, a turn's
// reply that succeeded with tool calls, every one to a function of the results, is answered in
// the same turn: the client sends at once (no think time) a round, the history so far, the
// reply as an assistant message with its calls (ids, names and argument bytes as received) and
// one tool message per call carrying its function's result, up to the case's rounds bound. A
// reply with no call, a call to a function without a result, a failure or the bound reached
// ends the turn; the turn's last reply goes into the next turn's history as its text alone.

// Turn is one user turn of a session and the think time before it.
type Turn struct {
	Text    string
	ThinkMs float64
}

// Limits of a session corpus (the contract's; defined once in schemas/synth).
const (
	// MaxSessionTurns bounds the turns of one session.
	MaxSessionTurns = synth.MaxSessionTurns
	// MaxSessions bounds the sessions of one corpus.
	MaxSessions = synth.MaxSessions
	// MaxSessionThinkMs bounds one think time.
	MaxSessionThinkMs = synth.MaxSessionThinkMs
)

// resolveSessions resolves a session corpus (see Resolve).
func resolveSessions(corpus contract.Corpus, repoRoot string) ([]Prompt, error) {
	if corpus.Source == contract.CorpusSourceConversations {
		return readConversationFile(corpus, repoRoot)
	}
	a, err := synth.CheckSyntheticConversations(corpus)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorpus, err)
	}
	return SyntheticConversations(a.Seed, a.Count, a.Turns, a.Words, a.Think), nil
}

// SyntheticConversations is the generator qualkit.synthetic-conversations.v1
// (synth.SyntheticConversations, which the verifier runs too), as the runner's prompts: session i
// is prompt i, its text its first turn's.
func SyntheticConversations(seed uint64, count int, turns, words, think [2]int) []Prompt {
	out := make([]Prompt, 0, count)
	for _, cv := range synth.SyntheticConversations(seed, count, turns, words, think) {
		ts := make([]Turn, len(cv.Turns))
		for j, t := range cv.Turns {
			ts[j] = Turn{Text: t.Text, ThinkMs: t.ThinkMs}
		}
		out = append(out, Prompt{ID: cv.ID, Text: ts[0].Text, Turns: ts})
	}
	return out
}

func readConversationFile(corpus contract.Corpus, repoRoot string) ([]Prompt, error) {
	rel := corpus.Path
	if rel == "" || strings.Contains(rel, `\`) || !filepath.IsLocal(filepath.FromSlash(rel)) {
		return nil, fmt.Errorf("%w: path %q: want a repository-relative path that stays inside the repository", ErrCorpus, rel)
	}
	data, err := evidence.ReadFileLimited(filepath.Join(repoRoot, filepath.FromSlash(rel)), MaxCorpusBytes)
	if err != nil {
		return nil, fmt.Errorf("%w: read %s: %w", ErrCorpus, rel, err)
	}
	if got := evidence.DigestOf(data); got != corpus.Digest {
		return nil, fmt.Errorf("%w: %s has digest %s, the workload declares %s", ErrCorpus, rel, got, corpus.Digest)
	}
	return ParseConversations(data, rel)
}

// ParseConversations reads a conversation corpus: one qualkit.conversation-session.v1 object
// per line (strict JSON, checked against the contract; no blank line except after the last), at
// most MaxSessions lines. name names the file in errors, which wrap ErrCorpus.
func ParseConversations(data []byte, name string) ([]Prompt, error) {
	lines := bytes.Split(data, []byte{'\n'})
	if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) > MaxSessions {
		return nil, fmt.Errorf("%w: %s has more than %d sessions", ErrCorpus, name, MaxSessions)
	}
	out := make([]Prompt, 0, len(lines))
	for i, line := range lines {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil, fmt.Errorf("%w: %s line %d: blank line", ErrCorpus, name, i+1)
		}
		if err := schemas.CheckAs(line, fmt.Sprintf("%s line %d", name, i+1), contract.ConversationSession); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorpus, err)
		}
		var s contract.ConversationSessionDoc
		if err := jsonstrict.DecodeInto(line, &s); err != nil {
			return nil, fmt.Errorf("%w: %s line %d: %v", ErrCorpus, name, i+1, err)
		}
		p := Prompt{ID: s.ID, System: s.System, Text: s.Turns[0].Text, Turns: make([]Turn, len(s.Turns))}
		for j, t := range s.Turns {
			p.Turns[j] = Turn{Text: t.Text, ThinkMs: t.ThinkMs}
		}
		out = append(out, p)
	}
	return out, nil
}

// checkSessions checks a session plan's extra conditions (the schema and rules checked the rest).
func (p *Plan) checkSessions() error {
	c := &p.Case
	switch {
	case c.API != contract.ServingCaseAPIChat:
		return fmt.Errorf("%w: case %s: a session corpus needs api chat (a history is a list of messages)", ErrPlan, p.CaseID)
	case c.Requests != nil || c.Duration != nil || c.Stop != nil:
		return fmt.Errorf("%w: case %s: a session row runs every session once: requests, duration and stop do not apply", ErrPlan, p.CaseID)
	case regime(c) != contract.CacheRegimeNatural:
		return fmt.Errorf("%w: case %s: a session corpus takes cache_regime natural, not %s", ErrPlan, p.CaseID, c.CacheRegime)
	case int64(len(p.Prompts)) < slices.Max(c.Concurrency):
		return fmt.Errorf("%w: case %s: %d sessions cannot reach session concurrency %d", ErrPlan, p.CaseID, len(p.Prompts), slices.Max(c.Concurrency))
	}
	if err := p.checkSessionLedger(); err != nil {
		return err
	}
	for i, s := range p.Prompts {
		if len(s.Turns) == 0 || len(s.Turns) > MaxSessionTurns {
			return fmt.Errorf("%w: session %d (%s): %d turns, want 1 to %d", ErrPlan, i, s.ID, len(s.Turns), MaxSessionTurns)
		}
		for j, t := range s.Turns {
			if t.Text == "" || len(t.Text) > MaxPromptBytes || !utf8.ValidString(t.Text) || !(t.ThinkMs >= 0 && t.ThinkMs <= MaxSessionThinkMs) {
				return fmt.Errorf("%w: session %s turn %d: want UTF-8 text of 1 to %d bytes and a think time of 0 to %d ms", ErrPlan, s.ID, j, MaxPromptBytes, MaxSessionThinkMs)
			}
		}
	}
	return nil
}

// CountLimits is implemented by a TokenCounter that refuses a text over maxTextBytes and whose
// longest token is maxTokenBytes (tools/internal/tokenize's limits). A session case that binds
// such a counter is checked at plan time so that every turn's history can be counted.
type CountLimits interface {
	CountLimits() (maxTextBytes, maxTokenBytes int64)
}

// templateBytesPerMessage bounds the bytes a template adds to one message when it renders a
// prompt for counting (lines: a newline and "assistant: ", 12 bytes; contents: none), plus one
// for a space prefix.
const templateBytesPerMessage = 16

// replyBound is the most bytes a session reply may have for the next turn's history to be
// countable: max_tokens tokens of the bound vocabulary's longest token (0: no bound).
func (p *Plan) replyBound() int64 {
	lim, ok := p.Tokens.(CountLimits)
	if p.Case.Tokenizer == nil || !ok {
		return 0
	}
	_, tok := lim.CountLimits()
	return min(p.Case.MaxTokens*tok, MaxOutputBytes)
}

// checkSessionLedger refuses a session case binding a tokenizer whose last turn's history could
// be over what the tokenizer counts: the system message, every user turn, each earlier reply at
// replyBound bytes, and templateBytesPerMessage per message.
func (p *Plan) checkSessionLedger() error {
	lim, ok := p.Tokens.(CountLimits)
	if p.Case.Tokenizer == nil || !ok {
		return nil
	}
	maxText, _ := lim.CountLimits()
	reply := p.replyBound()
	for _, s := range p.Prompts {
		n := int64(len(s.System)) + int64(len(s.Turns)-1)*reply
		msgs := int64(2*len(s.Turns) - 1)
		if s.System != "" {
			msgs++
		}
		for _, t := range s.Turns {
			n += int64(len(t.Text))
		}
		if n += msgs * templateBytesPerMessage; n > maxText {
			return fmt.Errorf("%w: case %s session %s: its last turn's history could reach %d bytes (%d turns, replies of up to max_tokens %d × %d bytes), over the %d bytes the bound tokenizer counts: lower max_tokens or the turns", ErrPlan, p.CaseID, s.ID, n, len(s.Turns), p.Case.MaxTokens, reply/max(p.Case.MaxTokens, 1), maxText)
		}
	}
	return nil
}

// isSessions reports whether the plan's prompts are sessions.
func (p *Plan) isSessions() bool { return len(p.Prompts) > 0 && p.Prompts[0].Turns != nil }

// sessionTurns is the number of turns of every session of the plan.
func (p *Plan) sessionTurns() int64 {
	n := int64(0)
	for _, s := range p.Prompts {
		n += int64(len(s.Turns))
	}
	return n
}

// sessionPromptSet is the prompt set of a session row: every turn in declared order, each under
// its session's id and system message.
func sessionPromptSet(sessions []Prompt) []contract.Prompt {
	var out []contract.Prompt
	for _, s := range sessions {
		for _, t := range s.Turns {
			out = append(out, contract.Prompt{ID: s.ID, Text: t.Text, System: s.System})
		}
	}
	return out
}

// sessionBody renders turn k's request body: Body's fields with msgs as the messages.
func sessionBody(c *contract.Case, model string, msgs []wireMessage, seed *int64, t *Tools) ([]byte, error) {
	w := wireBody{Model: model, Messages: msgs, MaxTokens: c.MaxTokens, Seed: seed, Stream: c.Stream}
	return encodeBody(c, w, t)
}

// sessionRecords runs a row's sessions (after its first base requests, the warmups) and
// returns their records in index order.
func (r *runner) sessionRecords(ctx context.Context, c, rep int64, base int64) ([]*contract.RequestRecordDoc, error) {
	sessions := r.plan.Prompts
	first := make([]int64, len(sessions))
	next, stride := base, r.plan.turnStride()
	for i, s := range sessions {
		first[i] = next
		next += stride * int64(len(s.Turns))
	}
	var mu sync.Mutex
	var recs []*contract.RequestRecordDoc
	var failed error
	fail := func(err error) {
		mu.Lock()
		failed = cmp.Or(failed, err)
		mu.Unlock()
	}
	run := func(i int, start time.Time, sent *sentTurn) {
		got, err := r.session(ctx, i, first[i], start, c, rep, sent)
		mu.Lock()
		recs = append(recs, got...)
		failed = cmp.Or(failed, err)
		mu.Unlock()
	}
	if rt := r.plan.Case.Rate; rt != nil {
		// As openLoop: a thread of its own sleeps until each arrival and sends the session's
		// first turn itself (its body has no history yet, so it is built before the deadline);
		// the session's goroutine waits for the reply and runs the later turns.
		offsets := arrivals(rt, len(sessions), r.plan.Seed, c, rep)
		slots := make(chan struct{}, c)
		var wg sync.WaitGroup
		p := startPacer()
		t0 := time.Now()
	dispatch:
		for i, s := range sessions {
			at := t0.Add(offsets[i])
			var sent *sentTurn
			if s.Turns[0].ThinkMs == 0 {
				q, err := r.turnRequest(i, first[i], 0, 0, userTurn(firstMessages(s), s.Turns[0]), historyOf{})
				if err != nil {
					fail(err)
					break
				}
				sent = &sentTurn{q: q}
			}
			if p.until(ctx, at) != nil {
				break
			}
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				break dispatch
			}
			if sent != nil {
				sent.call = r.client.Start(ctx, r.request(sent.q))
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				run(i, at, sent)
			}()
		}
		p.stop()
		wg.Wait()
	} else {
		var nextSession atomic.Int64
		var wg sync.WaitGroup
		for range min(int(c), len(sessions)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := nextSession.Add(1) - 1
					if i >= int64(len(sessions)) || ctx.Err() != nil {
						return
					}
					run(int(i), time.Now(), nil)
				}
			}()
		}
		wg.Wait()
	}
	sort.Slice(recs, func(a, b int) bool { return recs[a].Index < recs[b].Index })
	if failed != nil {
		return nil, fmt.Errorf("%w: %v", ErrPlan, failed)
	}
	return recs, nil
}

// sentTurn is a session's turn 0, sent by the open-loop dispatcher at the session's arrival.
type sentTurn struct {
	q    *request
	call *Call
}

// sleepUntil waits until at; false when ctx ended first.
func sleepUntil(ctx context.Context, at time.Time) bool {
	d := time.Until(at)
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// firstMessages are a session's messages before its first user turn: its system message, if any.
func firstMessages(s Prompt) []wireMessage {
	if s.System == "" {
		return nil
	}
	return []wireMessage{{Role: "system", Content: s.System}}
}

// historyOf is what a session's history carried before a request: the output digests of the
// replies among its messages and the number of tool messages.
type historyOf struct {
	replies []string
	tools   int64
}

// userTurn is history followed by turn t's user message.
func userTurn(history []wireMessage, t Turn) []wireMessage {
	return append(slices.Clip(history), wireMessage{Role: "user", Content: t.Text})
}

// turnStride is the number of request indexes one session turn takes: its first request and the
// most tool rounds it may send.
func (p *Plan) turnStride() int64 {
	if t := p.Case.Tools; t != nil {
		return 1 + rules.ToolRounds(*t)
	}
	return 1
}

// turnRequest plans round round of turn k of session i (request index idx): msgs are the
// messages it sends (the history, then the turn's user message or the previous round's reply
// and tool messages), h what the history carried. When the case binds a tokenizer the body as
// sent (the whole history) is counted, as requests() counts a single request's; the error is
// that count's (the history is over what the tokenizer counts).
func (r *runner) turnRequest(i int, idx int64, k, round int, msgs []wireMessage, h historyOf) (*request, error) {
	s := r.plan.Prompts[i]
	cs := &r.plan.Case
	t := s.Turns[k]
	seed := requestSeed(cs.Sampling, idx)
	body, err := sessionBody(cs, r.plan.ModelID, msgs, seed, r.plan.Tools)
	if err != nil {
		panic("load: encode a session body: " + err.Error()) // strings and numbers always encode
	}
	chars := 0
	for _, m := range msgs {
		chars += utf8.RuneCountInString(m.Content)
	}
	q := &request{index: idx, prompt: Prompt{ID: s.ID, Text: t.Text, System: s.System}, corpusIndex: int64(i), cycle: 0, seed: seed, body: body, digest: evidence.DigestOf(body),
		session: &contract.SessionTurn{ID: s.ID, Turn: int64(k), Round: int64(round), HistoryMessages: int64(len(msgs)), HistoryChars: int64(chars), ReplyDigests: append([]string{}, h.replies...), ToolMessages: h.tools, ThinkMs: t.ThinkMs}}
	if tk := cs.Tokenizer; tk != nil {
		if q.promptTokens, err = promptTokens(r.plan.Tokens, tk.Template, body); err != nil {
			return nil, fmt.Errorf("count the prompt tokens of session %s turn %d (%d history bytes): %w", s.ID, k, len(body), err)
		}
	}
	return q, nil
}

// session runs session i's turns in order from start (its scheduled start; turn 0's think time
// counts from it), each with its tool rounds, and returns their records; a failed request ends
// it. sent, when not nil, is turn 0 already sent at start. With a bound tokenizer, a reply over
// the plan's replyBound fails its turn (malformed_event: the next turn's history could not be
// counted); the error is a turn that still could not be counted (checkSessionLedger makes that
// unreachable).
func (r *runner) session(ctx context.Context, i int, first int64, start time.Time, c, rep int64, sent *sentTurn) ([]*contract.RequestRecordDoc, error) {
	s := r.plan.Prompts[i]
	msgs := firstMessages(s)
	var h historyOf
	var out []*contract.RequestRecordDoc
	ready := start
	stride := r.plan.turnStride()
	rounds := int(stride - 1) // a turn's first request, then its tool rounds
	for k, t := range s.Turns {
		msgs = userTurn(msgs, t)
		for round := 0; round <= rounds; round++ {
			var q *request
			var resp *Response
			var sched time.Time
			idx := first + stride*int64(k) + int64(round)
			switch {
			case k == 0 && round == 0 && sent != nil:
				q, resp, sched = sent.q, sent.call.Wait(), start
			case round == 0:
				// The body does not depend on when it is sent: build it before the think time
				// ends, so that the turn's schedule lag is the client's send path only.
				var err error
				if q, err = r.turnRequest(i, idx, k, 0, msgs, h); err != nil {
					return out, err
				}
				req := r.request(q)
				if !sleepUntil(ctx, ready.Add(time.Duration(t.ThinkMs*float64(time.Millisecond)))) {
					return out, nil
				}
				sched = time.Now()
				resp = r.client.Do(ctx, req)
			default:
				// A tool round goes at once: the previous round's reply closed.
				if ctx.Err() != nil {
					return out, nil
				}
				r.total.Add(1) // a measured request the row's progress did not count at its start
				var err error
				if q, err = r.turnRequest(i, idx, k, round, msgs, h); err != nil {
					return out, err
				}
				sched = time.Now()
				resp = r.client.Do(ctx, r.request(q))
			}
			rec := r.record(q, resp, sched, c, rep, nil)
			if b := r.plan.replyBound(); rec.Error == nil && b > 0 && k+1 < len(s.Turns) && int64(len(resp.Text)) > b {
				rec.Error = reqError(ClassMalformedEvent, "reply of %d bytes is over max_tokens %d times the bound tokenizer's longest token (%d bytes in all): the next turn's history could not be counted", len(resp.Text), r.plan.Case.MaxTokens, b)
			}
			out = append(out, rec)
			if rec.Error != nil || rec.OutputDigest == nil {
				return out, nil
			}
			ready = time.Now()
			h.replies = append(h.replies, *rec.OutputDigest)
			answer := r.plan.toolAnswers(resp)
			if answer == nil || round == rounds {
				msgs = append(msgs, wireMessage{Role: "assistant", Content: string(resp.Text)})
				break
			}
			msgs = append(msgs, answer...)
			h.tools += int64(len(answer) - 1)
		}
	}
	return out, nil
}

// checkToolResults refuses tool results that do not match the case's functions: every function
// the tools file offers has a result (a call to one without would end its turn, which a
// workload should say by leaving that function out of the file), and every result names one.
func checkToolResults(id string, c *contract.Case, t *Tools) error {
	if c.Tools == nil || c.Tools.Results == nil || t == nil {
		return nil
	}
	for _, name := range t.fns.Names() {
		if _, ok := c.Tools.Results[name]; !ok {
			return fmt.Errorf("%w: case %s: tools.results has no result for function %s of the tools file: declare one for every function offered", ErrTools, id, name)
		}
	}
	for name := range c.Tools.Results {
		if !t.fns.Has(name) {
			return fmt.Errorf("%w: case %s: tools.results declares a result for %q, which the tools file does not offer", ErrTools, id, name)
		}
	}
	return nil
}

// toolAnswers are the messages that answer a reply's tool calls in a tool round: the reply as an
// assistant message with its calls, then one tool message per call with its function's result;
// nil when the case declares no results or the reply calls none, or calls a function without
// one (the turn then ends).
func (p *Plan) toolAnswers(resp *Response) []wireMessage {
	t := p.Case.Tools
	if t == nil || t.Results == nil || len(resp.calls.calls) == 0 {
		return nil
	}
	calls := slices.Clone(resp.calls.calls)
	slices.SortFunc(calls, func(a, b *callAcc) int { return a.index - b.index })
	out := make([]wireMessage, 1, 1+len(calls))
	wc := make([]wire.ToolCall, len(calls))
	for j, c := range calls {
		result, ok := t.Results[string(c.name)]
		if !ok {
			return nil
		}
		wc[j] = wire.ToolCall{ID: string(c.id), Type: "function", Function: wire.FunctionCall{Name: string(c.name), Arguments: string(c.args)}}
		out = append(out, wireMessage{Role: "tool", ToolCallID: string(c.id), Content: result})
	}
	out[0] = wireMessage{Role: "assistant", Content: string(resp.Text), ToolCalls: wc}
	return out
}
