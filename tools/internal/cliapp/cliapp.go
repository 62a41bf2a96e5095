// Package cliapp holds the conventions every qualkit command line shares: urfave/cli apps whose
// errors map to exit codes in one table (tools/internal/exitcode), usage errors that say so, and
// flags accepted after positional arguments ("qualrun run WORKLOAD --variant X").
package cliapp

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// New returns an app with qualkit's conventions: no exit from inside urfave/cli, usage errors
// wrapped in exitcode.ErrUsage (for every command and subcommand too), and an unknown command refused.
func New(name, usage, version string, stdout, stderr io.Writer, cmds ...*cli.Command) *cli.App {
	onUsage := func(_ *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	var setUsage func([]*cli.Command)
	setUsage = func(cs []*cli.Command) {
		for _, c := range cs {
			c.OnUsageError = onUsage
			setUsage(c.Subcommands)
		}
	}
	setUsage(cmds)
	return &cli.App{
		Name: name, Usage: usage, Version: version, Writer: stdout, ErrWriter: stderr,
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError:   onUsage,
		Commands:       cmds,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return fmt.Errorf("%w: unknown command %q (see %s --help)", exitcode.ErrUsage, c.Args().First(), name)
			}
			return cli.ShowAppHelp(c)
		},
	}
}

// Main runs app over args (args[0] is the program name), prints an error that is not a rejection
// or an interruption (those have printed their findings), made Safe (an error may quote input), and
// returns the exit code.
func Main(app *cli.App, args []string) int {
	err := app.Run(Permute(app, args))
	if err != nil && !errors.Is(err, exitcode.ErrRejected) && !errors.Is(err, exitcode.ErrInterrupted) {
		Fprintf(app.ErrWriter, "%s: %v\n", app.Name, ErrorLines(err))
	}
	return exitcode.Code(err)
}

// Permute moves a subcommand's positional arguments after its flags, so that
// "qualrun run WORKLOAD --variant X" parses like "qualrun run --variant X WORKLOAD" (urfave/cli v2
// stops parsing flags at the first positional argument). "--" ends the flags as usual.
func Permute(app *cli.App, args []string) []string {
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
	// A command with subcommands ("qualrun fleet slurm PLAN --output F"): permute the subcommand's
	// arguments with its own flags.
	prefix := []string{args[0], args[1]}
	rest := args[2:]
	for len(rest) > 0 && len(cmd.Subcommands) > 0 {
		var sub *cli.Command
		for _, c := range cmd.Subcommands {
			if c.HasName(rest[0]) {
				sub = c
			}
		}
		if sub == nil {
			break
		}
		prefix = append(prefix, rest[0])
		cmd, rest = sub, rest[1:]
	}
	if cmd.SkipFlagParsing {
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
	out := append(prefix, flags...)
	if len(pos) > 0 {
		out = append(out, "--")
		out = append(out, pos...)
	}
	return out
}
