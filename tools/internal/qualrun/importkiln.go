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

func importCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "convert another harness's documents into qualkit contracts: import kiln WORKLOAD.json|LAUNCH.json",
		ArgsUsage: "kiln WORKLOAD.json|LAUNCH.json",
		Description: "import kiln converts a Kiln workload (schema_version 1) or owned-server launch document.\n" +
			"Writes the qualkit.workload.v1 or qualkit.launch-recipe.v1 to --output (never replaced), validated\n" +
			"against its contract, and prints where every Kiln field went and the new file's digest. A document that\n" +
			"carries what qualkit deliberately does not carry (a host temperature policy, a machine-specific\n" +
			"architecture target) is refused, each field named; so is anything that is not a Kiln workload or launch\n" +
			"document (Kiln evidence is not imported: re-run it). A launch document has no base_url or model_id:\n" +
			"give --base-url and --model-id. Exit 0: written; 1: refused; 2: usage (no file, an existing --output).",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "output", Aliases: []string{"o"}, Usage: "write the converted document to `FILE` (must not exist)"},
			&cli.StringFlag{Name: "base-url", Usage: "launch only: the server's loopback `URL` (http://127.0.0.1:PORT)"},
			&cli.StringFlag{Name: "model-id", Usage: "launch only: the model `ID` GET /v1/models lists"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 || c.Args().First() != "kiln" {
				return fmt.Errorf("%w: import needs a format and one document: import kiln WORKLOAD.json|LAUNCH.json (kiln is the only format)", exitcode.ErrUsage)
			}
			if c.String("output") == "" {
				return fmt.Errorf("%w: import kiln needs --output FILE for the converted document", exitcode.ErrUsage)
			}
			return importKiln(c.Args().Get(1), c.String("output"), kilnimport.Options{BaseURL: c.String("base-url"), ModelID: c.String("model-id")},
				c.App.Writer, c.App.ErrWriter)
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
		cliapp.Fprintf(stderr, "qualrun: %v\nnothing was written\n", err)
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
