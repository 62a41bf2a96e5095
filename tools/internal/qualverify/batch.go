package qualverify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

func batchCommand() *cli.Command {
	return &cli.Command{
		Name:      "batch",
		Usage:     "verify every receipt under DIR in parallel and print a summary table",
		ArgsUsage: "DIR|oci://REGISTRY/REPOSITORY[@DIGEST|:TAG]",
		Description: "Finds every receipt (a .json file that is not an attestation) below a qualification/receipts/ or\n" +
			".qualification/receipts/ directory under DIR and verifies each exactly as verify does, --jobs at a\n" +
			"time. The table lists each receipt's verdict, its finding count and the checks that failed.\n" +
			"Exit 0: every receipt verified; 1: a receipt was rejected; 2: usage (no receipt found, bad flags);\n" +
			"3: a receipt could not be verified at all.",
		Flags: append(append(trustFlags(),
			&cli.IntFlag{Name: "jobs", Usage: "verify `N` receipts at a time (default: GOMAXPROCS)"},
			&cli.BoolFlag{Name: "json", Usage: "print one verification report (qualkit.verification-report.v1) per line"},
		), append(relaxFlags(), ociFlags()...)...),
		Action: func(c *cli.Context) (err error) {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: batch needs exactly one DIR, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			policy, opts, err := policyFromFlags(c, true)
			if err != nil {
				return err
			}
			dir := c.Args().First()
			pl, err := newPulls(c)
			if err != nil {
				return err
			}
			defer pl.cleanup(&err)
			if oci.IsRef(dir) {
				ev, err := pl.pull(c.Context, dir)
				if err != nil {
					return printRefusal(c.App.ErrWriter, err)
				}
				dir = ev.Root
			}
			receipts, err := findReceipts(dir)
			if err != nil {
				return err
			}
			banner(c.App.ErrWriter, c)
			return runBatch(c.Context, receipts, policy, opts, c.Int("jobs"), c.Bool("json"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// findReceipts lists the receipts below dir, sorted.
func findReceipts(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Anything named like a receipt is one, whatever it is: a FIFO, a device or a symlink in a
		// receipts directory is verified (and refused with a finding), never skipped.
		if d.IsDir() || !verify.IsReceiptName(d.Name()) {
			return nil
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return err
		}
		slash := filepath.ToSlash(abs)
		if strings.Contains(slash, "/qualification/receipts/") || strings.Contains(slash, "/.qualification/receipts/") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no receipt below %s (receipts live under qualification/receipts/ or .qualification/receipts/)", exitcode.ErrUsage, dir)
	}
	sort.Strings(out)
	return out, nil
}

// batchOutcome is one receipt's verification.
type batchOutcome struct {
	path string
	res  *verify.Result
	err  error
}

// verifyMany verifies receipts with jobs workers; each verification reads its files one at a
// time, so the parallelism is across receipts.
func verifyMany(ctx context.Context, receipts []string, policy verify.Policy, opts []verify.Option, jobs int) []batchOutcome {
	if jobs <= 0 {
		jobs = runtime.GOMAXPROCS(0)
	}
	out := make([]batchOutcome, len(receipts))
	opts = append(append([]verify.Option{}, opts...), verify.WithConcurrency(1))
	work := make(chan int)
	var wg sync.WaitGroup
	for range min(jobs, len(receipts)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				out[i].path = receipts[i]
				ev, err := verify.Locate(receipts[i])
				if err != nil {
					out[i].err = err
					continue
				}
				out[i].res, out[i].err = verify.Verify(ctx, ev, policy, opts...)
			}
		}()
	}
	for i := range receipts {
		if ctx.Err() != nil {
			break
		}
		work <- i
	}
	close(work)
	wg.Wait()
	return out
}

func runBatch(ctx context.Context, receipts []string, policy verify.Policy, opts []verify.Option, jobs int, asJSON bool, w, ew io.Writer) error {
	outcomes := verifyMany(ctx, receipts, policy, opts, jobs)
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%w: %v", exitcode.ErrInterrupted, err)
	}
	var verified, rejected, failed int
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	if !asJSON {
		fmt.Fprintln(tw, "RECEIPT\tVERDICT\tFINDINGS\tFAILED CHECKS")
	}
	for _, o := range outcomes {
		switch {
		case o.err != nil:
			failed++
			if asJSON {
				cliapp.Fprintf(ew, "qualverify: could not verify %s: %v\n", o.path, o.err)
			} else {
				cliapp.Fprintf(tw, "%s\terror\t-\t%v\n", o.path, o.err)
			}
			continue
		case o.res.Verdict == verify.Verified:
			verified++
		default:
			rejected++
		}
		if asJSON {
			b, err := reportJSON(o.res)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, compact(b))
			continue
		}
		var checks []string
		for _, c := range o.res.Checks {
			if c.Status == verify.StatusFailed {
				checks = append(checks, string(c.Check))
			}
		}
		fc := "-"
		if len(checks) > 0 {
			fc = strings.Join(checks, ",")
		}
		cliapp.Fprintf(tw, "%s\t%s\t%d\t%s\n", o.path, o.res.Verdict, len(o.res.Findings), fc)
	}
	if !asJSON {
		tw.Flush()
		cliapp.Fprintf(w, "%d receipts: %d verified, %d rejected, %d could not be verified\n", len(outcomes), verified, rejected, failed)
	}
	switch {
	case failed > 0:
		return fmt.Errorf("%d of %d receipts could not be verified", failed, len(outcomes))
	case rejected > 0:
		return fmt.Errorf("%w: %d of %d receipts rejected", exitcode.ErrRejected, rejected, len(outcomes))
	}
	return nil
}

// compact removes the indentation of a JSON document (one report per line).
func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}
