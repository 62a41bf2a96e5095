package qualrun

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/qualkit/qualkit/runner/campaign"
	"golang.org/x/sys/unix"
)

// interruptSignals are the signals qualrun treats as an interruption: a user's Ctrl-C, a
// service manager's or CI runner's SIGTERM, an ssh session's SIGHUP and a terminal's SIGQUIT
// (Ctrl-\). Each stops traffic, shuts the server down and writes what happened.
var interruptSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// interruptContext returns a context that the first interrupt signal cancels, with a
// *campaign.Interruption naming the signal as its cause. Later signals are caught and dropped:
// the shutdown is already under way (SIGKILL still ends qualrun, and the server's keeper then
// stops the server).
func interruptContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, interruptSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			name := sig.String()
			if s, ok := sig.(syscall.Signal); ok {
				name = unix.SignalName(s)
			}
			cancel(&campaign.Interruption{Signal: name})
		case <-done:
			return
		}
		for {
			select {
			case <-ch:
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel(context.Canceled)
	}
}
