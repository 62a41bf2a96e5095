// Package qualverify is the qualverify command line: it turns flags into calls of the schemas and
// verify libraries and decides what the user sees.
package qualverify

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X .../qualverify.Version=...".
var Version = "dev"

// Main runs qualverify with args (args[0] is the program name) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	return cliapp.Main(cliapp.New("qualverify", "verify qualkit evidence offline before anything is published", Version, stdout, stderr,
		schemaCommand(), verifyCommand(), compareCommand(), batchCommand(), reportCommand(), fleetCommand()), args)
}

func schemaCommand() *cli.Command {
	return &cli.Command{
		Name:      "schema",
		Usage:     "validate files against their contract (detected from the schema field)",
		ArgsUsage: "FILE...",
		Description: "Each file is parsed strictly (duplicate keys, NaN, trailing data, invalid UTF-8 are errors),\n" +
			"its contract is detected from its \"schema\" field, and it is validated against the exported\n" +
			"JSON Schema and the contract's semantic rules. Problems print as FILE: /json/pointer: message.\n" +
			"Exit 0: all valid; 1: a file is invalid; 2: usage (no file, unreadable file).",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "json", Usage: "print one JSON object per file instead of text lines"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return fmt.Errorf("%w: schema needs at least one FILE", exitcode.ErrUsage)
			}
			return runSchema(c.Args().Slice(), c.Bool("json"), c.App.Writer)
		},
	}
}

// fileOutcome is the --json form of one file's result.
type fileOutcome struct {
	File       string          `json:"file"`
	Contract   string          `json:"contract,omitempty"`
	Valid      bool            `json:"valid"`
	Violations []jsonViolation `json:"violations"`
}

type jsonViolation struct {
	Pointer string `json:"pointer"`
	Message string `json:"message"`
}

func runSchema(files []string, asJSON bool, w io.Writer) error {
	invalid := 0
	for _, f := range files {
		limit := int64(jsonstrict.MaxDocumentBytes)
		if strings.HasSuffix(f, ".jsonl") {
			limit = verify.MaxRecordsFileBytes
		}
		// Refused before a byte is read: a FIFO, a device, a directory, a file over the limit (an
		// 8 GiB sparse file costs one fstat). Such a file is invalid input (exit 1), not a usage error.
		data, err := evidence.ReadFileLimited(f, limit)
		switch {
		case errors.Is(err, evidence.ErrNotRegular) || errors.Is(err, evidence.ErrFileTooLarge):
			invalid++
			if asJSON {
				b, _ := json.Marshal(fileOutcome{File: f, Valid: false, Violations: []jsonViolation{{Pointer: "", Message: err.Error()}}})
				fmt.Fprintln(w, string(b))
			} else {
				cliapp.Fprintf(w, "%s: /: refused: %v\n", f, err)
			}
			continue
		case err != nil:
			return fmt.Errorf("%w: read %s: %v", exitcode.ErrUsage, f, err)
		}
		if strings.HasSuffix(f, ".jsonl") {
			bad, err := checkLines(f, data, asJSON, w)
			if err != nil {
				return err
			}
			if bad {
				invalid++
			}
			continue
		}
		out, err := schemas.CheckDocument(data)
		if err != nil {
			return fmt.Errorf("check %s: %w", f, err)
		}
		if !out.Valid() {
			invalid++
		}
		if asJSON {
			fo := fileOutcome{File: f, Contract: out.Contract.SchemaID, Valid: out.Valid(), Violations: []jsonViolation{}}
			for _, v := range out.Violations {
				fo.Violations = append(fo.Violations, jsonViolation{Pointer: v.Pointer, Message: v.Err.Error()})
			}
			b, _ := json.Marshal(fo)
			fmt.Fprintln(w, string(b))
			continue
		}
		if out.Valid() {
			cliapp.Fprintf(w, "%s: valid %s\n", f, out.Contract.SchemaID)
			continue
		}
		for _, v := range out.Violations {
			cliapp.Fprintf(w, "%s: %s\n", f, v.Error())
		}
	}
	if invalid > 0 {
		return fmt.Errorf("%w: %d of %d files invalid", exitcode.ErrRejected, invalid, len(files))
	}
	return nil
}

// checkLines validates a JSON Lines file (request records): every line is one document. Problems
// print as FILE:LINE: /pointer: message.
func checkLines(f string, data []byte, asJSON bool, w io.Writer) (bool, error) {
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	bad := false
	contracts := map[string]int{}
	warmups := 0 // request records marked warmup: excluded from every metric, so say how many
	for i, line := range lines {
		name := fmt.Sprintf("%s:%d", f, i+1)
		out, err := schemas.CheckDocument([]byte(line))
		if err != nil {
			return false, fmt.Errorf("check %s: %w", name, err)
		}
		if !out.Valid() {
			bad = true
		}
		contracts[out.Contract.SchemaID]++
		if out.Contract.SchemaID == contract.RequestRecordSchema && isWarmup([]byte(line)) {
			warmups++
		}
		if asJSON {
			fo := fileOutcome{File: name, Contract: out.Contract.SchemaID, Valid: out.Valid(), Violations: []jsonViolation{}}
			for _, v := range out.Violations {
				fo.Violations = append(fo.Violations, jsonViolation{Pointer: v.Pointer, Message: v.Err.Error()})
			}
			b, _ := json.Marshal(fo)
			fmt.Fprintln(w, string(b))
			continue
		}
		for _, v := range out.Violations {
			cliapp.Fprintf(w, "%s: %s\n", name, v.Error())
		}
	}
	if !bad && !asJSON {
		for c, n := range contracts {
			note := ""
			if c == contract.RequestRecordSchema && warmups > 0 {
				note = fmt.Sprintf(" (%d measured, %d warmup)", n-warmups, warmups)
			}
			cliapp.Fprintf(w, "%s: valid %d × %s%s\n", f, n, c, note)
		}
	}
	return bad, nil
}

// isWarmup reports whether a valid request record says "warmup": true.
func isWarmup(line []byte) bool {
	var r struct {
		Warmup bool `json:"warmup"`
	}
	return json.Unmarshal(line, &r) == nil && r.Warmup
}
