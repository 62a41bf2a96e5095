package campaign

import (
	"os"
	"os/signal"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A process that is stopped (SIGSTOP, a terminal's Ctrl-Z SIGTSTP, a debugger) and continued
// receives SIGCONT. While qualrun was stopped the server kept running on the monotonic clock,
// so every request in flight then carries the pause in its timings (a TTFT or an inter-chunk gap
// the server did not cause), and the client sent nothing: the case's rows are not measurements
// of the server. watchPauses counts the SIGCONTs received while a serving case runs (Notify only
// observes SIGCONT; the kernel continues the process whatever a handler does).
func watchPauses() (count func() int64, stop func()) {
	ch := make(chan os.Signal, 1)
	var n atomic.Int64
	done := make(chan struct{})
	exited := make(chan struct{})
	signal.Notify(ch, unix.SIGCONT)
	go func() {
		defer close(exited)
		for {
			select {
			case <-ch:
				n.Add(1)
			case <-done:
				return
			}
		}
	}()
	return func() int64 {
			// A SIGCONT delivered just before the case ended may still be in the channel.
			select {
			case <-ch:
				n.Add(1)
			default:
			}
			return n.Load()
		}, func() {
			signal.Stop(ch)
			close(done)
			<-exited
		}
}
