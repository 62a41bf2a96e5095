package driver

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// GuardArg is the hidden first argument that turns the calling binary into a driver guard. The
// runner starts the guard by re-executing its own binary (/proc/self/exe) with it, in a new user
// and network namespace; the binary's main must hand such a process to GuardMain before anything
// else (qualrun.Main does; so must the TestMain of every test binary that runs drivers).
const GuardArg = "__qualkit-driver-guard-v1__"

// The descriptors the runner passes to the guard (exec.Cmd.ExtraFiles start at 3).
const (
	fdExecutable = 3 // the worker executable, opened O_NOFOLLOW and hashed by the runner
	fdScript     = 4 // a sealed memfd holding exactly the hashed script bytes
	fdReport     = 5 // guard -> runner: the probe (one JSON line), then an error line or EOF at exec
	fdControl    = 6 // runner -> guard: "go\n" once the gate exists; EOF means stop
)

// Guard exit codes (before the worker exists; the runner learns the reason from the report pipe).
const (
	guardRefused     = 125 // misuse, probe failed, told to stop, gate invalid
	guardHashChanged = 126 // the executable or script bytes differ from what the runner hashed
	guardExecFailed  = 127 // execve itself failed
)

// guardConfig is what the runner tells the guard (argv[2], JSON).
type guardConfig struct {
	// CanaryPort is a port the runner listens on in the host's network namespace; the guard must not reach it.
	CanaryPort int `json:"canary_port"`
	// Gate is the start gate path; checked again by the guard before exec.
	Gate string `json:"gate"`
	// ExecutableDigest and ScriptDigest are what the runner hashed; re-checked from the descriptors.
	ExecutableDigest string `json:"executable_digest"`
	ScriptDigest     string `json:"script_digest"`
	// Argv is the worker's argv: [executable path, /proc/self/fd/4, args...].
	Argv []string `json:"argv"`
	// ProbeTimeoutMs bounds each network probe.
	ProbeTimeoutMs int64 `json:"probe_timeout_ms"`
}

// Probe is what the guard observed inside the namespaces before the gate opened.
type Probe struct {
	// Interfaces are the network interfaces visible inside, sorted; exactly ["lo"] passes.
	Interfaces []string `json:"interfaces"`
	// OutsideUnreachable: a TCP connection to 192.0.2.1:80 (TEST-NET-1) failed.
	OutsideUnreachable bool `json:"outside_unreachable"`
	// LoopbackBind: listening on 127.0.0.1:0 and connecting to it worked.
	LoopbackBind bool `json:"loopback_bind"`
	// HostLoopbackUnreachable: the runner's listener on the host's 127.0.0.1 could not be reached.
	HostLoopbackUnreachable bool `json:"host_loopback_unreachable"`
	// Problems say what went wrong, for messages.
	Problems []string `json:"problems"`
}

// passed reports whether the probe proves a private network with only loopback.
func (p *Probe) passed() bool {
	return len(p.Interfaces) == 1 && p.Interfaces[0] == "lo" && p.OutsideUnreachable && p.LoopbackBind && p.HostLoopbackUnreachable
}

// failures describes what the probe did not prove.
func (p *Probe) failures() []string {
	var out []string
	if len(p.Interfaces) != 1 || p.Interfaces[0] != "lo" {
		out = append(out, fmt.Sprintf("interfaces %v, want exactly [lo]", p.Interfaces))
	}
	if !p.OutsideUnreachable {
		out = append(out, "192.0.2.1:80 was reachable")
	}
	if !p.LoopbackBind {
		out = append(out, "listening on 127.0.0.1:0 inside did not work")
	}
	if !p.HostLoopbackUnreachable {
		out = append(out, "the runner's listener on the host's loopback was reachable")
	}
	return append(out, p.Problems...)
}

// IsGuard reports whether args (os.Args) start a driver guard.
func IsGuard(args []string) bool { return len(args) >= 2 && args[1] == GuardArg }

// GuardMain is the guard: it runs in the process the runner started in a new user namespace (this
// uid mapped to root) and a new network namespace, before any worker code. It brings loopback up,
// probes the network, reports the probe to the runner, waits for the runner's go (sent only after
// the start gate exists), checks the gate, re-hashes the executable and script descriptors, drops
// every capability (no_new_privs, an empty bounding set, SECBIT_NOROOT), and execs the worker
// through /proc/self/fd/3, so exactly the hashed bytes run. It returns only on failure, with an
// exit code; the reason goes to the runner over the report pipe and to stderr (the worker log).
//
// Run by hand, or with descriptors 3 to 6 not set up by the runner, it refuses to do anything.
func GuardMain(args []string) int {
	// Capabilities, securebits and no_new_privs are per thread; the exec happens on this one.
	runtime.LockOSThread()
	report := os.NewFile(fdReport, "report")
	fail := func(code int, format string, a ...any) int {
		msg := fmt.Sprintf("qualkit driver guard: "+format, a...)
		fmt.Fprintln(os.Stderr, msg)
		if report != nil {
			_, _ = report.Write([]byte(strings.ReplaceAll(msg, "\n", " ") + "\n"))
		}
		return code
	}
	const byHand = "an internal entry point of the evidence drivers, started by the runner, never by hand"
	if !IsGuard(args) || len(args) != 3 || len(args[2]) > maxGuardConfig {
		report = nil
		return fail(guardRefused, "%s", byHand)
	}
	for fd, want := range map[int]uint32{fdExecutable: unix.S_IFREG, fdScript: unix.S_IFREG, fdReport: unix.S_IFIFO, fdControl: unix.S_IFIFO} {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != want {
			report = nil
			return fail(guardRefused, "%s (descriptor %d is not what the runner passes); refusing to run", byHand, fd)
		}
	}
	var cfg guardConfig
	if err := json.Unmarshal([]byte(args[2]), &cfg); err != nil || len(cfg.Argv) < 2 {
		return fail(guardRefused, "bad configuration")
	}
	if initialUserNamespace() {
		return fail(guardRefused, "not in a new user namespace; refusing to run the worker")
	}
	p := probe(cfg)
	line, _ := json.Marshal(p)
	if _, err := report.Write(append(line, '\n')); err != nil {
		return guardRefused
	}
	if !p.passed() {
		return guardRefused
	}
	control := os.NewFile(fdControl, "control")
	buf := make([]byte, 4)
	n, _ := readFull(control, buf)
	control.Close()
	if string(buf[:n]) != "go\n" {
		return guardRefused // the runner decided not to open the gate
	}
	if err := checkGate(cfg.Gate); err != nil {
		return fail(guardRefused, "%v", err)
	}
	for _, c := range []struct {
		fd   int
		want string
		what string
	}{{fdExecutable, cfg.ExecutableDigest, "executable"}, {fdScript, cfg.ScriptDigest, "script"}} {
		got, err := digestFD(c.fd)
		if err != nil {
			return fail(guardHashChanged, "re-hash the %s: %v", c.what, err)
		}
		if got != c.want {
			return fail(guardHashChanged, "the %s changed after it was hashed: now %s, hashed %s", c.what, got, c.want)
		}
	}
	if err := dropPrivileges(); err != nil {
		return fail(guardRefused, "drop capabilities: %v", err)
	}
	// The report pipe closes at a successful exec (EOF tells the runner the worker runs); the
	// executable and script descriptors stay open for the worker (the script is /proc/self/fd/4).
	unix.CloseOnExec(fdReport)
	err := unix.Exec(fmt.Sprintf("/proc/self/fd/%d", fdExecutable), cfg.Argv, os.Environ())
	return fail(guardExecFailed, "exec /proc/self/fd/%d (%s): %v", fdExecutable, cfg.Argv[0], err)
}

const maxGuardConfig = 1 << 20

func readFull(f *os.File, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := f.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// initialUserNamespace reports whether this process is in the host's user namespace (identity
// map of every uid): the guard must never run the worker there.
func initialUserNamespace() bool {
	b, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295"
}

// probe brings loopback up and checks what the network namespace allows.
func probe(cfg guardConfig) *Probe {
	p := &Probe{Interfaces: []string{}, Problems: []string{}}
	timeout := time.Duration(cfg.ProbeTimeoutMs) * time.Millisecond
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if err := loopbackUp(); err != nil {
		p.Problems = append(p.Problems, "bring lo up: "+err.Error())
	}
	ifs, err := net.Interfaces()
	if err != nil {
		p.Problems = append(p.Problems, "list interfaces: "+err.Error())
	}
	for _, i := range ifs {
		p.Interfaces = append(p.Interfaces, i.Name)
	}
	sort.Strings(p.Interfaces)
	if c, err := net.DialTimeout("tcp", "192.0.2.1:80", timeout); err == nil {
		c.Close()
	} else {
		p.OutsideUnreachable = true
	}
	// The host check comes before the bind check, so the probe's own listener cannot answer it.
	if cfg.CanaryPort > 0 {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(cfg.CanaryPort), timeout); err == nil {
			c.Close()
		} else {
			p.HostLoopbackUnreachable = true
		}
	} else {
		p.Problems = append(p.Problems, "no host loopback listener to probe")
	}
	if err := loopbackWorks(timeout); err != nil {
		p.Problems = append(p.Problems, "loopback: "+err.Error())
	} else {
		p.LoopbackBind = true
	}
	return p
}

// loopbackUp sets IFF_UP on lo (CAP_NET_ADMIN in the namespace's user namespace, which the guard has).
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return err
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	return unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr)
}

// loopbackWorks listens on 127.0.0.1:0, connects, and exchanges one byte.
func loopbackWorks(timeout time.Duration) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		_, err = c.Write([]byte{'q'})
		done <- err
	}()
	c, err := net.DialTimeout("tcp", ln.Addr().String(), timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	b := make([]byte, 1)
	if _, err := c.Read(b); err != nil || b[0] != 'q' {
		return fmt.Errorf("no echo from %s: %v", ln.Addr(), err)
	}
	return <-done
}

// checkGate applies the worker's gate rules: a regular single-link file, mode 0600, owned by
// this uid, payload exactly "go\n".
func checkGate(path string) error {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return fmt.Errorf("start gate %s: %w", path, err)
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return fmt.Errorf("start gate %s: not a regular file", path)
	case st.Nlink != 1:
		return fmt.Errorf("start gate %s: %d links", path, st.Nlink)
	case st.Mode&0o7777 != 0o600:
		return fmt.Errorf("start gate %s: mode %04o, want 0600", path, st.Mode&0o7777)
	case int(st.Uid) != os.Getuid():
		return fmt.Errorf("start gate %s: owned by uid %d", path, st.Uid)
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("start gate %s: %w", path, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, len(GatePayload)+1)
	n, _ := unix.Read(fd, buf)
	if !bytes.Equal(buf[:max(n, 0)], []byte(GatePayload)) {
		return fmt.Errorf("start gate %s: wrong payload", path)
	}
	return nil
}

// digestFD hashes a descriptor from offset 0 with pread (the offset is shared with the runner's copy).
func digestFD(fd int) (string, error) {
	h := sha256.New()
	buf := make([]byte, 1<<20)
	var off int64
	for {
		n, err := unix.Pread(fd, buf, off)
		if n > 0 {
			h.Write(buf[:n])
			off += int64(n)
		}
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			return "", err
		}
		if n == 0 {
			return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
		}
	}
}

// securebits (linux/securebits.h).
const (
	secbitNoroot       = 1 << 0
	secbitNorootLocked = 1 << 1
)

// dropPrivileges makes the worker run with no capability at all, although it is uid 0 of its
// user namespace: no_new_privs, SECBIT_NOROOT (root gains nothing at exec), no ambient
// capabilities and an empty bounding set.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, secbitNoroot|secbitNorootLocked, 0, 0, 0); err != nil {
		return fmt.Errorf("securebits: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	last := 63
	if b, err := os.ReadFile("/proc/sys/kernel/cap_last_cap"); err == nil {
		if n, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
			last = n
		}
	}
	for c := 0; c <= last; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// readProbe reads the guard's probe line (bounded).
func readProbe(r *bufio.Reader) (*Probe, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, errors.New("probe report too long")
		}
		return nil, err
	}
	var p Probe
	if err := json.Unmarshal(line, &p); err != nil {
		return nil, fmt.Errorf("probe report: %w", err)
	}
	return &p, nil
}
