package lifecycle

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func command(t *testing.T, mode string, timeout time.Duration) Command {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	return Command{
		Argv: []string{self}, Dir: dir, Env: []string{serverEnv + "=" + mode},
		Timeout: timeout, Grace: 500 * time.Millisecond,
		StdoutPath: filepath.Join(dir, "stdout.log"), StderrPath: filepath.Join(dir, "stderr.log"),
		CaptureLimit: 1 << 20,
	}
}

func TestRunCommandCapturesOutputAndExitCode(t *testing.T) {
	c := command(t, "cmd-ok", 10*time.Second)
	res, err := RunCommand(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(c.StdoutPath)
	errOut, _ := os.ReadFile(c.StderrPath)
	if res.ExitCode != 0 || string(out) != "hello from the case\n" || string(errOut) != "a warning\n" || len(res.Residue) > 0 {
		t.Fatalf("result %+v stdout %q stderr %q", res, out, errOut)
	}
	c = command(t, "cmd-exit-3", 10*time.Second)
	if res, err = RunCommand(context.Background(), c); err != nil || res.ExitCode != 3 {
		t.Fatalf("exit-3: %+v %v", res, err)
	}
}

func TestRunCommandTruncatesAtTheCaptureLimit(t *testing.T) {
	c := command(t, "cmd-flood", 10*time.Second)
	c.CaptureLimit = 1000
	res, err := RunCommand(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(c.StdoutPath)
	if !res.StdoutTruncated || st.Size() != 1000 || res.ExitCode != 0 {
		t.Fatalf("truncated %v size %d exit %d", res.StdoutTruncated, st.Size(), res.ExitCode)
	}
}

func TestRunCommandTimeoutKillsTheGroup(t *testing.T) {
	c := command(t, "sleep", 300*time.Millisecond)
	start := time.Now()
	res, err := RunCommand(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.TimedOut || res.Signal == "" || time.Since(start) > 5*time.Second {
		t.Fatalf("result %+v after %s", res, time.Since(start))
	}
}

func TestRunCommandSetsidDescendantIsResidue(t *testing.T) {
	c := command(t, "cmd-setsid", 10*time.Second)
	start := time.Now()
	res, err := RunCommand(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Residue) != 1 || !res.Residue[0].Escaped {
		t.Fatalf("residue %+v", res.Residue)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("took %s: the leader's exit must not wait for the descendant's pipe", time.Since(start))
	}
	fs, _ := newFS()
	all, _ := scanProcs(fs)
	for pid, p := range all {
		if !p.zombie() && strings.Contains(p.Comm, "lifecycle") && p.PPID == os.Getpid() {
			t.Errorf("descendant %d still alive", pid)
		}
	}
}
