package qualverify

import (
	"bytes"
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report"
	"github.com/urfave/cli/v2"
)

func fleetCommand() *cli.Command {
	return &cli.Command{
		Name:      "fleet",
		Usage:     "verify every receipt of a fleet plan and write the signed fleet manifest, or check one",
		ArgsUsage: "PLAN RECEIPT|DIR|oci://REGISTRY/REPOSITORY@DIGEST... ",
		Description: "Verifies every receipt (a file, every receipt below a DIR, or an artifact pulled from a registry) exactly\n" +
			"as verify does, --jobs at a time, keeping only a summary of each; binds each to the plan row its own signed\n" +
			"qualrun command names (--output qualification/receipts/fleet/PLAN/row-N/HOST.json): same plan, commit,\n" +
			"workload, variant and variables, one receipt per row. Writes --output MANIFEST (qualkit.fleet-manifest.v1:\n" +
			"every row passed, failed or missing, every receipt that does not belong, per-metric cross-host median,\n" +
			"MAD, min and max with the host, outliers by |x - median| > k * 1.4826 * MAD) and its DSSE envelope\n" +
			"MANIFEST.intoto.dsse.json, signed with --sign-key, or with --sign keyless (Sigstore, as qualrun signs a\n" +
			"receipt: also the bundle MANIFEST.sigstore.json). None may exist.\n" +
			"With --check MANIFEST nothing is written: the envelope must verify with a --manifest-key (default: the\n" +
			"--key keys), or, when MANIFEST.sigstore.json exists and no --manifest-key is given, the bundle must\n" +
			"verify offline under --trusted-root and the identity policy; every derived member must equal what PLAN\n" +
			"and the RECEIPTS give now.\n" +
			"With --dry-run nothing is written or signed either: the manifest is built as --output would write it\n" +
			"and every row's status is printed (--json: the unsigned manifest), with no --output or --sign-key.\n" +
			"Exit 0: every row passed (or, with --check, the manifest holds); 1: a row failed, is missing or a\n" +
			"receipt does not belong (the manifest is still written, unless --dry-run), or the checked manifest\n" +
			"does not hold;\n" +
			"2: usage; 3: verification could not be carried out.",
		Flags: append(append(trustFlags(),
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the manifest to `FILE` (and FILE's .intoto.dsse.json envelope)"},
			&cli.StringFlag{Name: "sign-key", Usage: "sign the manifest with `FILE` (cosign encrypted or PKCS#8 PEM, ECDSA P-256)"},
			&cli.StringFlag{Name: "password-file", Usage: "read the signing key password from `FILE` (default: $QUALKIT_PASSWORD, then $COSIGN_PASSWORD)"},
			&cli.Float64Flag{Name: "outlier-k", Value: metric.DefaultOutlierK, Usage: "the outlier rule's `K` (|x - median| > K * 1.4826 * MAD)"},
			&cli.StringFlag{Name: "check", Usage: "check the signed manifest `FILE` against PLAN and the RECEIPTS instead of writing one"},
			&cli.BoolFlag{Name: "dry-run", Usage: "print every plan row's status (the manifest --output would write) and write and sign nothing"},
			&cli.StringSliceFlag{Name: "manifest-key", Usage: "public key `FILE` the manifest must be signed with (repeatable; default: the --key keys)"},
			&cli.IntFlag{Name: "jobs", Usage: "verify `N` receipts at a time (default: GOMAXPROCS)"},
			&cli.StringFlag{Name: "report", Usage: "also draw the fleet page (hosts x metrics heat table, outliers first) to `FILE` (HTML)"},
			&cli.BoolFlag{Name: "json", Usage: "print the manifest (or, with --check, nothing but the verdict line)"},
		), append(append(relaxFlags(), ociFlags()...), fleetSignFlags()...)...),
		Action: func(c *cli.Context) (err error) {
			if c.NArg() < 2 {
				return fmt.Errorf("%w: fleet needs a PLAN and at least one RECEIPT, DIR or oci:// reference", exitcode.ErrUsage)
			}
			check := c.String("check")
			dry := c.Bool("dry-run")
			if err := dryRunConflicts(c, dry); err != nil {
				return err
			}
			if check == "" && !dry && (c.String("output") == "" || (c.String("sign-key") == "" && c.String("sign") != "keyless")) {
				return fmt.Errorf("%w: fleet needs --output MANIFEST and --sign-key KEY or --sign keyless (or --check MANIFEST)", exitcode.ErrUsage)
			}
			if k := c.Float64("outlier-k"); !(k > 0 && k <= 100) {
				return fmt.Errorf("%w: --outlier-k %v: want 0 < K <= 100", exitcode.ErrUsage, k)
			}
			policy, opts, err := policyFromFlags(c, true)
			if err != nil {
				return err
			}
			var signer fleetSigner
			if check == "" && !dry {
				// Refused before any receipt is verified or anything signed, not after.
				if err := refuseExistingManifest(c.String("output")); err != nil {
					return err
				}
				if signer, err = loadFleetSigner(c); err != nil {
					return err
				}
			}
			pl, err := newPulls(c)
			if err != nil {
				return err
			}
			defer pl.cleanup(&err)
			plan, rs, err := verifiedFleet(c, pl, policy, opts)
			if err != nil {
				return err
			}
			if check != "" {
				keys := policy.Keys
				if files := c.StringSlice("manifest-key"); len(files) > 0 {
					keys = nil
					for _, f := range files {
						k, err := verify.LoadPublicKey(f)
						if err != nil {
							return fmt.Errorf("%w: --manifest-key: %v", exitcode.ErrUsage, err)
						}
						keys = append(keys, k)
					}
				}
				sig, err := manifestCheck(check, keys, policy.Keyless, c.IsSet("manifest-key"))
				if err != nil {
					return err
				}
				m, signer, err := checkFleet(check, c.Float64("outlier-k"), sig, plan, rs, c.App.Writer, c.App.ErrWriter)
				if err != nil {
					return err
				}
				if out := c.String("report"); out != "" {
					return writeFleetPage(out, m, signer, rs)
				}
				return nil
			}
			m := verify.BuildFleetManifest(plan, rs, c.Float64("outlier-k"), time.Now().UTC().Format(time.RFC3339), Version)
			if dry {
				if c.Bool("json") {
					b, _ := json.MarshalIndent(m, "", "  ")
					fmt.Fprintln(c.App.Writer, string(b))
				} else {
					printFleetRows(c.App.Writer, m)
				}
				return fleetOutcome(m)
			}
			signedBy, err := writeFleet(c.Context, c.String("output"), m, signer)
			if err != nil {
				return err
			}
			if out := c.String("report"); out != "" {
				if err := writeFleetPage(out, m, signedBy, rs); err != nil {
					return err
				}
			}
			if c.Bool("json") {
				b, _ := json.MarshalIndent(m, "", "  ")
				fmt.Fprintln(c.App.Writer, string(b))
			} else {
				printFleet(c.App.Writer, c.String("output"), m, signer.keyless != nil)
			}
			return fleetOutcome(m)
		},
	}
}

// dryRunConflicts refuses, with --dry-run, each flag that would write or sign: a dry run writes
// nothing, so a flag that asks for a file is a mistake to name, not to ignore.
func dryRunConflicts(c *cli.Context, dry bool) error {
	if !dry {
		return nil
	}
	for _, f := range []string{"output", "sign-key", "password-file", "check", "manifest-key", "report", "sign", "identity-token", "tsa-url"} {
		if c.IsSet(f) {
			return fmt.Errorf("%w: --dry-run writes and signs nothing: drop --%s", exitcode.ErrUsage, f)
		}
	}
	return nil
}

// fleetOutcome is the exit of a built manifest: rejected when a row failed, is missing or a
// receipt does not belong.
func fleetOutcome(m *contract.FleetManifestDoc) error {
	if n := m.Counts.Failed + m.Counts.Missing + m.Counts.NotBelonging; n > 0 {
		return fmt.Errorf("%w: %d failed, %d missing, %d not belonging (the manifest names each)", exitcode.ErrRejected, m.Counts.Failed, m.Counts.Missing, m.Counts.NotBelonging)
	}
	return nil
}

// fleetEvidence expands the receipt arguments: a receipt file, every receipt below a directory,
// or an oci:// artifact pulled into a temporary tree (labelled by its reference).
func fleetEvidence(ctx context.Context, pl *pulls, args []string) ([]verify.Evidence, []string, error) {
	var evs []verify.Evidence
	var labels []string
	for _, a := range args {
		if oci.IsRef(a) {
			ev, err := pl.pull(ctx, a)
			if err != nil {
				return nil, nil, err
			}
			evs, labels = append(evs, ev), append(labels, a)
			continue
		}
		st, err := os.Stat(a)
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
		}
		paths := []string{a}
		if st.IsDir() {
			if paths, err = findReceipts(a); err != nil {
				return nil, nil, err
			}
		}
		for _, p := range paths {
			ev, err := locate(p, "")
			if err != nil {
				return nil, nil, err
			}
			evs, labels = append(evs, ev), append(labels, p)
		}
		if len(evs) > verify.MaxFleetReceipts {
			return nil, nil, fmt.Errorf("%w: more than %d receipts", exitcode.ErrUsage, verify.MaxFleetReceipts)
		}
	}
	return evs, labels, nil
}

// fleetEnvelopePath is where the manifest's DSSE envelope goes: NAME.intoto.dsse.json for NAME.json.
func fleetEnvelopePath(manifest string) string {
	return strings.TrimSuffix(manifest, ".json") + attestfmt.EnvelopeSuffix
}

// refuseExistingManifest refuses a manifest path whose manifest or envelope exists: a fleet
// manifest is never replaced.
func refuseExistingManifest(path string) error {
	for _, p := range []string{path, fleetEnvelopePath(path), fleetBundlePath(path)} {
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%w: %s exists; a fleet manifest is never replaced", exitcode.ErrUsage, p)
		}
	}
	return nil
}

// writeFleet signs and writes the manifest, its envelope and (keyless) its bundle, and returns the
// signer as the fleet page names it.
func writeFleet(ctx context.Context, path string, m *contract.FleetManifestDoc, s fleetSigner) (string, error) {
	raw, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return "", err
	}
	raw = append(raw, '\n')
	st, err := verify.FleetStatement(filepath.Base(path), raw, m)
	if err != nil {
		return "", err
	}
	if err := refuseExistingManifest(path); err != nil {
		return "", err
	}
	env, bundle, signedBy, err := s.sign(ctx, st)
	if err != nil {
		return "", err
	}
	envPath := fleetEnvelopePath(path)
	// WriteNew creates exclusively: a file that appeared since the check is still never replaced.
	if err := evidence.WriteNew(path, raw, 0o644); err != nil {
		return "", err
	}
	if err := evidence.WriteNew(envPath, env, 0o644); err != nil {
		os.Remove(path) // ours, a moment ago: no unsigned manifest left behind
		return "", err
	}
	if bundle != nil {
		if err := evidence.WriteNew(fleetBundlePath(path), bundle, 0o644); err != nil {
			os.Remove(path)
			os.Remove(envPath)
			return "", err
		}
	}
	return signedBy, nil
}

func printFleet(w io.Writer, path string, m *contract.FleetManifestDoc, keyless bool) {
	printFleetCounts(w, m)
	printFleetEntries(w, m, false)
	if keyless {
		cliapp.Fprintf(w, "wrote %s, %s and %s\n", path, fleetEnvelopePath(path), fleetBundlePath(path))
		return
	}
	cliapp.Fprintf(w, "wrote %s and %s\n", path, fleetEnvelopePath(path))
}

// printFleetRows is the dry run's view: every entry, passed ones included, and no file.
func printFleetRows(w io.Writer, m *contract.FleetManifestDoc) {
	printFleetCounts(w, m)
	printFleetEntries(w, m, true)
	cliapp.Fprintln(w, "dry run: no manifest written or signed")
}

func printFleetCounts(w io.Writer, m *contract.FleetManifestDoc) {
	cliapp.Fprintf(w, "fleet %s: %d rows: %d passed, %d failed, %d missing; %d receipts not belonging\n",
		m.Plan.ID, m.Plan.Rows, m.Counts.Passed, m.Counts.Failed, m.Counts.Missing, m.Counts.NotBelonging)
}

// printFleetEntries prints each entry not passed (every entry with passed) and the outlier hosts.
func printFleetEntries(w io.Writer, m *contract.FleetManifestDoc, passed bool) {
	for _, e := range m.Entries {
		if e.Status == contract.FleetManifestStatusPassed && !passed {
			continue
		}
		row := "-"
		if e.Row != nil {
			row = fmt.Sprint(*e.Row)
		}
		host := e.Host
		if host == "" {
			host = "-"
		}
		why := e.Why
		if why == "" && e.Receipt != nil {
			why = e.Receipt.Path // a passed row: its receipt
		}
		cliapp.Fprintf(w, "  row %s  %s  %s: %s\n", row, e.Status, host, why)
	}
	for _, h := range m.OutlierHosts {
		cliapp.Fprintf(w, "  outlier host %s: %s\n", h.Host, strings.Join(h.Metrics, ", "))
	}
}

// manifestSignature checks a manifest's signature over raw and compares it with recomputed: the
// signer (a key's fingerprint or an identity), every problem, or an error when the manifest could
// not be read as one.
type manifestSignature func(raw []byte, name string, recomputed *contract.FleetManifestDoc) (signer string, problems []error, err error)

// byKeys checks a manifest's DSSE envelope against pinned keys.
func byKeys(path string, keys []crypto.PublicKey) manifestSignature {
	return func(raw []byte, name string, recomputed *contract.FleetManifestDoc) (string, []error, error) {
		env, err := readBeside(fleetEnvelopePath(path), verify.MaxAttestationBytes)
		if err != nil {
			return "", nil, fmt.Errorf("the manifest's envelope: %v", err)
		}
		return verify.CheckFleetManifest(raw, env, name, keys, recomputed)
	}
}

// checkFleet checks the signed manifest at path against the plan and the verified receipts,
// printing each problem; it returns the manifest as recomputed and the signer.
func checkFleet(path string, k float64, sig manifestSignature, plan *verify.FleetPlan, rs []verify.FleetReceipt, w, ew io.Writer) (*contract.FleetManifestDoc, string, error) {
	raw, err := evidence.ReadFileLimited(path, verify.MaxFleetManifestBytes)
	if err != nil {
		return nil, "", fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	// The rule's k is the checker's declared k (--outlier-k, 3.5 by default), never the
	// manifest's own: a manifest whose k was edited differs in outlier_rule even when its outliers
	// do not change.
	recomputed := verify.BuildFleetManifest(plan, rs, k, "", "")
	signer, problems, err := sig(raw, filepath.Base(path), recomputed)
	if err != nil {
		// A rejection is not printed by cliapp.Main: say what was refused.
		cliapp.Fprintf(ew, "qualverify: %s: %v\n", path, err)
		return nil, "", fmt.Errorf("%w: %v", exitcode.ErrRejected, err)
	}
	if len(problems) > 0 {
		for _, p := range problems {
			cliapp.Fprintf(ew, "qualverify: %s: %v\n", path, p)
		}
		return nil, "", fmt.Errorf("%w: fleet manifest %s does not hold (%d problems)", exitcode.ErrRejected, path, len(problems))
	}
	cliapp.Fprintf(w, "fleet manifest %s holds: signed by %s; %d rows, %d passed, %d failed, %d missing, %d receipts not belonging, recomputed from the plan and %d receipts\n",
		path, signer, recomputed.Plan.Rows, recomputed.Counts.Passed, recomputed.Counts.Failed, recomputed.Counts.Missing, recomputed.Counts.NotBelonging, len(rs))
	return recomputed, signer, nil
}

// writeFleetPage writes the fleet report page (verify/report) to path, replacing it atomically.
func writeFleetPage(path string, m *contract.FleetManifestDoc, signer string, rs []verify.FleetReceipt) error {
	var b bytes.Buffer
	if err := report.WriteFleetHTML(&b, report.BuildFleetPage(m, signer, rs)); err != nil {
		return err
	}
	return writeReplacing(path, b.Bytes())
}

// verifiedFleet loads the fleet plan (the first argument) and verifies the receipts the other
// arguments name (files, directories, oci:// references pulled into pl), --jobs at a time: what
// `fleet` and `report --fleet` both do before the manifest.
func verifiedFleet(c *cli.Context, pl *pulls, policy verify.Policy, opts []verify.Option) (*verify.FleetPlan, []verify.FleetReceipt, error) {
	plan, err := verify.LoadFleetPlan(c.Args().First())
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	evs, labels, err := fleetEvidence(c.Context, pl, c.Args().Slice()[1:])
	if err != nil {
		return nil, nil, printRefusal(c.App.ErrWriter, err)
	}
	banner(c.App.ErrWriter, c)
	rs, err := verify.VerifyFleetReceipts(c.Context, evs, labels, policy, c.Int("jobs"), opts...)
	if err != nil {
		if c.Context.Err() != nil {
			return nil, nil, fmt.Errorf("%w: %v", exitcode.ErrInterrupted, err)
		}
		return nil, nil, fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return plan, rs, nil
}

// fleetReport is qualverify report --fleet MANIFEST PLAN RECEIPTS...: the manifest is checked as
// fleet --check checks it (signed by a --key key, or keylessly when its bundle is beside it, every
// derived member recomputed), then drawn.
func fleetReport(c *cli.Context, manifest string) (err error) {
	out := c.String("output")
	if out == "" || out == "-" || c.String("format") != "html" {
		return fmt.Errorf("%w: report --fleet draws an HTML page: it needs --format html and -o FILE", exitcode.ErrUsage)
	}
	if c.NArg() < 2 {
		return fmt.Errorf("%w: report --fleet MANIFEST needs PLAN and the RECEIPTS the manifest binds", exitcode.ErrUsage)
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
	plan, rs, err := verifiedFleet(c, pl, policy, opts)
	if err != nil {
		return err
	}
	sig, err := manifestCheck(manifest, policy.Keys, policy.Keyless, false)
	if err != nil {
		return err
	}
	m, signer, err := checkFleet(manifest, metric.DefaultOutlierK, sig, plan, rs, c.App.ErrWriter, c.App.ErrWriter)
	if err != nil {
		return err
	}
	return writeFleetPage(out, m, signer, rs)
}
