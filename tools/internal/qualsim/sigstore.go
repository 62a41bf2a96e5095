package qualsim

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/qualkit/qualkit/attest/keyless/localsigstore"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// sigstoreCommand serves the loopback Sigstore stand-ins (attest/keyless/localsigstore) for
// scripts: keyless signing and verification without the public-good instance.
func sigstoreCommand() *cli.Command {
	return &cli.Command{
		Name:  "sigstore",
		Usage: "serve a local OIDC issuer, Fulcio-API CA, Rekor v1 log and RFC 3161 timestamp authority on loopback",
		Description: "Fresh keys each start. Writes into --dir: trusted_root.json, token (an ID token for --subject),\n" +
			"fulcio.url, rekor.url, tsa.url, issuer.url, and ready last. SIGTERM or SIGINT stops it (docs/signing.md).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Required: true, Usage: "write the trusted root, token and URLs into `DIR`"},
			&cli.StringFlag{Name: "subject", Value: "https://github.com/qualkit/qualkit/.github/workflows/release.yml@refs/heads/main", Usage: "the token's subject `ID` (a URI, or an email)"},
			&cli.DurationFlag{Name: "cert-shift", Usage: "move issued certificates' validity by `D` (negative: certificates that expired before use; tests)"},
		},
		Action: func(c *cli.Context) error {
			s, err := localsigstore.Start(localsigstore.Options{CertShift: c.Duration("cert-shift")})
			if err != nil {
				return err
			}
			defer s.Close()
			tr, err := s.TrustedRoot()
			if err != nil {
				return err
			}
			tok, err := s.Token(c.String("subject"), time.Hour)
			if err != nil {
				return err
			}
			dir := c.String("dir")
			for _, f := range []struct{ name, data string }{
				{"trusted_root.json", string(tr)}, {"token", tok}, {"fulcio.url", s.FulcioURL}, {"rekor.url", s.RekorURL},
				{"tsa.url", s.TSAURL}, {"issuer.url", s.IssuerURL}, {"ready", fmt.Sprint(os.Getpid())},
			} {
				if err := writeAtomic(filepath.Join(dir, f.name), f.data); err != nil {
					return fmt.Errorf("%w: --dir: %v", exitcode.ErrUsage, err)
				}
			}
			fmt.Fprintf(c.App.Writer, "qualsim sigstore: issuer %s fulcio %s rekor %s tsa %s pid %d\n", s.IssuerURL, s.FulcioURL, s.RekorURL, s.TSAURL, os.Getpid())
			ctx, stop := signal.NotifyContext(c.Context, syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			<-ctx.Done()
			return nil
		},
	}
}
