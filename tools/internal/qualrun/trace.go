package qualrun

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/qualkit/qualkit/runner/load"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func traceCommand() *cli.Command {
	return &cli.Command{
		Name:  "trace",
		Usage: "work with timestamped request traces: trace import --format mooncake|azure|bailian|weka IN OUT",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "convert a Mooncake (JSONL), Azure (CSV), Bailian (JSONL) or WEKA (JSON) trace into a qualkit trace",
			ArgsUsage: "IN OUT",
			Description: "trace import reads IN, a Mooncake trace (JSONL: timestamp ms, input_length, output_length, hash_ids)\n" +
				"an Azure LLM inference trace (CSV: TIMESTAMP,ContextTokens,GeneratedTokens) or an Alibaba Bailian\n" +
				"trace (JSONL: chat_id, parent_chat_id, timestamp s, input_length, output_length, type, turn, hash_ids\n" +
				"of 16-token blocks; a later turn waits for its parent's answer when replayed) or a WEKA agentic\n" +
				"coding trace (one conversation object a line: id, block_size, requests of t s, in, out, hash_ids;\n" +
				"each request waits for the one before it; conversations start together, or --conversation-stagger\n" +
				"apart; sub-agent groups are refused), sorts it by time,\n" +
				"rebases it to 0 and writes the qualkit trace OUT (never replaced) that a serving case's corpus\n" +
				"{\"source\": \"trace\", \"path\": OUT, \"digest\": ...} replays; it prints OUT's digest.\n" +
				"Exit 0: written; 1: the trace is refused (the reason named); 2: usage.",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "format", Usage: "the input's `FORMAT`: mooncake, azure, bailian or weka"},
				&cli.DurationFlag{Name: "conversation-stagger", Usage: "weka: start conversation c `DURATION` x c after the first (whole ms; default all at once)"},
			},
			Action: func(c *cli.Context) error {
				if c.NArg() != 2 {
					return fmt.Errorf("%w: trace import needs IN and OUT: trace import --format mooncake|azure|bailian|weka IN OUT", exitcode.ErrUsage)
				}
				stagger := c.Duration("conversation-stagger")
				if c.IsSet("conversation-stagger") && (c.String("format") != "weka" || stagger < 0 || stagger%time.Millisecond != 0) {
					return fmt.Errorf("%w: --conversation-stagger %s: goes with --format weka, a whole number of ms from 0", exitcode.ErrUsage, stagger)
				}
				return importTrace(c.String("format"), c.Args().Get(0), c.Args().Get(1), stagger.Milliseconds(), c.App.Writer, c.App.ErrWriter)
			},
		}},
	}
}

func importTrace(format, in, out string, staggerMs int64, stdout, stderr io.Writer) error {
	var imp func(io.Reader) ([]load.TraceEntry, error)
	var bailian trace.BailianImport
	var weka trace.WEKAImport
	switch format {
	case "mooncake":
		imp = load.ImportMooncake
	case "azure":
		imp = load.ImportAzure
	case "bailian":
		imp = func(r io.Reader) (es []load.TraceEntry, err error) {
			es, bailian, err = trace.ImportBailian(r)
			return es, err
		}
	case "weka":
		imp = func(r io.Reader) (es []load.TraceEntry, err error) {
			es, weka, err = trace.ImportWEKA(r, staggerMs)
			return es, err
		}
	default:
		return fmt.Errorf("%w: --format %q: want mooncake, azure, bailian or weka", exitcode.ErrUsage, format)
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
	if format == "bailian" {
		cliapp.Fprintf(stdout, "%d conversations (first turns), %d later turns each waiting for its parent's answer, up to turn %d; hash blocks of %d tokens (block_tokens %d)\n",
			bailian.Roots, len(entries)-bailian.Roots-bailian.Orphans, bailian.MaxTurn, trace.BailianBlockTokens, trace.BailianBlockTokens)
		if bailian.Orphans > 0 {
			cliapp.Fprintf(stdout, "%d turns name a parent_chat_id the file does not hold (cut from a longer trace?): imported as independent requests\n", bailian.Orphans)
		}
	}
	if format == "weka" {
		cliapp.Fprintf(stdout, "%d conversations, each request waiting for the one before it; hash blocks of %d tokens (block_tokens %d)\n", weka.Conversations, weka.BlockSize, weka.BlockSize)
		if weka.Subagents > 0 {
			cliapp.Fprintf(stdout, "%d sub-agents, each running its requests in order after the request that spawned it, beside the others of its group; %d joins (a request after a group waits for the last request of each of its sub-agents)\n", weka.Subagents, weka.Joins)
		}
		if weka.Clamped > 0 {
			cliapp.Fprintf(stdout, "%d requests stamped before a request they wait for: imported at its time (a conversation's requests run one after another)\n", weka.Clamped)
		}
	}
	cliapp.Fprintf(stdout, "wrote %s (%s)\n", out, evidence.DigestOf(buf.Bytes()))
	return nil
}
