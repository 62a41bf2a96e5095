package qualrun

import (
	"crypto"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// minLayoutLifetime is the shortest --expires-in qualrun layout accepts: an expiry in the past
// (a negative duration, or one that rounds to now) writes a layout nothing can verify against.
const minLayoutLifetime = time.Minute

func layoutCommand() *cli.Command {
	return &cli.Command{
		Name:  "layout",
		Usage: "write an in-toto layout for qualkit campaigns, signed by the project owner's --key",
		Description: "The layout names one step, " + attestfmt.StepName + ", whose link qualrun run --key writes\n" +
			"(DIR/NAME.in-toto/" + attestfmt.StepName + ".KEYID8.link), signed by one of the --functionary public keys,\n" +
			"and one inspection, " + attestfmt.InspectionName + ", that runs `qualverify verify [--verify-arg...] --key {PUBKEY} {RECEIPT}`\n" +
			"in the repository. Its rules MATCH the receipt and every file under the evidence directory to the\n" +
			"link's products (which qualverify checks are the attestation's subjects) and DISALLOW any that differ.\n" +
			"The verifier gives three parameters: RECEIPT (the receipt's path), EVIDENCE (its run directory) and\n" +
			"PUBKEY (the functionary's public key file) to in_toto.InTotoVerify; the stock `in-toto-golang verify`\n" +
			"CLI substitutes none, so for it fix them with --param when writing the layout:\n" +
			"  qualrun layout ... --param RECEIPT=DIR/NAME.json --param EVIDENCE=.qualification/runs/ID --param PUBKEY=qual.pub\n" +
			"  in-toto-golang verify -l root.layout -k owner.pub -d DIR/NAME.in-toto   (in the repository)\n" +
			"The key password comes from --password-file, $QUALKIT_PASSWORD or $COSIGN_PASSWORD.\n" +
			"Exit 0: written; 2: usage (bad key, existing output); 3: the file could not be written.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "the project owner's signing key `FILE` (cosign encrypted or PKCS#8 PEM, ECDSA P-256)"},
			&cli.StringFlag{Name: "password-file", Usage: "read the key password from `FILE` (default: $QUALKIT_PASSWORD, then $COSIGN_PASSWORD)"},
			&cli.StringSliceFlag{Name: "functionary", Usage: "public key `FILE` allowed to sign campaign links (PEM, ECDSA P-256; repeatable)"},
			&cli.StringSliceFlag{Name: "verify-arg", Usage: "extra `ARG` of the inspection's qualverify verify (repeatable, e.g. --verify-arg=--policy=policy.json)"},
			&cli.StringSliceFlag{Name: "param", Usage: "fix the layout parameter `NAME=VALUE` (RECEIPT, EVIDENCE or PUBKEY; repeatable) in the signed layout, for verifiers that substitute none (the stock in-toto-golang verify CLI)"},
			&cli.DurationFlag{Name: "expires-in", Value: 365 * 24 * time.Hour, Usage: "the layout expires after `DURATION` (at least 1m)"},
			&cli.StringFlag{Name: "output", Usage: "write the signed layout to `FILE` (it must not exist)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: layout takes no arguments, got %q", exitcode.ErrUsage, c.Args().First())
			}
			switch {
			case c.String("key") == "":
				return fmt.Errorf("%w: layout needs --key (the project owner's key that signs the layout)", exitcode.ErrUsage)
			case len(c.StringSlice("functionary")) == 0:
				return fmt.Errorf("%w: layout needs --functionary PUB (the public key of a key that signs campaigns; repeatable)", exitcode.ErrUsage)
			case c.String("output") == "":
				return fmt.Errorf("%w: layout needs --output FILE", exitcode.ErrUsage)
			case c.Duration("expires-in") < minLayoutLifetime:
				return fmt.Errorf("%w: --expires-in %s: a layout must expire at least %s from now (a layout already expired, or about to, verifies nothing)",
					exitcode.ErrUsage, c.Duration("expires-in"), minLayoutLifetime)
			}
			signer, err := loadKey(c)
			if err != nil {
				return err
			}
			var pubs []crypto.PublicKey
			for _, f := range c.StringSlice("functionary") {
				pub, err := attest.ReadPublicKey(f)
				if err != nil {
					return fmt.Errorf("%w: --functionary: %v", exitcode.ErrUsage, err)
				}
				pubs = append(pubs, pub)
			}
			params := map[string]string{}
			for _, p := range c.StringSlice("param") {
				k, v, ok := strings.Cut(p, "=")
				if !ok || v == "" {
					return fmt.Errorf("%w: --param %q: want NAME=VALUE", exitcode.ErrUsage, p)
				}
				params[k] = v
			}
			l, err := attest.Layout(attest.LayoutOptions{Params: params, Functionaries: pubs, Expires: time.Now().Add(c.Duration("expires-in") + time.Second - 1).Truncate(time.Second),
				VerifyArgs: c.StringSlice("verify-arg"),
				Readme:     "qualkit campaign layout: the campaign step's link must be signed by a functionary key, and qualverify verify must accept the receipt whose evidence equals the link's products."})
			if err != nil {
				return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
			}
			signed, err := attest.SignMetablock(c.Context, *l, signer)
			if err != nil {
				return err
			}
			return writeLayout(c.String("output"), signed, l.Expires, c.App.Writer)
		},
	}
}

func writeLayout(path string, data []byte, expires string, stdout io.Writer) error {
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("%w: --output %s already exists; layouts are never replaced", exitcode.ErrUsage, path)
	}
	if err := evidence.WriteNew(path, data, 0o644); err != nil {
		return err
	}
	cliapp.Fprintf(stdout, "layout %s (step %s, inspection %s, expires %s)\n", path, attestfmt.StepName, attestfmt.InspectionName, expires)
	return nil
}
