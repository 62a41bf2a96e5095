package campaign

import (
	"context"
	"errors"
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Interruption is the cause (context.Cause) a caller gives the campaign's context when a signal
// interrupts it; Run names the signal in the interrupted receipt.
type Interruption struct {
	// Signal is the signal's name, e.g. "SIGHUP".
	Signal string
}

func (i *Interruption) Error() string { return "interrupted by " + i.Signal }

// interruptSignal names what interrupted ctx: the signal of an *Interruption cause, else
// "context" (a caller's cancellation or deadline).
func interruptSignal(ctx context.Context) string {
	var in *Interruption
	if errors.As(context.Cause(ctx), &in) && in.Signal != "" {
		return in.Signal
	}
	return "context"
}

func (r *run) setPhase(phase string) {
	r.mu.Lock()
	r.phase = phase
	r.mu.Unlock()
}

// watchInterrupt remembers the phase the run was in when ctx was cancelled.
func (r *run) watchInterrupt(ctx context.Context) (stop func() bool) {
	r.setPhase("start")
	return context.AfterFunc(ctx, func() {
		r.mu.Lock()
		if r.atPhase == "" {
			r.atPhase = r.phase
		}
		r.mu.Unlock()
	})
}

// interrupted records the interruption and gives every case that did not run a skipped result
// that says so (a receipt lists every case of the variant it ran).
func (r *run) interrupted(ctx context.Context) {
	r.mu.Lock()
	phase := r.atPhase
	if phase == "" {
		phase = r.phase
	}
	r.mu.Unlock()
	r.interruption = &contract.Interruption{Signal: interruptSignal(ctx), Phase: phase}
	type key struct {
		id  string
		rep int64
	}
	ran := map[key]bool{}
	for _, res := range r.results {
		ran[key{res.ID, res.Repetition}] = true
	}
	p := r.p
	for rep := int64(0); rep < p.workload.Determinism.Repetitions; rep++ {
		for _, c := range p.variant.Cases {
			if !ran[key{c.ID, rep}] {
				res := failedResult(c, int(rep), fmt.Sprintf("not run: the campaign was interrupted by %s during %s", r.interruption.Signal, phase))
				res.Status = contract.StatusSkipped
				r.results = append(r.results, res)
			}
		}
	}
	r.notes = append(r.notes, clipString(fmt.Sprintf("interrupted by %s during %s: the results, request records and lifecycle record bind what happened up to then", r.interruption.Signal, phase), 2048))
}
