// Package qualrun is the qualrun command line: it turns flags into calls of the runner library and
// decides what the user sees.
package qualrun

import (
	"errors"
	"fmt"
	"io"
	"strings"

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
		Commands: []*cli.Command{runCommand(), serveCommand(), captureCommand(), keygenCommand(), attestCommand()},
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
	err := app.Run(permute(app, args))
	if err != nil && !errors.Is(err, exitcode.ErrRejected) && !errors.Is(err, exitcode.ErrInterrupted) {
		fmt.Fprintln(stderr, "qualrun:", err)
	}
	return exitcode.Code(err)
}

// permute moves a subcommand's positional arguments after its flags, so that
// "qualrun run WORKLOAD --variant X" parses like "qualrun run --variant X WORKLOAD" (urfave/cli v2
// stops parsing flags at the first positional argument). "--" ends the flags as usual.
func permute(app *cli.App, args []string) []string {
	if len(args) < 3 {
		return args
	}
	var cmd *cli.Command
	for _, c := range app.Commands {
		if c.HasName(args[1]) {
			cmd = c
		}
	}
	if cmd == nil {
		return args
	}
	takesValue := map[string]bool{}
	for _, f := range cmd.Flags {
		_, isBool := f.(*cli.BoolFlag)
		for _, n := range f.Names() {
			takesValue[n] = !isBool
		}
	}
	var flags, pos []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			pos = append(pos, rest[i+1:]...)
			break
		}
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if !strings.Contains(name, "=") && takesValue[name] && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
			continue
		}
		pos = append(pos, a)
	}
	out := append([]string{args[0], args[1]}, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}
