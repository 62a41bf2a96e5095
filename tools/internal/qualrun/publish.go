package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/qualkit/qualkit/runner/campaign"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

func publishCommand() *cli.Command {
	return &cli.Command{
		Name:      "publish",
		Usage:     "push a receipt with its evidence tree to an OCI registry, its Sigstore bundle as a referrer",
		ArgsUsage: "RECEIPT",
		Description: "Pushes RECEIPT, its DSSE envelope and Sigstore bundle, and every file the receipt binds by a path\n" +
			"below the evidence root (the directory holding qualification/receipts/ or .qualification/receipts/, or\n" +
			"--root) as one OCI artifact (artifactType " + oci.ArtifactType + ", one layer per file, its path\n" +
			"in org.opencontainers.image.title), then the bundle as a referrer of that artifact as cosign attaches\n" +
			"bundles. --to oci://REGISTRY/REPOSITORY[:TAG] (plain HTTP only for a loopback registry). Prints the\n" +
			"artifact's oci://...@sha256:... reference; qualverify verify takes it.\n" +
			"Every request, redirects, token realms and upload locations included, goes over HTTPS, or over plain HTTP\n" +
			"to loopback when the registry is loopback; a token goes to no other host than the registry. The push\n" +
			"ends after --registry-timeout (default 10m) and a request moving less than --min-transfer-rate (default\n" +
			"64KiB/s) over a --transfer-window (default 30s) is cancelled.\n" +
			"Exit 0: pushed; 2: usage (no receipt, bad reference); 3: the registry refused, could not be reached, was\n" +
			"too slow or sent the client where the rules forbid; 130: interrupted by SIGINT, SIGTERM, SIGHUP or SIGQUIT.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "destination `oci://REGISTRY/REPOSITORY[:TAG]`"},
			&cli.StringFlag{Name: "root", Usage: "evidence root `DIR` (default: the directory holding qualification/receipts/ above RECEIPT)"},
			&cli.BoolFlag{Name: "json", Usage: "print a machine summary (JSON)"},
			&cli.DurationFlag{Name: "registry-timeout", Value: oci.DefaultTransfer.Timeout, Usage: "give up the push after `DURATION` (0: no deadline)"},
			&cli.StringFlag{Name: "min-transfer-rate", Value: oci.FormatRate(oci.DefaultTransfer.MinRate), Usage: "cancel a registry request that moves less than `RATE` bytes per second (64KiB, 1MiB, 0: no minimum) over a --transfer-window"},
			&cli.DurationFlag{Name: "transfer-window", Value: oci.DefaultTransfer.Window, Usage: "the `DURATION` --min-transfer-rate is averaged over"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: publish needs exactly one RECEIPT, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			ref, err := oci.ParseRef(c.String("to"))
			if err != nil {
				return fmt.Errorf("%w: --to: %v", exitcode.ErrUsage, err)
			}
			var ev verify.Evidence
			if root := c.String("root"); root != "" {
				ev, err = verify.LocateIn(root, c.Args().First())
			} else {
				ev, err = verify.Locate(c.Args().First())
			}
			if err != nil {
				return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
			}
			if secret, err := secretBound(c.Context, ev.Root, ev.Receipt); err != nil || len(secret) > 0 {
				return refuseSecret(c.App.ErrWriter, secret, err)
			}
			rate, err := oci.ParseRate(c.String("min-transfer-rate"))
			if err != nil {
				return fmt.Errorf("%w: --min-transfer-rate: %v", exitcode.ErrUsage, err)
			}
			t := oci.Transfer{Timeout: c.Duration("registry-timeout"), MinRate: rate, Window: c.Duration("transfer-window")}
			if t.Timeout < 0 || (t.MinRate > 0 && t.Window <= 0) {
				return fmt.Errorf("%w: --registry-timeout must not be negative, and --transfer-window must be positive with a --min-transfer-rate", exitcode.ErrUsage)
			}
			ctx, stop := interruptContext(c.Context)
			defer stop()
			pub, err := oci.Publish(ctx, ev.Root, ev.Receipt, ref, t)
			if err != nil {
				if ctx.Err() != nil && context.Cause(ctx) != nil && errors.As(context.Cause(ctx), new(*campaign.Interruption)) {
					cliapp.Fprintf(c.App.ErrWriter, "qualrun: %v during publish; the registry may hold blobs of an artifact whose manifest was not pushed\n", context.Cause(ctx))
					return exitcode.ErrInterrupted
				}
				if errors.Is(err, oci.ErrReference) {
					return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
				}
				return err
			}
			if c.Bool("json") {
				b, _ := json.MarshalIndent(map[string]any{"artifact": pub.Ref.String(), "digest": pub.Digest, "bundle_referrer": pub.Bundle, "files": pub.Files}, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
				return nil
			}
			cliapp.Fprintf(c.App.Writer, "published %s (%d files)\n", pub.Ref, len(pub.Files))
			if pub.Bundle != "" {
				cliapp.Fprintf(c.App.Writer, "bundle referrer %s\n", pub.Bundle)
			} else {
				fmt.Fprintln(c.App.Writer, "no Sigstore bundle beside the receipt: no referrer pushed")
			}
			return nil
		},
	}
}
