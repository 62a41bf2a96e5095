package qualrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"github.com/qualkit/qualkit/runner/pyruntime"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func captureCommand() *cli.Command {
	return &cli.Command{
		Name:  "capture-runtime",
		Usage: "write a portable runtime manifest (qualkit.runtime-manifest.v1) of a reference Python runtime",
		Description: "Runs the interpreter once (argv only, empty environment, 30 s at most) to read its version and\n" +
			"sys.path, hashes the interpreter executable, lists the distributions installed in its site-packages\n" +
			"and dist-packages directories (name, version, digest of RECORD) and, with --launch-implementation,\n" +
			"hashes the code that launches servers in it. The manifest describes software only: no host\n" +
			"temperature or resource policy. It is validated, then written to a new file (never overwritten).\n" +
			"Exit 0 when written; 2 for usage errors (bad flags, an interpreter that cannot be probed, an\n" +
			"existing output file); 3 if the manifest could not be built or written.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "python", Usage: "interpreter `PATH` (recorded as given)"},
			&cli.StringFlag{Name: "output", Usage: "manifest `FILE` to create (must not exist)"},
			&cli.StringFlag{Name: "id", Usage: "manifest `ID` (default python-<version>)"},
			&cli.StringFlag{Name: "launch-implementation", Usage: "`FILE` of the code that launches servers in this runtime, bound by digest"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: capture-runtime takes no arguments, got %q", exitcode.ErrUsage, c.Args().First())
			}
			for _, f := range []string{"python", "output"} {
				if c.String(f) == "" {
					return fmt.Errorf("%w: capture-runtime needs --%s", exitcode.ErrUsage, f)
				}
			}
			return captureRuntime(c.Context, c.String("python"), c.String("output"), c.String("id"), c.String("launch-implementation"), c.App.Writer)
		},
	}
}

var notIDChar = regexp.MustCompile(`[^a-z0-9._-]+`)

// defaultID turns an interpreter version into the default manifest id, python-<version>.
func defaultID(version string) string {
	return "python-" + strings.Trim(notIDChar.ReplaceAllString(strings.ToLower(version), "-"), "-")
}

func captureRuntime(ctx context.Context, python, output, id, launch string, stdout io.Writer) error {
	if _, err := os.Lstat(output); err == nil {
		return fmt.Errorf("%w: %s exists; refusing to overwrite it", exitcode.ErrUsage, output)
	}
	if launch != "" {
		if _, err := os.Stat(launch); err != nil {
			return fmt.Errorf("%w: launch implementation: %v", exitcode.ErrUsage, err)
		}
	}
	captureID := id
	if captureID == "" {
		captureID = "python" // replaced below, once the version is known
	}
	doc, err := pyruntime.Capture(ctx, python, captureID, launch)
	if errors.Is(err, pyruntime.ErrInvalidID) || errors.Is(err, pyruntime.ErrInterpreter) {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	if err != nil {
		return err
	}
	if id == "" {
		doc.ID = defaultID(doc.Interpreter.Version)
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode runtime manifest: %w", err)
	}
	data = append(data, '\n')
	out, err := schemas.CheckDocument(data)
	if err != nil {
		return fmt.Errorf("check runtime manifest: %w", err)
	}
	if !out.Valid() {
		var lines []string
		for _, v := range out.Violations {
			lines = append(lines, v.Error())
		}
		return fmt.Errorf("runtime manifest does not validate (nothing written):\n%s", strings.Join(lines, "\n"))
	}
	if err := writeExclusive(output, data); err != nil {
		return err
	}
	cliapp.Fprintf(stdout, "wrote %s: %s, Python %s (%s), %d distributions\n", output, doc.ID, doc.Interpreter.Version, doc.Interpreter.Digest, len(doc.Packages))
	return nil
}

// writeExclusive creates path (O_EXCL: never replacing anything) and writes data to it; a
// partial file is removed.
func writeExclusive(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s exists; refusing to overwrite it", exitcode.ErrUsage, path)
	}
	if err != nil {
		return fmt.Errorf("%w: create %s: %v", exitcode.ErrUsage, path, err)
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
