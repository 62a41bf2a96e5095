// Package qualrun is the qualrun command line: it turns flags into calls of the runner library and
// decides what the user sees.
package qualrun

import (
	"errors"
	"fmt"
	"io"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// Version is set at build time with -ldflags "-X .../qualrun.Version=...".
var Version = "dev"

// Main runs qualrun with args (args[0] is the program name) and returns the exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	app := &cli.App{
		Name:           "qualrun",
		Usage:          "run qualkit campaigns against an owned server on this host",
		Version:        Version,
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
		},
		Commands: []*cli.Command{serveCommand()},
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: unknown command %q (see qualrun --help)", exitcode.ErrUsage, c.Args().First())
			}
			return cli.ShowAppHelp(c)
		},
	}
	for _, cmd := range app.Commands {
		cmd.OnUsageError = app.OnUsageError
	}
	err := app.Run(args)
	if err != nil && !errors.Is(err, exitcode.ErrRejected) && !errors.Is(err, exitcode.ErrInterrupted) {
		fmt.Fprintln(stderr, "qualrun:", err)
	}
	return exitcode.Code(err)
}
