package qualrun

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/kilnimport"
	"github.com/urfave/cli/v2"
)

// importCommand is "import" with one subcommand per format (kiln is the only one), so that
// "qualrun import kiln --help" is kiln's help.
func importCommand() *cli.Command {
	kiln := &cli.Command{
		Name:      "kiln",
		Usage:     "convert a Kiln workload or owned-server launch document into a qualkit contract",
		ArgsUsage: "WORKLOAD.json|LAUNCH.json",
		Description: "import kiln converts a Kiln workload (schema_version 1) or owned-server launch document.\n" +
			"Writes the qualkit.workload.v1 or qualkit.launch-recipe.v1 to --output (never replaced), validated\n" +
			"against its contract, and prints where every Kiln field went and the new file's digest. A document that\n" +
			"carries what qualkit deliberately does not carry (a host temperature policy under any name: thermal guards,\n" +
			"cooldowns, pacing, temperature limits, fans, throttling; a machine-specific architecture target) is refused,\n" +
			"each field named; so is anything that is not a Kiln workload or launch document (Kiln evidence is not\n" +
			"imported: re-run it). A launch document has no base_url or model_id: give --base-url and --model-id.\n" +
			"Exit 0: written; 1: refused; 2: usage (no file, an existing --output).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the converted document to `FILE` (must not exist)"},
			&cli.StringFlag{Name: "base-url", Usage: "launch only: the server's loopback `URL` (http://127.0.0.1:PORT)"},
			&cli.StringFlag{Name: "model-id", Usage: "launch only: the model `ID` GET /v1/models lists"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 1 {
				return fmt.Errorf("%w: import kiln needs one document: import kiln WORKLOAD.json|LAUNCH.json, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			if c.String("output") == "" {
				return fmt.Errorf("%w: import kiln needs --output FILE for the converted document", exitcode.ErrUsage)
			}
			return importKiln(c.Args().First(), c.String("output"), kilnimport.Options{BaseURL: c.String("base-url"), ModelID: c.String("model-id")},
				c.App.Writer, c.App.ErrWriter)
		},
	}
	return &cli.Command{
		Name:        "import",
		Usage:       "convert another harness's documents into qualkit contracts: import kiln WORKLOAD.json|LAUNCH.json",
		ArgsUsage:   "kiln WORKLOAD.json|LAUNCH.json",
		Subcommands: []*cli.Command{kiln},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowSubcommandHelp(c)
			}
			return fmt.Errorf("%w: import has no format %q: import kiln WORKLOAD.json|LAUNCH.json (kiln is the only format)", exitcode.ErrUsage, c.Args().First())
		},
	}
}

func importKiln(in, out string, opts kilnimport.Options, stdout, stderr io.Writer) error {
	raw, err := evidence.ReadFileLimited(in, kilnimport.MaxDocumentBytes)
	if err != nil {
		return fmt.Errorf("%w: read %s: %v", exitcode.ErrUsage, in, err)
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%w: --output %s already exists; imports never replace a file (choose another name or remove it)", exitcode.ErrUsage, out)
	}
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: --output %s: directory %s does not exist; create it first", exitcode.ErrUsage, out, filepath.Dir(out))
	}
	res, err := kilnimport.Convert(raw, in, opts)
	if errors.Is(err, kilnimport.ErrRefused) {
		cliapp.Fprintf(stderr, "qualrun: %v\nnothing was written\n", cliapp.ErrorLines(err))
		return fmt.Errorf("%w: import refused", exitcode.ErrRejected)
	}
	if err != nil {
		return err
	}
	if err := evidence.WriteNew(out, res.Doc, 0o644); err != nil {
		return err
	}
	cliapp.Fprintf(stdout, "kiln %s %s (%s)\n", res.Kind, in, evidence.DigestOf(raw))
	tw := tabwriter.NewWriter(stdout, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "KILN\tQUALKIT\tNOTE")
	for _, m := range res.Mappings {
		from, to := m.From, m.To
		if from == "" {
			from = "-"
		}
		if to == "" {
			to = "(not carried)"
		}
		cliapp.Fprintf(tw, "%s\t%s\t%s\n", from, to, m.Note)
	}
	tw.Flush()
	cliapp.Fprintf(stdout, "wrote %s (valid qualkit.%s, %s)\n", out, res.Contract, evidence.DigestOf(res.Doc))
	if res.Kind == kilnimport.KindWorkload {
		cliapp.Fprintf(stdout, "next: commit it (git add %s && git commit), then qualrun run %s --variant ID --host-id HOST --output qualification/receipts/...\n", out, out)
	} else {
		cliapp.Fprintf(stdout, "next: name it in a serving case's \"launch\" and commit both\n")
	}
	return nil
}
