package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/qualkit/qualkit/attest/keyless"
	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/tokenize"
	"github.com/urfave/cli/v2"
)

func runCommand() *cli.Command {
	return &cli.Command{
		Name:      "run",
		Usage:     "run one campaign: WORKLOAD + --variant on this host, and write its receipt",
		ArgsUsage: "WORKLOAD",
		Description: "Preflight (no side effects on failure): strict workload, committed and unchanged; typed --var;\n" +
			"output path below qualification/receipts/ or .qualification/receipts/, new, no .., no symlink;\n" +
			"clean worktree and HEAD == origin/main; every artifact hashed. Then: one owned server for the\n" +
			"serving cases, the cases in declared order, shutdown and residue checks, source and artifact\n" +
			"re-checks, and the evidence under .qualification/runs/<receipt-id>/ plus the receipt at --output.\n" +
			"Exit 0: passed; 1: refused in preflight or the campaign failed (the receipt says why);\n" +
			"2: usage, or an input that is not a regular file within its limit (a FIFO, a device, an\n" +
			"oversize file); 130: interrupted by SIGINT, SIGTERM, SIGHUP or SIGQUIT (the server is shut\n" +
			"down and an interrupted receipt, never publishable and signed with --key, binds the evidence\n" +
			"written so far). A keeper process stops the server if qualrun itself is killed (SIGKILL, OOM).",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "variant", Usage: "variant `ID` to run"},
			&cli.StringFlag{Name: "host-id", Usage: "stable, non-secret `ID` of this host (evidence label only)"},
			&cli.StringFlag{Name: "output", Usage: "receipt `PATH` below qualification/receipts/ or .qualification/receipts/"},
			&cli.StringSliceFlag{Name: "var", Usage: "set a typed workload variable, `NAME=VALUE` (repeatable)"},
			&cli.StringFlag{Name: "model", Usage: "model `DIR`: every file is bound by digest; ${model_path} in commands"},
			&cli.StringFlag{Name: "model-id", Usage: "model `ID` the server lists and requests name (overrides the launch recipe)"},
			&cli.StringFlag{Name: "source", Usage: "`DIR` inside the qualified repository (default: the workload's directory)"},
			&cli.StringFlag{Name: "runtime-manifest", Usage: "runtime manifest `FILE` to bind (qualrun capture-runtime)"},
			&cli.StringSliceFlag{Name: "config", Usage: "extra configuration `FILE` to bind by digest (repeatable)"},
			&cli.StringFlag{Name: "key", Usage: "signing key `FILE`: sign the receipt (attestation; see docs/attestation.md)"},
			&cli.StringFlag{Name: "password-file", Usage: "read the --key password from `FILE` (default: $QUALKIT_PASSWORD, then $COSIGN_PASSWORD)"},
			&cli.BoolFlag{Name: "allow-unpublished-unsafe", Usage: "run even when HEAD is not origin/main; the receipt is then not publishable"},
			&cli.BoolFlag{Name: "json", Usage: "print a machine summary (JSON) instead of the table; no progress display"},
			&cli.DurationFlag{Name: "progress-interval", Value: defaultProgressInterval, Usage: "when stderr is not a terminal, print a running row's progress line every `DURATION` (at least 100ms)"},
			// --sign keyless and its service flags (keyless.go).
			// Hidden, for tests: the probes read a fixture directory instead of this host. The flag is
			// in the receipt's command and every device read from the fixture is marked fixture.
			&cli.StringFlag{Name: "device-fixture", Hidden: true, Usage: "TEST ONLY: probe devices from fixture `DIR` instead of this host"},
		}, keylessFlags()...),
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: run needs exactly one WORKLOAD, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			for _, f := range []string{"variant", "host-id", "output"} {
				if c.String(f) == "" {
					return fmt.Errorf("%w: run needs --%s", exitcode.ErrUsage, f)
				}
			}
			if c.Duration("progress-interval") < 100*time.Millisecond {
				return fmt.Errorf("%w: --progress-interval %v: want at least 100ms", exitcode.ErrUsage, c.Duration("progress-interval"))
			}
			signer, err := loadKey(c) // a bad key is a usage error before anything runs
			if err != nil {
				return err
			}
			kl, err := keylessOptions(c) // so is a missing identity token
			if err != nil {
				return err
			}
			if err := checkRunInputs(c.Args().First(), c.String("host-id")); err != nil {
				return err
			}
			cfg := campaign.Config{
				Workload: c.Args().First(), Variant: c.String("variant"), HostID: c.String("host-id"), Output: c.String("output"),
				Vars: c.StringSlice("var"), ModelDir: c.String("model"), ModelID: c.String("model-id"), SourceDir: c.String("source"),
				RuntimeManifest: c.String("runtime-manifest"), ConfigFiles: c.StringSlice("config"),
				LoadTokenizer:          loadTokenizer,
				AllowUnpublishedUnsafe: c.Bool("allow-unpublished-unsafe"),
				Command:                os.Args, Version: Version, BinaryDigest: selfDigest(),
				DriverDeny: denyList(c.App.ErrWriter), Keeper: true,
				DeviceFixture: c.String("device-fixture"),
			}
			if cfg.DeviceFixture != "" {
				cliapp.Fprintf(c.App.ErrWriter, "qualrun: WARNING --device-fixture %s: devices are read from a test fixture and marked fixture in the receipt; verifiers treat them as unidentified\n", cfg.DeviceFixture)
			}
			return runCampaign(c.Context, cfg, receiptSigner{signer, kl}, c.Bool("json"), c.Duration("progress-interval"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// selfDigest hashes the running qualrun binary.
func selfDigest() string {
	exe, err := os.Executable()
	if err == nil {
		if d, _, err := evidence.DigestFile(exe); err == nil {
			return d
		}
	}
	return evidence.DigestOf(nil)
}

func runCampaign(ctx context.Context, cfg campaign.Config, rs receiptSigner, asJSON bool, progressInterval time.Duration, stdout, stderr io.Writer) error {
	tty := isTerminal(stderr) // decided on the real stderr: the scrubbing writer is not a terminal
	scrubOut, scrubErr := newScrubWriter(stdout), newScrubWriter(stderr)
	stdout, stderr = scrubOut, scrubErr
	prog := newProgress(stderr, tty, !asJSON, progressInterval)
	if cfg.AllowUnpublishedUnsafe {
		fmt.Fprintln(stderr, "qualrun: WARNING --allow-unpublished-unsafe: the receipt will not be publishable")
	}
	cfg.Progress = prog.event
	ctx, stop := interruptContext(ctx)
	defer stop()
	warnLeftovers(stderr)
	plan, err := campaign.Preflight(ctx, cfg)
	if err == nil && ctx.Err() != nil {
		// A signal during preflight: stop before anything launches.
		plan.Release()
		err = ctx.Err()
	}
	if err != nil {
		prog.done()
		if errors.Is(err, exitcode.ErrUsage) {
			return err
		}
		if ctx.Err() != nil {
			cliapp.Fprintf(stderr, "qualrun: interrupted by %s in preflight; nothing was launched and nothing was written\n", interruptName(ctx))
			return exitcode.ErrInterrupted
		}
		cliapp.Fprintf(stderr, "qualrun: preflight: %v\nnothing was launched and nothing was written\n", cliapp.ErrorLines(err))
		if errors.Is(err, evidence.ErrNotRegular) || errors.Is(err, evidence.ErrFileTooLarge) {
			return fmt.Errorf("%w: preflight: an input is not a readable regular file within its limit", exitcode.ErrUsage)
		}
		return fmt.Errorf("%w: preflight", exitcode.ErrRejected)
	}
	defer plan.Release()
	scrubOut.set(plan.Redactor())
	scrubErr.set(plan.Redactor())
	out, err := plan.Run(ctx)
	prog.done()
	interrupted := errors.Is(err, campaign.ErrInterrupted)
	if interrupted && (out == nil || out.Receipt == nil) {
		fmt.Fprintln(stderr, "qualrun: interrupted; the server was shut down; no receipt was written")
		return exitcode.ErrInterrupted
	}
	if err != nil && !interrupted {
		return err
	}
	// The receipt is written: a late signal no longer stops its signature or the summary.
	ctx = context.WithoutCancel(ctx)
	sum := summary(out)
	var signErr error
	passed := out.Receipt.Qualification.Verdict == contract.QualificationVerdictPassed
	switch {
	case rs.key != nil:
		// Validate before signing: a receipt its own contract rejects is never signed (exit 3).
		sum.Attestation, sum.Bundle, sum.Link, signErr = signChecked(ctx, plan.Root(), out.ReceiptPath, out.RunDir, passed, rs.key, stderr)
	case rs.keyless != nil:
		sum.Attestation, sum.Bundle, sum.Identity, signErr = signKeylessChecked(ctx, plan.Root(), out.ReceiptPath, out.RunDir, passed, rs.keyless, stderr) // keyless.go
	}
	if asJSON {
		b, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		printRunSummary(stdout, out)
		printServingSummary(stdout, plan.Root(), out.Receipt)
		if sum.Attestation != "" {
			cliapp.Fprintf(stdout, "attestation %s\nbundle %s\n", sum.Attestation, sum.Bundle)
		}
		if sum.Link != "" {
			cliapp.Fprintf(stdout, "in-toto link %s\n", sum.Link)
		}
		if sum.Identity != nil {
			cliapp.Fprintf(stdout, "identity %s\n", sum.Identity)
		}
	}
	if signErr != nil {
		return signErr
	}
	if interrupted {
		in := out.Receipt.Qualification.Interruption
		cliapp.Fprintf(stderr, "qualrun: interrupted by %s during %s; the server was shut down; the interrupted receipt %s binds the evidence written so far (%s)\n",
			in.Signal, in.Phase, out.ReceiptPath, out.RunDir)
		return exitcode.ErrInterrupted
	}
	if out.Receipt.Qualification.Verdict != contract.QualificationVerdictPassed {
		return fmt.Errorf("%w: campaign failed", exitcode.ErrRejected)
	}
	return nil
}

type runSummary struct {
	ReceiptID   string                        `json:"receipt_id"`
	Receipt     string                        `json:"receipt"`
	RunDir      string                        `json:"run_dir"`
	Verdict     contract.QualificationVerdict `json:"verdict"`
	Publishable bool                          `json:"publishable"`
	Results     []contract.Result             `json:"results"`
	Notes       []string                      `json:"notes"`
	Attestation string                        `json:"attestation,omitempty"`
	Bundle      string                        `json:"bundle,omitempty"`
	Link        string                        `json:"intoto_link,omitempty"`
	// Identity is the keyless signer (--sign keyless).
	Identity *keyless.Identity `json:"identity,omitempty"`
}

func summary(o *campaign.Outcome) runSummary {
	rc := o.Receipt
	return runSummary{ReceiptID: rc.ReceiptID, Receipt: o.ReceiptPath, RunDir: o.RunDir, Verdict: rc.Qualification.Verdict,
		Publishable: rc.Publishable, Results: rc.Results, Notes: rc.Notes}
}

func printRunSummary(w io.Writer, o *campaign.Outcome) {
	rc := o.Receipt
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tREP\tREQUIRED\tSTATUS\tSECONDS\tDETAILS")
	for _, r := range rc.Results {
		d := ""
		if r.Details != nil {
			d = *r.Details
			if len(d) > 60 {
				d = d[:57] + "..."
			}
		}
		cliapp.Fprintf(tw, "%s\t%d\t%v\t%s\t%.2f\t%s\n", r.ID, r.Repetition, r.Required, r.Status, r.DurationSeconds, d)
	}
	tw.Flush()
	// The table clips details; a failed or skipped case's reason is printed whole, numbers included.
	for _, r := range rc.Results {
		if r.Status != contract.StatusPassed && r.Details != nil && len(*r.Details) > 60 {
			cliapp.Fprintf(w, "%s %s: %s\n", r.Status, r.ID, *r.Details)
		}
	}
	for _, n := range rc.Notes {
		cliapp.Fprintln(w, "note:", n)
	}
	cliapp.Fprintf(w, "verdict %s, publishable %v\nreceipt %s\nevidence %s\n", rc.Qualification.Verdict, rc.Publishable, o.ReceiptPath, o.RunDir)
}

// loadTokenizer builds the token counter of a bound tokenizer file (docs/tokens.md).
func loadTokenizer(path string) (load.TokenCounter, error) { return tokenize.LoadFile(path) }
