package qualrun

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// warnLeftovers names, on stderr, what earlier qualkit runs on this host left behind (a dead
// qualrun's server, cgroup), with the command that removes it. It never touches a live run.
func warnLeftovers(stderr io.Writer) {
	found, err := lifecycle.FindLeftovers()
	if err != nil {
		return
	}
	for _, l := range found {
		how := "qualrun serve --reap"
		if l.RunID != "" {
			how += " --run-id " + l.RunID
		}
		cliapp.Fprintf(stderr, "qualrun: WARNING leftover of an earlier qualkit run: %s; remove it with: %s\n", l, how)
	}
}

// reap removes the leftovers of dead qualkit runs (only runID's when it is not empty).
func reap(runID string, stdout io.Writer) error {
	found, err := lifecycle.FindLeftovers()
	if err != nil {
		return fmt.Errorf("find leftovers: %w", err)
	}
	n := 0
	var failed []error
	for _, l := range found {
		if runID != "" && l.RunID != runID {
			continue
		}
		n++
		if err := l.Reap(); err != nil {
			failed = append(failed, err)
			continue
		}
		cliapp.Fprintf(stdout, "reaped %s\n", l)
	}
	if n == 0 {
		fmt.Fprintln(stdout, "no leftovers of earlier qualkit runs")
	}
	if len(failed) > 0 {
		return fmt.Errorf("%w: %v", exitcode.ErrRejected, errors.Join(failed...))
	}
	return nil
}

// interruptName names the signal that interrupted ctx.
func interruptName(ctx context.Context) string {
	var in *campaign.Interruption
	if errors.As(context.Cause(ctx), &in) {
		return in.Signal
	}
	return "an interrupt"
}
