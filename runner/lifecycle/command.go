package lifecycle

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Command is one case command: an argv run in its own process group with a closed environment,
// a deadline, and capped output captures.
type Command struct {
	Argv []string
	// Dir is the working directory.
	Dir string
	// Env is the complete environment (nothing is inherited).
	Env []string
	// Timeout bounds the run on the monotonic clock.
	Timeout time.Duration
	// Grace is how long the group gets between SIGTERM and SIGKILL on timeout or cancellation.
	Grace time.Duration
	// StdoutPath and StderrPath receive the captures; both are created exclusively.
	StdoutPath, StderrPath string
	// CaptureLimit caps each capture in bytes; output beyond it is drained and discarded.
	CaptureLimit int64
	// Keeper guards the group with a keeper (see Options.Keeper) that stops it if this process
	// dies; KeeperArgv0 and RunID as in Options.
	Keeper      bool
	KeeperArgv0 string
	RunID       string
}

// CommandResult is what a command run observed.
type CommandResult struct {
	// ExitCode is the exit code, or 128+signal when a signal ended the leader.
	ExitCode int
	// Signal names the signal that ended the leader, or "".
	Signal string
	// TimedOut is true when the deadline passed; Cancelled when ctx ended first.
	TimedOut, Cancelled bool
	// StdoutTruncated and StderrTruncated report output beyond CaptureLimit.
	StdoutTruncated, StderrTruncated bool
	// Residue lists descendants still running after the leader exited (they were killed).
	Residue  []contract.ResidueProcess
	Duration time.Duration
	// Unsupported lists tracking the host could not provide (cgroup).
	Unsupported []string
}

// RunCommand runs c to completion. Descendants that outlive the leader (after EscapeSettle) are
// residue: recorded and killed. The error is non-nil only when the command could not be started.
func RunCommand(ctx context.Context, c Command) (*CommandResult, error) {
	if len(c.Argv) == 0 {
		return nil, errors.New("run command: empty argv")
	}
	prog, err := resolveProgram(c.Argv[0], c.Dir, c.Env)
	if err == nil {
		err = resolvedShellEval(prog, c.Argv)
	}
	if err != nil {
		return nil, err
	}
	outF, err := createLog(c.StdoutPath)
	if err != nil {
		return nil, err
	}
	defer outF.Close()
	errF, err := createLog(c.StderrPath)
	if err != nil {
		return nil, err
	}
	defer errF.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, err
	}
	defer devnull.Close()
	// Plain pipes, not cmd.StdoutPipe: Wait must return when the leader exits even if a descendant
	// still holds the write ends.
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer outR.Close()
	errR, errW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return nil, err
	}
	defer errR.Close()
	cmd := &exec.Cmd{Path: prog, Args: c.Argv, Dir: c.Dir, Env: c.Env, Stdin: devnull, Stdout: outW, Stderr: errW}
	var guard *guardPlan
	if c.Keeper {
		guard = &guardPlan{argv0: c.KeeperArgv0, runID: c.RunID, grace: c.Grace}
	}
	g, err := startGroup(cmd, guard)
	outW.Close()
	errW.Close()
	if err != nil {
		return nil, err
	}
	res := &CommandResult{Unsupported: g.Unsupported()}
	var drained sync.WaitGroup
	drained.Add(2)
	go func() { defer drained.Done(); res.StdoutTruncated = capture(outF, outR, c.CaptureLimit) }()
	go func() { defer drained.Done(); res.StderrTruncated = capture(errF, errR, c.CaptureLimit) }()
	timer := time.NewTimer(c.Timeout)
	defer timer.Stop()
	select {
	case <-g.Exited():
	case <-timer.C:
		res.TimedOut = true
	case <-ctx.Done():
		res.Cancelled = true
	}
	if res.TimedOut || res.Cancelled {
		g.Terminate(c.Grace)
	}
	<-g.Exited()
	if why := g.keeper.lost("the command"); why != "" {
		res.Unsupported = append(res.Unsupported, why)
	}
	res.Residue = g.Residue()
	if len(res.Residue) == 0 {
		res.Residue = nil
	}
	drainDone := make(chan struct{})
	go func() { drained.Wait(); close(drainDone) }()
	select {
	case <-drainDone: // every writer is gone
	case <-time.After(KillWait):
		outR.Close() // a writer outside the tree: stop reading rather than hang
		errR.Close()
		<-drainDone
	}
	res.Duration = time.Since(g.Started())
	res.ExitCode, res.Signal = g.ExitCode()
	return res, nil
}

// capture copies r into w up to limit bytes, drains the rest, and reports truncation.
func capture(w io.Writer, r io.Reader, limit int64) bool {
	n, _ := io.Copy(w, io.LimitReader(r, limit))
	extra, _ := io.Copy(io.Discard, r)
	return n >= limit && extra > 0
}
