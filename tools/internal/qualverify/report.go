package qualverify

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report"
	"github.com/urfave/cli/v2"
)

// unverifiedFlag renders a report of evidence that did not verify.
const unverifiedFlag = "unverified-unsafe"

func reportCommand() *cli.Command {
	return &cli.Command{
		Name:      "report",
		Usage:     "render verified evidence for people: one self-contained HTML page, a terminal summary or JSON",
		ArgsUsage: "RECEIPT|oci://... [RECEIPT|oci://...]...",
		Description: "Every RECEIPT is verified first, exactly as qualverify verify does (same --key, --policy and\n" +
			"--allow-...-unsafe flags); a receipt that does not verify gets no report: nothing is written\n" +
			"unless --unverified-unsafe, which renders it anyway with every section stamped UNVERIFIED.\n" +
			"The numbers are recomputed from the retained request records (docs/metrics.md): TTFT, TPOT, E2E,\n" +
			"inter-event latency and schedule-lag CDFs with p50/p99 per row, request-window throughput and\n" +
			"goodput against concurrency, the server's lifecycle, client fidelity. A driver case shows its\n" +
			"result's verdict, containment, digests, tolerance outcomes and numbers (top tokens, paths, layer\n" +
			"boundaries with a chart of the relative error per boundary; docs/drivers.md). With two or more\n" +
			"receipts, each later one is compared with the first (qualverify compare) and like-for-like rows\n" +
			"are put side by side with their deltas and rule verdicts.\n" +
			"  --format html  one HTML file with inline CSS, SVG and script that loads nothing (needs -o)\n" +
			"  --format text  aligned tables, at most 100 columns (stdout unless -o)\n" +
			"  --format json  the view as JSON for dashboards (contract qualkit.report-view.v1, docs/report.md)\n" +
			"  --format csv   one line per serving row and metric family, stable columns (docs/report.md)\n" +
			"Exit 0: every receipt verified and the report was written; 1: a receipt did not verify (with\n" +
			"--unverified-unsafe the stamped report is still written); 2: usage; 3: verification could not be\n" +
			"carried out.",
		Flags: append(append(trustFlags(),
			&cli.StringFlag{Name: "format", Value: "html", Usage: "html, text, json or csv"},
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the report to `FILE` (replaced atomically); \"-\" is stdout"},
			&cli.BoolFlag{Name: unverifiedFlag, Usage: "UNSAFE: render receipts that did not verify; every section is stamped UNVERIFIED"},
			&cli.StringFlag{Name: "fleet", Usage: "draw the fleet page of the signed fleet manifest `FILE` instead; the arguments are then PLAN RECEIPTS... (checked as qualverify fleet --check does)"},
		), append(relaxFlags(), ociFlags()...)...),
		Action: func(c *cli.Context) (err error) {
			if m := c.String("fleet"); m != "" {
				return fleetReport(c, m)
			}
			if c.NArg() == 0 {
				return fmt.Errorf("%w: report needs at least one RECEIPT", exitcode.ErrUsage)
			}
			if c.NArg() > report.MaxReceipts {
				return fmt.Errorf("%w: %d receipts: a report shows at most %d", exitcode.ErrUsage, c.NArg(), report.MaxReceipts)
			}
			format, out := c.String("format"), c.String("output")
			switch format {
			case "html":
				if out == "" {
					return fmt.Errorf("%w: --format html needs -o FILE (or -o - for stdout)", exitcode.ErrUsage)
				}
			case "text", "json", "csv":
			default:
				return fmt.Errorf("%w: --format %q: want html, text, json or csv", exitcode.ErrUsage, format)
			}
			policy, opts, err := policyFromFlags(c, true)
			if err != nil {
				return err
			}
			var evs []verify.Evidence
			pl, err := newPulls(c)
			if err != nil {
				return err
			}
			defer pl.cleanup(&err)
			for _, r := range c.Args().Slice() {
				ev, err := pl.locateArg(c.Context, r, "")
				if err != nil {
					return printRefusal(c.App.ErrWriter, err)
				}
				evs = append(evs, ev)
			}
			banner(c.App.ErrWriter, c)
			unsafe := c.Bool(unverifiedFlag)
			if unsafe {
				cliapp.Fprintf(c.App.ErrWriter, "qualverify: UNSAFE: --%s is on: a receipt that does not verify is rendered anyway, stamped UNVERIFIED\n", unverifiedFlag)
			}
			return runReport(c.Context, evs, policy, opts, reportOptions{format: format, output: out, unverified: unsafe}, c.App.Writer, c.App.ErrWriter)
		},
	}
}

type reportOptions struct {
	format, output string
	unverified     bool
}

func runReport(ctx context.Context, evs []verify.Evidence, policy verify.Policy, opts []verify.Option, ro reportOptions, stdout, stderr io.Writer) error {
	v, err := report.Build(ctx, evs, policy, Version, opts...)
	if errors.Is(err, verify.ErrNoTrustedKey) || errors.Is(err, verify.ErrRelaxationRefused) || errors.Is(err, report.ErrTooManyReceipts) {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	if err != nil {
		return fmt.Errorf("could not %w", err) // "could not verify RECEIPT: ..."
	}
	rejected := 0
	for _, r := range v.Receipts {
		if string(r.Verification.Verdict) == string(verify.Verified) {
			continue
		}
		rejected++
		cliapp.Fprintf(stderr, "qualverify: %s: %s\n", r.Path, r.Verification.Summary)
		for _, f := range r.Verification.Findings {
			cliapp.Fprintf(stderr, "  %s: %s: %s: %s [%s]\n", f.Check, f.File, nonEmptyPointer(f.Pointer), f.Message, f.Code)
		}
	}
	if rejected > 0 && !ro.unverified {
		cliapp.Fprintf(stderr, "qualverify: no report: %d of %d receipts did not verify (--%s renders them anyway, stamped UNVERIFIED)\n",
			rejected, len(v.Receipts), unverifiedFlag)
		return fmt.Errorf("%w: no report", exitcode.ErrRejected)
	}
	v.Unverified = rejected > 0
	var buf bytes.Buffer
	switch ro.format {
	case "html":
		err = v.HTML(&buf)
	case "text":
		err = v.Text(&buf)
	case "csv":
		err = v.CSV(&buf)
	default:
		err = v.JSON(&buf)
	}
	if err != nil {
		return err
	}
	if ro.output == "" || ro.output == "-" {
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return err
		}
	} else {
		if err := writeReplacing(ro.output, buf.Bytes()); err != nil {
			return err
		}
		cliapp.Fprintf(stderr, "qualverify: wrote %s (%d bytes, %s)\n", ro.output, buf.Len(), verdictWord(v))
	}
	if rejected > 0 {
		cliapp.Fprintf(stderr, "qualverify: %d of %d receipts did not verify: the report is stamped UNVERIFIED\n", rejected, len(v.Receipts))
		return fmt.Errorf("%w: unverified report", exitcode.ErrRejected)
	}
	return nil
}

func verdictWord(v *report.View) string {
	if v.Verified {
		return "verified" // not a contract value: the summary's stamp of View.Verified (a bool)
	}
	return "UNVERIFIED"
}

func nonEmptyPointer(p string) string {
	if p == "" {
		return "/"
	}
	return p
}

// writeReplacing writes data to path through a temporary file in the same directory and a
// rename: a reader sees the old file or the new one, never a part. A report is derived from
// evidence, not evidence, so it may be replaced.
func writeReplacing(path string, data []byte) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("%w: write %s: %v", exitcode.ErrUsage, path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
