package qualrun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "work with timestamped request traces: trace import --format mooncake|azure IN OUT",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "convert a Mooncake (JSONL) or Azure (CSV) trace into a qualkit trace",
			ArgsUsage: "IN OUT",
			Description: "trace import reads IN, a Mooncake trace (JSONL: timestamp ms, input_length, output_length, hash_ids)\n" +
				"or an Azure LLM inference trace (CSV: TIMESTAMP,ContextTokens,GeneratedTokens), sorts it by time,\n" +
				"rebases it to 0 and writes the qualkit trace OUT (never replaced) that a serving case's corpus\n" +
				"{\"source\": \"trace\", \"path\": OUT, \"digest\": ...} replays; it prints OUT's digest.\n" +
				"Exit 0: written; 1: the trace is refused (the reason named); 2: usage.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "format", Usage: "the input's `FORMAT`: mooncake or azure"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 2 {
					return fmt.Errorf("%w: trace import needs IN and OUT: trace import --format mooncake|azure IN OUT", exitcode.ErrUsage)
				}
				return importTrace(c.String("format"), c.Args().Get(0), c.Args().Get(1), c.App.Writer, c.App.ErrWriter)
			},
		}},
	}
}

func importTrace(format, in, out string, stdout, stderr io.Writer) error {
	var imp func(io.Reader) ([]load.TraceEntry, error)
	switch format {
	case "mooncake":
		imp = load.ImportMooncake
	case "azure":
		imp = load.ImportAzure
	default:
		return fmt.Errorf("%w: --format %q: want mooncake or azure", exitcode.ErrUsage, format)
	}
	raw, err := evidence.ReadFileLimited(in, load.MaxTraceBytes)
	if err != nil {
		return fmt.Errorf("%w: read %s: %v", exitcode.ErrUsage, in, err)
	}
	if _, err := os.Lstat(out); err == nil {
		return fmt.Errorf("%w: %s already exists; imports never replace a file (choose another name or remove it)", exitcode.ErrUsage, out)
	}
	if fi, err := os.Stat(filepath.Dir(out)); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: %s: directory %s does not exist; create it first", exitcode.ErrUsage, out, filepath.Dir(out))
	}
	entries, err := imp(bytes.NewReader(raw))
	if err != nil {
		cliapp.Fprintf(stderr, "qualrun: %s: %v\nnothing was written\n", in, err)
		return fmt.Errorf("%w: trace refused", exitcode.ErrRejected)
	}
	var buf bytes.Buffer
	if err := load.WriteTrace(&buf, entries); err != nil {
		return err
	}
	if err := evidence.WriteNew(out, buf.Bytes(), 0o644); err != nil {
		return err
	}
	span := entries[len(entries)-1].TimestampMs
	cliapp.Fprintf(stdout, "%s trace %s (%s): %d requests over %d ms\n", format, in, evidence.DigestOf(raw), len(entries), span)
	cliapp.Fprintf(stdout, "wrote %s (%s)\n", out, evidence.DigestOf(buf.Bytes()))
	return nil
}
