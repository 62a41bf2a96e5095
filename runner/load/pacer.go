package load

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Open-loop arrivals are paced by clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) on a locked OS
// thread with a 1 ns timer slack, not by Go timers: the Go runtime sleeps in epoll_wait, whose
// timeout is whole milliseconds, so a time.Timer fires up to a millisecond late (the timer
// quantization that made other load generators under-deliver at high rates). An absolute
// deadline also keeps one late wake-up from delaying every later arrival.

// pacerSlice bounds one sleep, so that a cancelled context ends the wait promptly.
const pacerSlice = 20 * time.Millisecond

// monoAnchor pairs a time.Time with the CLOCK_MONOTONIC reading taken at the same instant, so
// that a time.Time converts to an absolute CLOCK_MONOTONIC deadline (Go's monotonic clock is
// CLOCK_MONOTONIC on Linux: the two do not drift).
type monoAnchor struct {
	t  time.Time
	ns int64
}

var anchor = sync.OnceValue(func() monoAnchor {
	best, width := monoAnchor{}, time.Duration(1<<62)
	for range 5 {
		var ts unix.Timespec
		t1 := time.Now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
			return monoAnchor{t: t1, ns: -1}
		}
		if w := time.Since(t1); w < width {
			width, best = w, monoAnchor{t: t1.Add(w / 2), ns: ts.Nano()}
		}
	}
	return best
})

// MonotonicNanos converts t (carrying a monotonic reading) to CLOCK_MONOTONIC nanoseconds, the
// clock other processes on the host (qualsim's ground-truth log) stamp with; -1 when the clock
// cannot be read.
func MonotonicNanos(t time.Time) int64 {
	a := anchor()
	if a.ns < 0 {
		return -1
	}
	return a.ns + int64(t.Sub(a.t))
}

// pacer sleeps until absolute deadlines on the calling goroutine's (locked) thread.
type pacer struct {
	precise bool
	slack   int // the thread's timer slack before
	unprocs func()
}

// startPacer locks the calling goroutine to its thread (adding a P for it, see addProcs) and sets
// the thread's timer slack to 1 ns; stop undoes all three.
func startPacer() *pacer {
	p := &pacer{precise: anchor().ns >= 0, unprocs: addProcs(1)}
	runtime.LockOSThread()
	if p.precise {
		p.slack, _ = unix.PrctlRetInt(unix.PR_GET_TIMERSLACK, 0, 0, 0, 0)
		unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0)
	}
	return p
}

func (p *pacer) stop() {
	if p.precise {
		unix.Prctl(unix.PR_SET_TIMERSLACK, uintptr(max(p.slack, 0)), 0, 0, 0) // 0: the default
	}
	runtime.UnlockOSThread()
	p.unprocs()
}

// until sleeps until at (or returns ctx's error).
func (p *pacer) until(ctx context.Context, at time.Time) error {
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		left := time.Until(at)
		if left <= 0 {
			return nil
		}
		target := at
		if left > pacerSlice {
			target = time.Now().Add(pacerSlice)
		}
		if !p.precise {
			time.Sleep(time.Until(target))
			continue
		}
		ts := unix.NsecToTimespec(MonotonicNanos(target))
		if err := unix.ClockNanosleep(unix.CLOCK_MONOTONIC, unix.TIMER_ABSTIME, &ts, nil); err != nil && !errors.Is(err, unix.EINTR) {
			p.precise = false
		}
	}
}
