package cliapp

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// InterruptSignals are the signals both CLIs treat as an interruption: a user's Ctrl-C, a service
// manager's or CI runner's SIGTERM, an ssh session's SIGHUP and a terminal's SIGQUIT (Ctrl-\).
var InterruptSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// SignalName is a signal's name as the kernel spells it ("SIGTERM").
func SignalName(s os.Signal) string {
	if n, ok := s.(syscall.Signal); ok {
		if name := unix.SignalName(n); name != "" {
			return name
		}
	}
	return s.String()
}

// NotifyInterrupt returns a context that the first interrupt signal cancels with cause(signal)
// as its cause. Every later signal goes to again (nil: caught and dropped, the interruption being
// already under way). stop ends the watch and cancels the context.
func NotifyInterrupt(parent context.Context, cause func(os.Signal) error, again func(os.Signal)) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, InterruptSignals...)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			cancel(cause(sig))
		case <-done:
			return
		}
		for {
			select {
			case sig := <-ch:
				if again != nil {
					again(sig)
				}
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
