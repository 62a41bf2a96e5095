package cliapp

import (
	"bytes"
	"slices"
	"testing"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/urfave/cli/v2"
)

func app(got *[]string) *cli.App {
	var out, errOut bytes.Buffer
	return New("tool", "a tool", "dev", &out, &errOut, &cli.Command{
		Name:  "do",
		Flags: []cli.Flag{&cli.StringFlag{Name: "key"}, &cli.BoolFlag{Name: "json"}},
		Action: func(c *cli.Context) error {
			*got = append([]string{c.String("key"), map[bool]string{true: "json", false: "text"}[c.Bool("json")]}, c.Args().Slice()...)
			return nil
		},
	})
}

func TestFlagsAfterArguments(t *testing.T) {
	for _, args := range [][]string{
		{"tool", "do", "A", "--key", "K", "--json", "B"},
		{"tool", "do", "--key=K", "A", "--json", "B"},
		{"tool", "do", "--json", "--key", "K", "--", "A", "B"},
	} {
		var got []string
		if code := Main(app(&got), args); code != exitcode.OK {
			t.Fatalf("%v: exit %d", args, code)
		}
		if want := []string{"K", "json", "A", "B"}; !slices.Equal(got, want) {
			t.Errorf("%v: got %v, want %v", args, got, want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	var got []string
	for _, args := range [][]string{{"tool", "nope"}, {"tool", "do", "--no-such-flag"}} {
		if code := Main(app(&got), args); code != exitcode.Usage {
			t.Errorf("%v: exit %d, want %d", args, code, exitcode.Usage)
		}
	}
}

// TestSubcommandFlagsAfterArguments: "tool grp sub A --key K" parses the subcommand's flags.
func TestSubcommandFlagsAfterArguments(t *testing.T) {
	var got []string
	var out, errOut bytes.Buffer
	a := New("tool", "a tool", "dev", &out, &errOut, &cli.Command{
		Name: "grp",
		Subcommands: []*cli.Command{{
			Name:  "sub",
			Flags: []cli.Flag{&cli.StringFlag{Name: "key"}, &cli.BoolFlag{Name: "json"}},
			Action: func(c *cli.Context) error {
				got = append([]string{c.String("key"), map[bool]string{true: "json", false: "text"}[c.Bool("json")]}, c.Args().Slice()...)
				return nil
			},
		}},
	})
	if code := Main(a, []string{"tool", "grp", "sub", "A", "--key", "K", "--json", "B"}); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if want := []string{"K", "json", "A", "B"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
