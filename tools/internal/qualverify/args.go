package qualverify

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

// interspersed lets a command take its flags after its positional arguments, as in
// "qualverify verify RECEIPT --key PUB" (urfave/cli v2 stops parsing flags at the first
// positional argument). The returned command skips the app's flag parsing and runs cmd in a
// one-command app over its arguments reordered flags first; "--" still ends the flags.
func interspersed(cmd *cli.Command) *cli.Command {
	inner := *cmd
	inner.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return fmt.Errorf("%w: %v", exitcode.ErrUsage, err)
	}
	return &cli.Command{
		Name:            cmd.Name,
		Usage:           cmd.Usage,
		ArgsUsage:       cmd.ArgsUsage,
		Description:     cmd.Description,
		Flags:           cmd.Flags,
		SkipFlagParsing: true,
		Action: func(c *cli.Context) error {
			app := &cli.App{
				Name:            c.App.Name,
				HelpName:        c.App.Name,
				Version:         c.App.Version,
				Writer:          c.App.Writer,
				ErrWriter:       c.App.ErrWriter,
				ExitErrHandler:  func(*cli.Context, error) {},
				OnUsageError:    inner.OnUsageError,
				Commands:        []*cli.Command{&inner},
				HideHelpCommand: true,
			}
			args := append([]string{c.App.Name, inner.Name}, flagsFirst(&inner, c.Args().Slice())...)
			return app.RunContext(c.Context, args)
		},
	}
}

// flagsFirst moves the flags (and the values of non-boolean flags) before the positional
// arguments, which follow a "--".
func flagsFirst(cmd *cli.Command, rest []string) []string {
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
	if len(pos) > 0 {
		flags = append(flags, "--")
	}
	return append(flags, pos...)
}
