package qualverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

// ociFlags bound a pull in time; every command that takes an oci:// reference has them.
func ociFlags() []cli.Flag {
	d := oci.DefaultTransfer
	return []cli.Flag{
		&cli.DurationFlag{Name: "registry-timeout", Value: d.Timeout, Usage: "give up a pull of an oci:// reference after `DURATION` (0: no deadline)"},
		&cli.StringFlag{Name: "min-transfer-rate", Value: oci.FormatRate(d.MinRate), Usage: "cancel a registry request that moves less than `RATE` bytes per second (64KiB, 1MiB, 0: no minimum) over a --transfer-window"},
		&cli.DurationFlag{Name: "transfer-window", Value: d.Window, Usage: "the `DURATION` --min-transfer-rate is averaged over"},
	}
}

// transferFromFlags reads ociFlags.
func transferFromFlags(c *cli.Context) (oci.Transfer, error) {
	t := oci.Transfer{Timeout: c.Duration("registry-timeout"), Window: c.Duration("transfer-window")}
	rate, err := oci.ParseRate(c.String("min-transfer-rate"))
	if err != nil {
		return t, fmt.Errorf("%w: --min-transfer-rate: %v", exitcode.ErrUsage, err)
	}
	t.MinRate = rate
	if t.Timeout < 0 || (t.MinRate > 0 && t.Window <= 0) {
		return t, fmt.Errorf("%w: --registry-timeout must not be negative, and --transfer-window must be positive with a --min-transfer-rate", exitcode.ErrUsage)
	}
	return t, nil
}

// interruption is the cause of a context an interrupt signal (cliapp.InterruptSignals) cancelled:
// the pulled trees are removed and the command exits 130 (exitcode.Interrupted).
type interruption struct{ sig os.Signal }

func (i *interruption) Error() string { return "interrupted by " + cliapp.SignalName(i.sig) }

// pulls holds the temporary trees that oci:// arguments were pulled into, and the signal watch of
// the command; cleanup removes the trees and ends the watch.
type pulls struct {
	mu       sync.Mutex
	dirs     []string
	transfer oci.Transfer
	asJSON   bool
	stdout   io.Writer
	stderr   io.Writer
	ctx      context.Context
	stop     func()
}

// newPulls reads the transfer flags and replaces c.Context with one that the first interrupt
// signal cancels, so that a pull, and the verification after it, end on SIGINT or SIGTERM. The
// caller defers cleanup(&err).
func newPulls(c *cli.Context) (*pulls, error) {
	t, err := transferFromFlags(c)
	if err != nil {
		return nil, err
	}
	p := &pulls{transfer: t, asJSON: c.Bool("json"), stdout: c.App.Writer, stderr: c.App.ErrWriter}
	// A second signal while the first is being honoured (a step that does not watch the
	// context): remove the pulled trees and exit at once.
	ctx, stop := cliapp.NotifyInterrupt(c.Context, func(sig os.Signal) error { return &interruption{sig} }, func(sig os.Signal) {
		n := p.removeAll()
		cliapp.Fprintf(p.stderr, "qualverify: %s again; %d pulled trees removed\n", (&interruption{sig}).Error(), n)
		os.Exit(exitcode.Interrupted)
	})
	p.ctx, p.stop = ctx, stop
	c.Context = ctx
	return p, nil
}

// cleanup removes the pulled trees and ends the signal watch. When a signal interrupted the
// command, *err becomes exitcode.ErrInterrupted and stderr says so.
func (p *pulls) cleanup(err *error) {
	if p == nil {
		return
	}
	n := p.removeAll()
	var in *interruption
	if p.ctx != nil && errors.As(context.Cause(p.ctx), &in) {
		cliapp.Fprintf(p.stderr, "qualverify: %s; %d pulled trees removed\n", in, n)
		*err = fmt.Errorf("%w: %v", exitcode.ErrInterrupted, in)
	}
	if p.stop != nil {
		p.stop()
	}
}

// removeAll removes the pulled trees and returns how many there were.
func (p *pulls) removeAll() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.dirs {
		os.RemoveAll(d)
	}
	return len(p.dirs)
}

// refusal is the --json form of a pulled artifact that was refused.
type refusal struct {
	Artifact string `json:"artifact"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason"`
}

// refuse reports a refused artifact (on stdout: a line, or with --json an object) and returns the
// rejection (exit 1): a refusal is a finding, never silent.
func (p *pulls) refuse(arg string, err error) error {
	if p.asJSON {
		b, _ := json.MarshalIndent(refusal{Artifact: arg, Verdict: "refused", Reason: err.Error()}, "", "  ")
		fmt.Fprintln(p.stdout, string(b))
	} else {
		cliapp.Fprintf(p.stdout, "artifact %s\nrefused  %v\nverdict  refused\n", arg, err)
	}
	return fmt.Errorf("%w: %v", exitcode.ErrRejected, err)
}

// pull fetches the receipt artifact ref into a fresh temporary tree (bounded: oci.DefaultLimits
// and the transfer flags) and returns its evidence. A reference that does not parse is a usage
// error; an artifact that breaks the layout, a limit or a digest, and a registry that sends the
// client where the network rules forbid, are refused (exit 1, said on stdout); a reference the
// registry does not have is a usage error (as a receipt path that does not exist is); a registry
// that cannot be reached, is too slow or runs past the deadline is an error (exit 3); an
// interrupt ends the pull (exit 130, cleanup).
func (p *pulls) pull(ctx context.Context, arg string) (verify.Evidence, error) {
	ref, err := oci.ParseRef(arg)
	if err != nil {
		return verify.Evidence{}, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	dir, err := os.MkdirTemp("", "qualverify-oci-")
	if err != nil {
		return verify.Evidence{}, err
	}
	p.mu.Lock()
	p.dirs = append(p.dirs, dir)
	p.mu.Unlock()
	start := time.Now()
	got, err := oci.Pull(ctx, ref, dir, oci.DefaultLimits, p.transfer)
	var in *interruption
	switch {
	case errors.As(context.Cause(ctx), &in):
		return verify.Evidence{}, fmt.Errorf("%w: pull %s: %v", exitcode.ErrInterrupted, arg, in)
	case errors.Is(err, oci.ErrReference) || errors.Is(err, oci.ErrNotFound):
		return verify.Evidence{}, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	case errors.Is(err, oci.ErrRefused) || errors.Is(err, oci.ErrDigest) || errors.Is(err, oci.ErrNetPolicy):
		return verify.Evidence{}, p.refuse(arg, err)
	case errors.Is(err, oci.ErrDeadline) || errors.Is(err, oci.ErrTooSlow):
		return verify.Evidence{}, fmt.Errorf("%w (gave up after %s; see --registry-timeout, --min-transfer-rate, --transfer-window)", err, time.Since(start).Round(time.Millisecond))
	case err != nil:
		return verify.Evidence{}, err
	}
	ev, err := verify.LocateIn(dir, filepath.Join(dir, filepath.FromSlash(got.Receipt)))
	if err != nil {
		return ev, p.refuse(arg, err)
	}
	return ev, nil
}

// locateArg locates a receipt argument: a path (with root, as locate does) or an oci:// reference
// pulled into a temporary tree.
func (p *pulls) locateArg(ctx context.Context, arg, root string) (verify.Evidence, error) {
	if oci.IsRef(arg) {
		if root != "" {
			return verify.Evidence{}, fmt.Errorf("%w: --root does not apply to %s: the pulled tree is the root", exitcode.ErrUsage, arg)
		}
		return p.pull(ctx, arg)
	}
	return locate(arg, root)
}
