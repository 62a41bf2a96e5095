package load

import (
	"context"
	"sync"
	"sync/atomic"
)

// The measured requests of a TracePlan row are built (prompt synthesised, body encoded and
// digested) on a goroutine of their own, ahead of the dispatcher that sends them: at most
// aheadRequests requests, and aheadBytes of bodies past the first, built and not yet taken. A
// row's memory is thus what is in flight plus this window, not its requests × their length. The
// window covers the largest trace bursts (Mooncake's: 28 arrivals at one instant) many times
// over, so a builder that keeps up never makes the dispatcher wait; one that falls behind makes
// it wait in next, and the request leaves late by that wait, which its t_send − t_sched records
// (the fidelity judgement sees it: nothing hides a slow builder).
const (
	aheadRequests = 256
	aheadBytes    = 64 << 20
)

// lookahead is a row's request builder (see aheadRequests).
type lookahead struct {
	ctx    context.Context
	ch     chan builtRequest
	filled chan struct{} // closed once the window first filled, or every request was built
	done   chan struct{} // closed when the builder returned
	stop   context.CancelFunc

	// waits counts the requests next had to wait for (the builder was behind).
	waits atomic.Int64

	mu    sync.Mutex
	cond  *sync.Cond
	bytes int // bodies built and not yet taken
}

type builtRequest struct {
	q   *request
	err error
}

// startLookahead builds requests 0..n-1 with build, in order, until ctx is done or close.
func startLookahead(ctx context.Context, n int, build func(k int) (request, error)) *lookahead {
	return startLookaheadSized(ctx, n, build, aheadRequests, aheadBytes)
}

func startLookaheadSized(ctx context.Context, n int, build func(k int) (request, error), window, maxBytes int) *lookahead {
	ctx, stop := context.WithCancel(ctx)
	la := &lookahead{ctx: ctx, ch: make(chan builtRequest, window), filled: make(chan struct{}), done: make(chan struct{}), stop: stop}
	la.cond = sync.NewCond(&la.mu)
	context.AfterFunc(ctx, func() {
		la.mu.Lock()
		la.cond.Broadcast()
		la.mu.Unlock()
	})
	go la.run(n, build, window, maxBytes)
	return la
}

func (la *lookahead) run(n int, build func(int) (request, error), window, maxBytes int) {
	defer close(la.done)
	var fill sync.Once
	defer fill.Do(func() { close(la.filled) })
	for k := range n {
		q, err := build(k)
		la.mu.Lock()
		for la.bytes > 0 && la.bytes+len(q.body) > maxBytes && la.ctx.Err() == nil {
			fill.Do(func() { close(la.filled) })
			la.cond.Wait()
		}
		la.bytes += len(q.body)
		la.mu.Unlock()
		if len(la.ch) == window {
			fill.Do(func() { close(la.filled) })
		}
		select {
		case la.ch <- builtRequest{q: &q, err: err}:
		case <-la.ctx.Done():
			return
		}
		if err != nil {
			return
		}
	}
}

// wait returns once the builder has filled its window (or built every request), or ctx is done:
// so the row starts with requests ready.
func (la *lookahead) wait() {
	select {
	case <-la.filled:
	case <-la.ctx.Done():
	}
}

// next takes the next built request (k is its position, for openLoop's signature): at once when
// the builder is ahead, else when it is built. nil when the lookahead was stopped first.
func (la *lookahead) next(int) (*request, error) {
	if la.ctx.Err() != nil {
		return nil, nil
	}
	var b builtRequest
	select {
	case b = <-la.ch:
	default:
		la.waits.Add(1)
		select {
		case b = <-la.ch:
		case <-la.ctx.Done():
			return nil, nil
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	la.mu.Lock()
	la.bytes -= len(b.q.body)
	la.cond.Signal()
	la.mu.Unlock()
	return b.q, nil
}

// close stops the builder and waits for it.
func (la *lookahead) close() {
	la.stop()
	<-la.done
}
