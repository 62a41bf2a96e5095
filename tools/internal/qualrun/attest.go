package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/attest/kms"
	"github.com/qualkit/qualkit/runner/source"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func attestCommand() *cli.Command {
	return &cli.Command{
		Name:      "attest",
		Usage:     "sign a receipt made without --key: write its in-toto attestation beside it",
		ArgsUsage: "RECEIPT",
		Description: "Reads RECEIPT strictly (it must validate), hashes it and every evidence file it binds (case results,\n" +
			"request records, lifecycle record, server log; each must still match the receipt's digest), builds an\n" +
			"in-toto Statement v1 (predicate " + attestfmt.PredicateType + ") and signs it\n" +
			"once with --key. For DIR/NAME.json it writes DIR/NAME.intoto.dsse.json (plain DSSE envelope) and\n" +
			"DIR/NAME.sigstore.json (Sigstore bundle v0.3, public key only, no transparency log), then, with the same\n" +
			"key, the campaign's in-toto link DIR/NAME.in-toto/qualkit-campaign.KEYID8.link (see qualrun layout);\n" +
			"none may exist.\n" +
			"The key password comes from --password-file, $QUALKIT_PASSWORD or $COSIGN_PASSWORD, never a flag value.\n" +
			"Exit 0: written; 1: the receipt or its evidence is refused; 2: usage (bad key, wrong password, existing\n" +
			"output, unreadable receipt); 3: the files could not be written.",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "key", Usage: "signing key `FILE` (cosign encrypted or PKCS#8 PEM, ECDSA P-256), or a KMS key hashivault://NAME (Vault transit; $VAULT_ADDR, $VAULT_TOKEN)"},
			&cli.StringFlag{Name: "password-file", Usage: "read the key password from `FILE` (default: $QUALKIT_PASSWORD, then $COSIGN_PASSWORD)"},
			&cli.StringFlag{Name: "root", Usage: "repository root `DIR` the receipt's paths are relative to (default: the git worktree holding RECEIPT)"},
			&cli.BoolFlag{Name: "json", Usage: "print a machine summary (JSON)"},
		}, keylessFlags()...), // keyless.go
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: attest needs exactly one RECEIPT, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			kl, err := keylessOptions(c)
			if err != nil {
				return err
			}
			if kl != nil {
				return attestKeyless(c.Context, c.Args().First(), c.String("root"), kl, c.Bool("json"), c.App.Writer, c.App.ErrWriter)
			}
			if c.String("key") == "" {
				return fmt.Errorf("%w: attest needs --key (or --sign keyless)", exitcode.ErrUsage)
			}
			signer, err := loadKey(c)
			if err != nil {
				return err
			}
			return attestReceipt(c.Context, c.Args().First(), c.String("root"), signer, c.Bool("json"), c.App.Writer, c.App.ErrWriter)
		},
	}
}

// loadKey loads the signer named by --key, nil when there is none. Every key problem (missing
// file, wrong password, Ed25519, ...) is a usage error, found before anything runs.
func loadKey(c *cli.Context) (attest.Signer, error) {
	if c.String("key") == "" {
		if c.String("password-file") != "" {
			return nil, fmt.Errorf("%w: --password-file needs --key", exitcode.ErrUsage)
		}
		return nil, nil
	}
	if kms.IsReference(c.String("key")) { // a KMS key: sigstore's URI, the provider's own credentials
		s, err := kms.LoadSigner(c.Context, c.String("key"))
		if err != nil {
			return nil, fmt.Errorf("%w: --key: %v", exitcode.ErrUsage, err)
		}
		return s, nil
	}
	s, err := attest.LoadSigner(c.String("key"), attest.PasswordFromEnv(c.String("password-file")))
	if err != nil {
		return nil, fmt.Errorf("%w: --key: %v", exitcode.ErrUsage, err)
	}
	return s, nil
}

type attestSummary struct {
	Receipt     string `json:"receipt"`
	Attestation string `json:"attestation"`
	Bundle      string `json:"bundle"`
	Link        string `json:"intoto_link"`
}

func attestReceipt(ctx context.Context, receipt, root string, s attest.Signer, asJSON bool, stdout, stderr io.Writer) error {
	root, rel, err := receiptIn(receipt, root)
	if err != nil {
		return err
	}
	envelope, bundle, err := attest.AttestReceipt(ctx, root, rel, s)
	if err != nil {
		return attestError(err, stderr)
	}
	link, err := attest.WriteLink(ctx, root, rel, s)
	if err != nil {
		return attestError(err, stderr)
	}
	sum := attestSummary{Receipt: rel, Attestation: envelope, Bundle: bundle, Link: link}
	if asJSON {
		b, _ := json.MarshalIndent(sum, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	cliapp.Fprintf(stdout, "attestation %s\nbundle %s\nin-toto link %s\n", envelope, bundle, link)
	return nil
}

// receiptIn returns the repository root (root, or the git worktree holding receipt) and the
// receipt's path relative to it (forward slashes).
func receiptIn(receipt, root string) (string, string, error) {
	abs, err := filepath.Abs(receipt)
	if err != nil {
		return "", "", fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	if _, err := os.Lstat(abs); err != nil {
		return "", "", fmt.Errorf("%w: receipt: %v", exitcode.ErrUsage, err)
	}
	if root == "" {
		if root, err = source.Root(filepath.Dir(abs)); err != nil {
			return "", "", fmt.Errorf("%w: find the repository of %s (or give --root): %v", exitcode.ErrUsage, receipt, err)
		}
	}
	if root, err = filepath.Abs(root); err != nil {
		return "", "", fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", "", fmt.Errorf("%w: receipt %s is not inside the repository %s", exitcode.ErrUsage, receipt, root)
	}
	return root, filepath.ToSlash(rel), nil
}

// attestError maps an attest error to the exit code table. Refusals of the receipt or its
// evidence are printed here (Main does not print rejections) and exit 1; key and path problems
// are usage errors; anything else is internal.
func attestError(err error, stderr io.Writer) error {
	switch {
	case errors.Is(err, attest.ErrReceipt), errors.Is(err, attest.ErrSubject):
		cliapp.Fprintf(stderr, "qualrun: attest: %v\nnothing was signed\n", cliapp.ErrorLines(err))
		return fmt.Errorf("%w: attest", exitcode.ErrRejected)
	case errors.Is(err, attest.ErrPath), errors.Is(err, os.ErrNotExist),
		errors.Is(err, attest.ErrEd25519), errors.Is(err, attest.ErrKeyType), errors.Is(err, attest.ErrKeyFormat),
		errors.Is(err, attest.ErrPassword), errors.Is(err, attest.ErrNoPassword), errors.Is(err, attest.ErrEmptyPassword):
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return err
}

// signCampaign signs the receipt a campaign wrote (passed or failed: every written receipt is
// signed) with the key given to run: the DSSE attestation and its bundle, then the in-toto link of
// the campaign step (attest.WriteLink), signed with the same key.
func signCampaign(ctx context.Context, root, receiptRel string, s attest.Signer, stderr io.Writer) (envelope, bundle, link string, err error) {
	ctx = context.WithoutCancel(ctx)
	envelope, bundle, err = attest.AttestReceipt(ctx, root, receiptRel, s)
	if err == nil {
		link, err = attest.WriteLink(ctx, root, receiptRel, s)
	}
	if err != nil {
		hint := fmt.Sprintf("the receipt %s was written but not signed (sign it later with: qualrun attest %s --key FILE)", receiptRel, receiptRel)
		if envelope != "" {
			hint = fmt.Sprintf("the receipt %s was signed (%s) but its in-toto link was not written", receiptRel, envelope)
		}
		mapped := attestError(err, stderr)
		if errors.Is(mapped, exitcode.ErrRejected) {
			cliapp.Fprintln(stderr, "qualrun:", hint)
			return envelope, bundle, "", mapped
		}
		return envelope, bundle, "", fmt.Errorf("%s: %w", hint, mapped)
	}
	return envelope, bundle, link, nil
}
