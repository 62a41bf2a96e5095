package qualrun

import (
	"encoding/json"
	"errors"
	"fmt"

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
			"Exit 0: pushed; 2: usage (no receipt, bad reference); 3: the registry refused or could not be reached.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "to", Usage: "destination `oci://REGISTRY/REPOSITORY[:TAG]`"},
			&cli.StringFlag{Name: "root", Usage: "evidence root `DIR` (default: the directory holding qualification/receipts/ above RECEIPT)"},
			&cli.BoolFlag{Name: "json", Usage: "print a machine summary (JSON)"},
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
			pub, err := oci.Publish(c.Context, ev.Root, ev.Receipt, ref)
			if err != nil {
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
