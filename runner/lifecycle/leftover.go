package lifecycle

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Leftover is what remains of an earlier qualkit run whose owner (qualrun and its keeper) is no
// longer alive: a qualkit cgroup, processes whose environment carries qualkit's run markers, or
// both. A live run's processes and cgroups are never leftovers.
type Leftover struct {
	// RunID is the run the leftover belongs to ("" when nothing names it: an empty cgroup of a
	// command case, say).
	RunID string
	// Owner is the dead owner's "<pid>:<start ticks>".
	Owner string
	// Cgroup is the qualkit cgroup directory ("" when the processes were found by marker only).
	Cgroup string
	// Processes are the live processes, sorted by pid.
	Processes []LeftoverProcess
}

// LeftoverProcess is one live process of a leftover.
type LeftoverProcess struct {
	PID        int
	Comm       string
	startTicks uint64
}

// String names the leftover for a message.
func (l Leftover) String() string {
	var b strings.Builder
	id := l.RunID
	if id == "" {
		id = "(no run id)"
	}
	fmt.Fprintf(&b, "run %s (owner pid:start %s, no longer alive)", id, l.Owner)
	if l.Cgroup != "" {
		fmt.Fprintf(&b, ", cgroup %s", l.Cgroup)
	}
	if len(l.Processes) > 0 {
		parts := make([]string, 0, len(l.Processes))
		for _, p := range l.Processes {
			parts = append(parts, fmt.Sprintf("%d (%s)", p.PID, p.Comm))
		}
		fmt.Fprintf(&b, ", processes %s", strings.Join(parts, ", "))
	}
	return b.String()
}

var (
	selfTicksOnce sync.Once
	selfTicksVal  uint64
)

// selfTicks is this process's start time in clock ticks (field 22 of /proc/self/stat).
func selfTicks() uint64 {
	selfTicksOnce.Do(func() {
		if fs, err := newFS(); err == nil {
			if st, err := statOf(fs, os.Getpid()); err == nil {
				selfTicksVal = st.StartTicks
			}
		}
	})
	return selfTicksVal
}

// cgroupName is the name of this process's n-th cgroup: qualkit-<pid>.<start ticks>-<n>, so that
// a cgroup whose owner died can be told from a live run's, then -<run id> when the run id is a
// safe name (letters, digits, '.', '_', '-'; at most 160 bytes).
func cgroupName(n int64, runID string) string {
	name := fmt.Sprintf("qualkit-%d.%d-%d", os.Getpid(), selfTicks(), n)
	if safeRunID(runID) {
		name += "-" + runID
	}
	return name
}

func safeRunID(s string) bool {
	if s == "" || len(s) > 160 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// parseCgroupRunID returns the run id that ends a qualkit cgroup's name ("" when none).
func parseCgroupRunID(name string) string {
	rest, _ := strings.CutPrefix(name, "qualkit-")
	_, rest, _ = strings.Cut(rest, "-") // the owner
	_, run, _ := strings.Cut(rest, "-") // the sequence number
	return run
}

// parseCgroupOwner returns the "<pid>:<ticks>" owner encoded in a qualkit cgroup name.
func parseCgroupOwner(name string) (pid int, ticks uint64, ok bool) {
	rest, found := strings.CutPrefix(name, "qualkit-")
	if !found {
		return 0, 0, false
	}
	owner, _, found := strings.Cut(rest, "-")
	if !found {
		return 0, 0, false
	}
	ps, ts, hasTicks := strings.Cut(owner, ".")
	pid, err := strconv.Atoi(ps)
	if err != nil || pid < 1 {
		return 0, 0, false
	}
	if hasTicks {
		if ticks, err = strconv.ParseUint(ts, 10, 64); err != nil {
			return 0, 0, false
		}
	}
	return pid, ticks, true
}

// alive reports whether pid is a live process started at ticks (ticks 0: any start time, for
// cgroups named before start times were part of the name).
func alive(t procTable, pid int, ticks uint64) bool {
	p, ok := t[pid]
	return ok && !p.zombie() && (ticks == 0 || p.StartTicks == ticks)
}

func parseOwner(s string) (int, uint64, bool) {
	ps, ts, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, false
	}
	pid, err1 := strconv.Atoi(ps)
	ticks, err2 := strconv.ParseUint(ts, 10, 64)
	return pid, ticks, err1 == nil && err2 == nil && pid > 0
}

// liveKeepers lists the run ids and cgroups that a live keeper still guards: those are being
// cleaned up, not left over.
func liveKeepers(t procTable) (runs, cgroups map[string]bool) {
	runs, cgroups = map[string]bool{}, map[string]bool{}
	for pid, p := range t {
		if p.zombie() {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
		if !IsKeeper(args) || len(args) != 3 {
			continue
		}
		var cfg keeperConfig
		if json.Unmarshal([]byte(args[2]), &cfg) == nil {
			runs[cfg.RunID] = true
			if cfg.Cgroup != "" {
				cgroups[cfg.Cgroup] = true
			}
		}
	}
	return runs, cgroups
}

// FindLeftovers looks for what earlier qualkit runs on this host left behind: qualkit cgroups
// (qualkit-<pid>.<ticks>-<n>) under the cgroup v2 mount whose owner is dead and no keeper guards,
// and processes whose environment carries MarkerRunID with a dead owner (MarkerOwner). It reads
// /proc and the cgroup tree only. Runs that are alive, or whose keeper is still cleaning up, are
// never reported.
func FindLeftovers() ([]Leftover, error) {
	fsys, err := newFS()
	if err != nil {
		return nil, err
	}
	all, err := scanProcs(fsys)
	if err != nil {
		return nil, err
	}
	keptRuns, keptCgroups := liveKeepers(all)
	byKey := map[string]*Leftover{}
	var order []string
	add := func(key string, l Leftover) *Leftover {
		if x, ok := byKey[key]; ok {
			return x
		}
		byKey[key] = &l
		order = append(order, key)
		return byKey[key]
	}
	claimed := map[int]bool{}
	if mount, _, err := cgroup2Mount(); err == nil {
		_ = filepath.WalkDir(mount, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.IsDir() {
				return nil
			}
			if strings.Count(strings.TrimPrefix(path, mount), "/") > 8 {
				return filepath.SkipDir
			}
			pid, ticks, ok := parseCgroupOwner(d.Name())
			if !ok {
				return nil
			}
			if alive(all, pid, ticks) || keptCgroups[path] {
				return filepath.SkipDir
			}
			l := add("cg:"+path, Leftover{Cgroup: path, Owner: fmt.Sprintf("%d:%d", pid, ticks), RunID: parseCgroupRunID(d.Name())})
			for _, p := range (&cgroup{dir: path}).pids() {
				if info, ok := all[p]; ok && !info.zombie() {
					claimed[p] = true
					l.Processes = append(l.Processes, LeftoverProcess{PID: p, Comm: info.Comm, startTicks: info.StartTicks})
					if l.RunID == "" {
						if run, _, ok := processMarkers(p); ok {
							l.RunID = run
						}
					}
				}
			}
			return filepath.SkipDir
		})
	}
	self := os.Getpid()
	for pid, p := range all {
		if pid == self || p.zombie() || claimed[pid] {
			continue
		}
		run, owner, ok := processMarkers(pid)
		if !ok || keptRuns[run] {
			continue
		}
		opid, oticks, ok := parseOwner(owner)
		if ok && alive(all, opid, oticks) {
			continue
		}
		l := add("run:"+run+"/"+owner, Leftover{RunID: run, Owner: owner})
		l.Processes = append(l.Processes, LeftoverProcess{PID: pid, Comm: p.Comm, startTicks: p.StartTicks})
	}
	out := make([]Leftover, 0, len(order))
	for _, k := range order {
		l := *byKey[k]
		sort.Slice(l.Processes, func(i, j int) bool { return l.Processes[i].PID < l.Processes[j].PID })
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].RunID+out[i].Cgroup < out[j].RunID+out[j].Cgroup })
	return out, nil
}

// Reap removes a leftover: SIGKILL to each of its processes (re-checked by start time right
// before the signal), cgroup.kill, a bounded wait, and the cgroup's removal. It returns what could
// not be removed.
func (l Leftover) Reap() error {
	fsys, err := newFS()
	if err != nil {
		return err
	}
	for _, p := range l.Processes {
		if cur, err := statOf(fsys, p.PID); err == nil && cur.StartTicks == p.startTicks {
			_ = unix.Kill(p.PID, unix.SIGKILL)
		}
	}
	if l.Cgroup != "" {
		_ = (&cgroup{dir: l.Cgroup}).kill()
	}
	deadline := time.Now().Add(KillWait)
	var left []int
	for {
		left = left[:0]
		for _, p := range l.Processes {
			if cur, err := statOf(fsys, p.PID); err == nil && cur.StartTicks == p.startTicks && !cur.zombie() {
				left = append(left, p.PID)
			}
		}
		if l.Cgroup != "" {
			left = append(left, (&cgroup{dir: l.Cgroup}).pids()...)
		}
		if len(left) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(pollEvery)
	}
	if len(left) > 0 {
		return fmt.Errorf("reap %s: processes %v survived SIGKILL", l, left)
	}
	if l.Cgroup != "" {
		if err := removeCgroupDir(l.Cgroup); err != nil {
			return fmt.Errorf("reap %s: %w", l, err)
		}
	}
	return nil
}
