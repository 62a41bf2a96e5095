package bench

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The benchmark shares its host with whatever else runs there. Each run therefore measures how
// much CPU the rest of the host used while it ran (busy time in /proc/stat: user, nice, system
// and steal, minus what qualsim, the reader and this process used); a run during which that exceeds
// maxForeign of the host's capacity is thrown away and repeated, up to maxAttempts times (the
// report says how many were repeated, and how many kept a disturbed run after the last attempt).
const (
	maxForeign  = 0.10
	maxAttempts = 6
	userHZ      = 100 // the unit of /proc CPU times (USER_HZ)
)

// hostBusy is the host's busy CPU time so far.
func hostBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := bytes.Cut(b, []byte{'\n'})
	f := strings.Fields(string(line))
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	// user nice system idle iowait irq softirq steal: idle and iowait are not busy, and interrupt
	// time is left out because the benchmark's own loopback traffic is most of it (the kernel
	// charges softirq network processing to no process).
	for i, v := range f[1:9] {
		if i == 3 || i == 4 || i == 5 || i == 6 {
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / userHZ
}

// procCPU is a running process's user + system time.
func procCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / userHZ
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// quietness counts the runs repeated because the host was busy.
type quietness struct{ repeated, disturbed int }

// measure runs fn (which returns the CPU its own child processes used, server excluded) until a
// run finds the host quiet enough; server is the pid of the server it talks to.
func (q *quietness) measure(t *testing.T, what string, server int, fn func() time.Duration) {
	t.Helper()
	for attempt := 1; ; attempt++ {
		busy0, srv0, self0, start := hostBusy(), procCPU(server), selfCPU(), time.Now()
		children := fn()
		wall := time.Since(start)
		ours := children + procCPU(server) - srv0 + selfCPU() - self0
		foreign := (hostBusy() - busy0 - ours).Seconds() / (wall.Seconds() * float64(runtime.NumCPU()))
		if foreign <= maxForeign {
			return
		}
		if attempt == maxAttempts {
			q.disturbed++
			t.Logf("%s: the host was busy (%.0f%% of its CPU used by others) in every attempt; keeping the last", what, foreign*100)
			return
		}
		q.repeated++
		t.Logf("%s: the host was busy (%.0f%% of its CPU used by others); repeating", what, foreign*100)
		time.Sleep(time.Duration(attempt) * time.Second) // let someone else's burst pass
	}
}
