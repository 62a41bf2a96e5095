package campaign

import (
	"context"
	"errors"
	"testing"

	"github.com/qualkit/qualkit/runner/load"
)

// TestUntilCancelledReturnsOnSignal: a token synthesis that does not watch the context (synthetic
// and shared-prefix corpora) still lets preflight return as soon as the context is cancelled,
// with the cancellation's cause, while the synthesis is still running; and returns its result
// when it finishes first.
func TestUntilCancelledReturnsOnSignal(t *testing.T) {
	cause := errors.New("qualrun received SIGTERM during preflight")
	ctx, cancel := context.WithCancelCause(context.Background())
	release := make(chan struct{})
	defer close(release)
	started := make(chan struct{})
	go func() { <-started; cancel(cause) }()
	_, err := untilCancelled(ctx, func() ([]load.Prompt, error) {
		close(started)
		<-release // a synthesis that would run on
		return nil, nil
	})
	if !errors.Is(err, cause) {
		t.Fatalf("err = %v, want the cancellation cause", err)
	}
	ps, err := untilCancelled(context.Background(), func() ([]load.Prompt, error) { return []load.Prompt{{}}, nil })
	if err != nil || len(ps) != 1 {
		t.Fatalf("finished synthesis: %d prompts, %v", len(ps), err)
	}
}
