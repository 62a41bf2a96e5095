package lifecycle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/prometheus/procfs"
)

// procInfo is what the lifecycle needs of one process.
type procInfo struct {
	PID, PPID, PGID, Session int
	Comm                     string
	State                    string
	StartTicks               uint64
}

func (p procInfo) zombie() bool { return p.State == "Z" || p.State == "X" }

// procTable is one scan of /proc.
type procTable map[int]procInfo

func newFS() (procfs.FS, error) {
	fs, err := procfs.NewFS(procfs.DefaultMountPoint)
	if err != nil {
		return procfs.FS{}, fmt.Errorf("open /proc: %w", err)
	}
	return fs, nil
}

// scanProcs reads the stat of every process. Processes that vanish during the scan are skipped.
func scanProcs(fs procfs.FS) (procTable, error) {
	procs, err := fs.AllProcs()
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	t := procTable{}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil {
			continue // exited meanwhile
		}
		t[st.PID] = procInfo{PID: st.PID, PPID: st.PPID, PGID: st.PGRP, Session: st.Session, Comm: st.Comm, State: st.State, StartTicks: st.Starttime}
	}
	return t, nil
}

func statOf(fs procfs.FS, pid int) (procInfo, error) {
	p, err := fs.Proc(pid)
	if err != nil {
		return procInfo{}, err
	}
	st, err := p.Stat()
	if err != nil {
		return procInfo{}, err
	}
	return procInfo{PID: st.PID, PPID: st.PPID, PGID: st.PGRP, Session: st.Session, Comm: st.Comm, State: st.State, StartTicks: st.Starttime}, nil
}

// socketInodes returns the inodes of the sockets a process holds open.
func socketInodes(fs procfs.FS, pid int) map[uint64]bool {
	out := map[uint64]bool{}
	p, err := fs.Proc(pid)
	if err != nil {
		return out
	}
	targets, err := p.FileDescriptorTargets()
	if err != nil {
		return out
	}
	for _, t := range targets {
		if s, ok := strings.CutPrefix(t, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(s, "]"), 10, 64); err == nil {
				out[n] = true
			}
		}
	}
	return out
}

const tcpListen = 0x0A

// listeners returns the inodes of LISTEN sockets on port, from /proc/net/tcp and /proc/net/tcp6.
func listeners(fs procfs.FS, port int) ([]uint64, error) {
	var out []uint64
	// procfs suggests netlink (sock_diag) instead; /proc/net/tcp is what LIFECYCLE.md specifies,
	// works without CAP_NET_ADMIN and in every namespace we run in.
	//lint:ignore SA1019 see above
	for _, read := range []func() (procfs.NetTCP, error){fs.NetTCP, fs.NetTCP6} {
		rows, err := read()
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // no IPv6 on this host
			}
			return nil, fmt.Errorf("read /proc/net/tcp: %w", err)
		}
		for _, r := range rows {
			if r.St == tcpListen && int(r.LocalPort) == port {
				out = append(out, r.Inode)
			}
		}
	}
	return out, nil
}

// bootID reads the kernel's boot id, which with the start time ticks makes a process identity
// that survives pid reuse.
func bootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// tail returns at most n bytes from the end of a file, trimmed to whole lines where possible.
func tail(path string, n int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := st.Size() - n
	if off < 0 {
		off = 0
	}
	buf := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(buf, off); err != nil {
		return ""
	}
	if off > 0 {
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			buf = buf[i+1:]
		}
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(buf))
	sc.Buffer(make([]byte, 0, 64*1024), int(n)+1)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return strings.Join(lines, "\n")
}
