package tools_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"
)

// cmdGone SECONDS PORT MARKER: within SECONDS, nothing listens on PORT, no live process has MARKER
// in its command line, and no keeper is alive for a run whose processes carried it: what a
// keeper must achieve after qualrun's death (the deadline is the keeper's, see
// lifecycle.KeeperDeadline).
func cmdGone(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: gone SECONDS PORT MARKER")
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	if err != nil {
		ts.Fatalf("bad seconds %q", args[0])
	}
	port, err := strconv.Atoi(args[1])
	if err != nil {
		ts.Fatalf("bad port %q", args[1])
	}
	start := time.Now()
	deadline := start.Add(time.Duration(secs * float64(time.Second)))
	for {
		left := residueOf(port, args[2])
		if len(left) == 0 {
			ts.Logf("gone after %.2f s", time.Since(start).Seconds())
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("after %s: %s", args[0], strings.Join(left, "; "))
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// residueOf lists listeners on port and live processes whose command line contains marker.
func residueOf(port int, marker string) []string {
	var out []string
	if l := listenersOn(port); len(l) > 0 {
		out = append(out, fmt.Sprintf("port %d has LISTEN sockets %v", port, l))
	}
	entries, _ := os.ReadDir("/proc")
	self := strconv.Itoa(os.Getpid())
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil || e.Name() == self {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		cmdline := strings.ReplaceAll(string(raw), "\x00", " ")
		if !strings.Contains(cmdline, marker) {
			continue
		}
		stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		out = append(out, fmt.Sprintf("process %s is alive: %s", e.Name(), cmdline))
	}
	return out
}

// cmdWaitFile SECONDS PATH...: wait until every PATH exists.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: waitfile SECONDS PATH...")
	}
	secs, err := strconv.ParseFloat(args[0], 64)
	if err != nil {
		ts.Fatalf("bad seconds %q", args[0])
	}
	deadline := time.Now().Add(time.Duration(secs * float64(time.Second)))
	for _, p := range args[1:] {
		for {
			matches, _ := filepath.Glob(ts.MkAbs(p))
			if len(matches) > 0 {
				break
			}
			if time.Now().After(deadline) {
				ts.Fatalf("%s does not exist after %s s", p, args[0])
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// cmdJSONLines MIN GLOB: every file GLOB matches holds only complete lines, each one JSON object
// of a request record, and together at least MIN of them.
func cmdJSONLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: jsonlines MIN GLOB")
	}
	min, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("bad count %q", args[0])
	}
	files, _ := filepath.Glob(ts.MkAbs(args[1]))
	if len(files) == 0 {
		ts.Fatalf("no file matches %s", args[1])
	}
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			ts.Fatalf("%v", err)
		}
		if len(b) > 0 && b[len(b)-1] != '\n' {
			ts.Fatalf("%s ends in a partial line", f)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<24)
		for sc.Scan() {
			var rec struct {
				Schema string `json:"schema"`
			}
			if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.Schema != "qualkit.request-record.v1" {
				ts.Fatalf("%s: line %d is not a request record: %v", f, n+1, err)
			}
			n++
		}
	}
	if n < min {
		ts.Fatalf("%d request records in %s, want at least %d", n, args[1], min)
	}
}

// cmdSignal SIG: send SIG (INT, TERM, HUP, QUIT, KILL, ...) to every background command started
// since the last wait (testscript's own kill knows only INT and KILL).
func cmdSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: signal SIG")
	}
	sig := unix.SignalNum("SIG" + strings.TrimPrefix(args[0], "SIG"))
	if sig == 0 {
		ts.Fatalf("unknown signal %q", args[0])
	}
	cmds := ts.BackgroundCmds()
	if len(cmds) == 0 {
		ts.Fatalf("no background command to signal")
	}
	for _, c := range cmds {
		if c.Process != nil {
			_ = c.Process.Signal(sig)
		}
	}
}

// cmdKillOwner: SIGKILL the keepers of every background command and then the commands
// themselves: qualrun and its keeper dying together (an OOM kill of the whole session), which
// leaves the server behind as a leftover.
func cmdKillOwner(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: killowner")
	}
	for _, c := range ts.BackgroundCmds() {
		if c.Process == nil {
			continue
		}
		entries, _ := os.ReadDir("/proc")
		want := fmt.Sprintf(`"owner_pid":%d,`, c.Process.Pid)
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			raw, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err == nil && strings.Contains(string(raw), lifecycle.KeeperArg) && strings.Contains(string(raw), want) {
				_ = unix.Kill(pid, unix.SIGKILL)
			}
		}
		_ = c.Process.Kill()
	}
}
