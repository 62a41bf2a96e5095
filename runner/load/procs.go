package load

import (
	"os"
	"runtime"
	"sync"
)

// A reactor or a pacer is a goroutine locked to an OS thread that blocks in a system call
// (epoll_wait, clock_nanosleep) so that the kernel wakes it directly. While it blocks, the Go
// runtime leaves its P attached to it; the scheduler takes the P back only when sysmon notices,
// which can take up to 20 ms once sysmon has backed off. On a two-core host a reactor and a pacer
// would hold both Ps, and every other goroutine (the requests' own) would wait for sysmon. So
// while they run, qualkit raises GOMAXPROCS by one per such thread, and lowers it again when they
// stop: the rest of the program keeps the parallelism it had.

var procs struct {
	sync.Mutex
	extra int // Ps added and not yet given back
	base  int // GOMAXPROCS before the first addition
}

// addProcs adds n Ps; the returned function gives them back (once).
func addProcs(n int) func() {
	if n <= 0 {
		return func() {}
	}
	procs.Lock()
	if procs.extra == 0 {
		procs.base = runtime.GOMAXPROCS(0)
	}
	procs.extra += n
	runtime.GOMAXPROCS(procs.base + procs.extra)
	procs.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			procs.Lock()
			defer procs.Unlock()
			procs.extra -= n
			switch {
			case procs.extra > 0:
				runtime.GOMAXPROCS(procs.base + procs.extra)
			case os.Getenv("GOMAXPROCS") == "":
				runtime.SetDefaultGOMAXPROCS() // back to the runtime's own (cgroup-aware) choice
			default:
				runtime.GOMAXPROCS(procs.base)
			}
		})
	}
}
