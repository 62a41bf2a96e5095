package qualverify

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

// relaxFlags are the --allow-...-unsafe flags, one per verify.Relaxation.
func relaxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.BoolFlag{Name: string(verify.RelaxUnsigned), Usage: "UNSAFE: accept a receipt without an attestation (the signature check is skipped)"},
		&cli.BoolFlag{Name: string(verify.RelaxUnpublished), Usage: "UNSAFE: accept a receipt whose commit was not origin/main (publication not required)"},
		&cli.BoolFlag{Name: string(verify.RelaxMissingInputs), Usage: "UNSAFE: verify without a bound workload, launch recipe or corpus file that is not present (the checks they decide are not carried out; the warnings say which)"},
		&cli.BoolFlag{Name: string(verify.RelaxFixtureDevices), Usage: "UNSAFE, tests only: accept a device read from a test fixture (qualrun run --device-fixture) as identified"},
	}
}

// trustFlags pin keys and choose the policy.
func trustFlags() []cli.Flag {
	return append([]cli.Flag{
		&cli.StringSliceFlag{Name: "key", Usage: "pinned public key `FILE` (PEM, ECDSA P-256; repeatable); added to the policy's keys"},
		&cli.StringFlag{Name: "policy", Usage: "verification policy `FILE` (JSON, docs/verification.md); default: publication required, every relaxation flag permitted"},
		&cli.StringFlag{Name: "model-store", Usage: "re-hash the model files a receipt binds relative to its --model directory (one outside the repository) from your copy in `DIR`; a file that differs is rejected"},
	}, keylessFlags()...) // keyless.go
}

func verifyCommand() *cli.Command {
	return &cli.Command{
		Name:      "verify",
		Usage:     "verify a receipt and its evidence offline: schemas, source, hashes, signature, cleanup, tolerances, comparability, scope",
		ArgsUsage: "RECEIPT|oci://REGISTRY/REPOSITORY[@DIGEST|:TAG]",
		Description: "RECEIPT lives under qualification/receipts/ or .qualification/receipts/ of a repository (or give --root);\n" +
			"an oci:// reference (qualrun publish) is pulled into a bounded temporary tree and verified from there;\n" +
			"its evidence paths are relative to that root. The attestation is RECEIPT's NAME.intoto.dsse.json and/or\n" +
			"NAME.sigstore.json beside it, verified with the pinned --key (the keyid and key hint are ignored).\n" +
			"Checks run in protocol order; every finding names its check, file, JSON pointer and a stable code.\n" +
			"A banner on stderr says when an --allow-...-unsafe relaxation is on.\n" +
			"Exit 0: verified; 1: rejected (findings printed; also a receipt or evidence file that is a FIFO, a device,\n" +
			"a directory, a symlink or over its limit); 2: usage (bad flags, unreadable key or policy, no such receipt,\n" +
			"a relaxation the policy forbids); 3: verification could not be carried out (also: a registry that could not\n" +
			"be reached, was slower than --min-transfer-rate or ran past --registry-timeout); 130: interrupted by SIGINT,\n" +
			"SIGTERM, SIGHUP or SIGQUIT (a pulled tree is removed). A pulled artifact that is refused (its layout, a limit,\n" +
			"a .git title, a digest, a redirect or realm the network rules forbid) exits 1 and says why on stdout.",
		Flags: append(append(trustFlags(),
			&cli.StringFlag{Name: "root", Usage: "evidence root `DIR` (default: the directory holding qualification/receipts/ above RECEIPT)"},
			&cli.BoolFlag{Name: "json", Usage: "print the verification report (qualkit.verification-report.v1) as JSON"},
		), append(relaxFlags(), ociFlags()...)...),
		Action: func(c *cli.Context) (err error) {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: verify needs exactly one RECEIPT, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			policy, opts, err := policyFromFlags(c, true)
			if err != nil {
				return err
			}
			pl, err := newPulls(c)
			if err != nil {
				return err
			}
			defer pl.cleanup(&err)
			ev, err := pl.locateArg(c.Context, c.Args().First(), c.String("root"))
			if err != nil {
				return printRefusal(c.App.ErrWriter, err)
			}
			banner(c.App.ErrWriter, c)
			return runVerify(c.Context, ev, policy, opts, c.Bool("json"), c.App.Writer)
		},
	}
}

// policyFromFlags builds the policy (--policy, --key) and the relaxation options. Every problem
// is a usage error: the verification never starts with a trust root it cannot read.
func policyFromFlags(c *cli.Context, publication bool) (verify.Policy, []verify.Option, error) {
	policy := verify.DefaultPolicy()
	policy.RequirePublishable = publication
	if p := c.String("policy"); p != "" {
		var err error
		if policy, err = verify.LoadPolicy(p); err != nil {
			return policy, nil, fmt.Errorf("%w: --policy: %v", exitcode.ErrUsage, err)
		}
	}
	for _, k := range c.StringSlice("key") {
		pub, err := verify.LoadPublicKey(k)
		if err != nil {
			return policy, nil, fmt.Errorf("%w: --key: %v", exitcode.ErrUsage, err)
		}
		policy.Keys = append(policy.Keys, pub)
	}
	if err := keylessFromFlags(c, &policy); err != nil { // keyless.go
		return policy, nil, err
	}
	var relax []verify.Relaxation
	for _, r := range verify.Relaxations {
		if c.IsSet(string(r)) && c.Bool(string(r)) {
			relax = append(relax, r)
			if policy.AllowedRelaxations != nil && !contains(policy.AllowedRelaxations, r) {
				return policy, nil, fmt.Errorf("%w: --%s: the policy %s does not allow it (allow_unsafe %v)", exitcode.ErrUsage, r, c.String("policy"), policy.AllowedRelaxations)
			}
		}
	}
	if len(policy.Keys) == 0 && policy.Keyless == nil && !contains(relax, verify.RelaxUnsigned) && c.Command.Name != "compare" {
		return policy, nil, fmt.Errorf("%w: %s needs --key (or a policy with public_keys); --%s skips the signature check; keyless bundles need --trusted-root and a certificate identity", exitcode.ErrUsage, c.Command.Name, verify.RelaxUnsigned)
	}
	opts := []verify.Option{verify.WithRelaxations(relax...)}
	if dir := c.String("model-store"); dir != "" {
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return policy, nil, fmt.Errorf("%w: --model-store %s: not a directory", exitcode.ErrUsage, dir)
		}
		opts = append(opts, verify.WithModelStore(dir))
	}
	return policy, opts, nil
}

func contains(rs []verify.Relaxation, r verify.Relaxation) bool {
	for _, x := range rs {
		if x == r {
			return true
		}
	}
	return false
}

// banner warns on stderr about every relaxation that is on.
func banner(w io.Writer, c *cli.Context) {
	for _, r := range verify.Relaxations {
		if c.Bool(string(r)) {
			what := "receipts without an attestation are accepted: nothing binds this evidence to a signer"
			switch r {
			case verify.RelaxUnpublished:
				what = "publication is not required: the result may describe code that is not on origin/main"
			case verify.RelaxMissingInputs:
				what = "evidence is verified without its missing workload, launch recipe or corpus: the checks they decide are not carried out"
			case verify.RelaxFixtureDevices:
				what = "devices read from a test fixture count as identified: the result may name a device its host did not have"
			}
			cliapp.Fprintf(w, "qualverify: UNSAFE: --%s is on: %s\n", r, what)
		}
	}
}

func locate(receipt, root string) (verify.Evidence, error) {
	if _, err := os.Stat(receipt); err != nil {
		return verify.Evidence{}, fmt.Errorf("%w: receipt: %v", exitcode.ErrUsage, err)
	}
	var ev verify.Evidence
	var err error
	if root != "" {
		ev, err = verify.LocateIn(root, receipt)
	} else {
		ev, err = verify.Locate(receipt)
	}
	if err != nil {
		return ev, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return ev, nil
}

// printRefusal prints err when it is a rejection with no findings to print (an oci:// artifact
// the pull refused: cliapp.Main prints no rejection), made safe (it may quote a layer title),
// and returns err.
func printRefusal(w io.Writer, err error) error {
	if errors.Is(err, exitcode.ErrRejected) {
		cliapp.Fprintf(w, "qualverify: %v\n", err)
	}
	return err
}

// verifyError maps an error of verify.Verify to an exit code class.
func verifyError(receipt string, err error) error {
	if errors.Is(err, verify.ErrNoTrustedKey) || errors.Is(err, verify.ErrRelaxationRefused) {
		return fmt.Errorf("%w: %s: %v", exitcode.ErrUsage, receipt, err)
	}
	return fmt.Errorf("could not verify %s: %w", receipt, err)
}

func runVerify(ctx context.Context, ev verify.Evidence, policy verify.Policy, opts []verify.Option, asJSON bool, w io.Writer) error {
	res, err := verify.Verify(ctx, ev, policy, opts...)
	if err != nil {
		return verifyError(ev.Receipt, err)
	}
	if asJSON {
		b, err := reportJSON(res)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	} else {
		printResult(w, ev, res)
	}
	if res.Verdict != verify.Verified {
		return fmt.Errorf("%w: %s", exitcode.ErrRejected, res.Summary())
	}
	return nil
}

// reportJSON renders the verification report and checks it against its own contract: a report
// that does not validate is a qualverify bug, never printed as if it were one.
func reportJSON(res *verify.Result) ([]byte, error) {
	doc := res.Report(Version, time.Now())
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode report: %w", err)
	}
	out, err := schemas.CheckDocument(b)
	if err != nil {
		return nil, fmt.Errorf("check report: %w", err)
	}
	if !out.Valid() {
		return nil, fmt.Errorf("the verification report does not validate (a qualverify bug): %v", out.Violations[0])
	}
	return b, nil
}

func printResult(w io.Writer, ev verify.Evidence, res *verify.Result) {
	cliapp.Fprintf(w, "receipt  %s", ev.Receipt)
	if res.ReceiptID != "" {
		cliapp.Fprintf(w, " (%s)", res.ReceiptID)
	}
	cliapp.Fprintf(w, "\nroot     %s\n", ev.Root)
	if res.Identity != nil {
		cliapp.Fprintf(w, "identity %s\n", res.Identity)
	}
	if res.Signer != "" {
		cliapp.Fprintf(w, "signer   %s\n", res.Signer)
	}
	for _, sg := range res.Signatures {
		if sg.Verified {
			cliapp.Fprintf(w, "signature %s #%d: verified by %s\n", sg.File, sg.Index, sg.Key)
		} else {
			cliapp.Fprintf(w, "signature %s #%d: not verified (keyid %q): %s\n", sg.File, sg.Index, sg.KeyID, sg.Problem)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	for _, c := range res.Checks {
		note := ""
		if c.Note != "" {
			note = c.Note
		}
		cliapp.Fprintf(tw, "%s\t%s\t%s\n", c.Check, c.Status, note)
	}
	tw.Flush()
	for _, f := range res.Findings {
		p := f.Pointer
		if p == "" {
			p = "/"
		}
		cliapp.Fprintf(w, "  %s: %s: %s: %v [%s]\n", f.Check, f.File, p, f.Err, f.Code())
	}
	for _, wn := range res.Warnings {
		cliapp.Fprintf(w, "warning: %s\n", wn)
	}
	if len(res.Weakened) > 0 {
		cliapp.Fprintf(w, "weakened %s\n", strings.Join(res.Weakened, ", "))
	}
	if res.Scope != "" {
		cliapp.Fprintf(w, "scope    %s\n", res.Scope)
	}
	cliapp.Fprintf(w, "verdict  %s\n", res.Verdict)
}
