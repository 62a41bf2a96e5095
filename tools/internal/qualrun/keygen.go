package qualrun

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func keygenCommand() *cli.Command {
	return &cli.Command{
		Name:  "keygen",
		Usage: "write a new ECDSA P-256 signing key pair in cosign's format: PREFIX.key and PREFIX.pub",
		Description: "PREFIX.key (mode 0600) is encrypted like cosign generate-key-pair's keys (scrypt + NaCl secretbox)\n" +
			"with the password from --password-file, $QUALKIT_PASSWORD or $COSIGN_PASSWORD (never a flag value);\n" +
			"--unencrypted writes unencrypted PKCS#8 instead, for CI keys. PREFIX.pub is the PKIX public key that\n" +
			"auditors give to cosign and qualverify. Existing files are never replaced.\n" +
			"Exit 0 when written; 2 for usage errors (no password, an existing file); 3 if writing failed.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output-prefix", Usage: "write `PREFIX`.key and PREFIX.pub (neither may exist)"},
			&cli.BoolFlag{Name: "unencrypted", Usage: "write the private key unencrypted (PKCS#8), for CI"},
			&cli.StringFlag{Name: "password-file", Usage: "read the password from `FILE` (default: $QUALKIT_PASSWORD, then $COSIGN_PASSWORD)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: keygen takes no arguments, got %q", exitcode.ErrUsage, c.Args().First())
			}
			if c.String("output-prefix") == "" {
				return fmt.Errorf("%w: keygen needs --output-prefix", exitcode.ErrUsage)
			}
			if c.Bool("unencrypted") && c.String("password-file") != "" {
				return fmt.Errorf("%w: --unencrypted and --password-file exclude each other", exitcode.ErrUsage)
			}
			return keygen(c.String("output-prefix"), c.Bool("unencrypted"), c.String("password-file"), c.App.Writer)
		},
	}
}

func keygen(prefix string, unencrypted bool, passwordFile string, stdout io.Writer) error {
	// The key is written through a temporary file beside it: a missing directory is named as
	// such, before the password is asked for, not as the temporary file that could not be created.
	if dir := filepath.Dir(prefix); dir != "" {
		fi, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%w: --output-prefix %s: directory %s does not exist; create it first (mkdir -p %s)", exitcode.ErrUsage, prefix, dir, dir)
		case err != nil:
			return fmt.Errorf("%w: --output-prefix %s: %v", exitcode.ErrUsage, prefix, err)
		case !fi.IsDir():
			return fmt.Errorf("%w: --output-prefix %s: %s is not a directory", exitcode.ErrUsage, prefix, dir)
		}
	}
	var password []byte
	if !unencrypted {
		pw, err := attest.PasswordFromEnv(passwordFile)()
		if errors.Is(err, attest.ErrNoPassword) {
			return fmt.Errorf("%w: keygen encrypts the key: set QUALKIT_PASSWORD or COSIGN_PASSWORD, give --password-file, or use --unencrypted for a CI key", exitcode.ErrUsage)
		}
		if err != nil {
			return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
		}
		password = pw
	}
	if err := attest.GenerateKeyPair(prefix, password); err != nil {
		return attestError(err, io.Discard)
	}
	pub, err := attest.ReadPublicKey(prefix + ".pub")
	if err != nil {
		return err
	}
	hint, err := attest.KeyHint(pub)
	if err != nil {
		return err
	}
	kind := "encrypted"
	if unencrypted {
		kind = "unencrypted (CI only)"
	}
	cliapp.Fprintf(stdout, "wrote %s.key (%s, ECDSA P-256, mode 0600) and %s.pub\npublic key hint (base64 sha256 of the DER key, as in bundles): %s\n", prefix, kind, prefix, hint)
	return nil
}
