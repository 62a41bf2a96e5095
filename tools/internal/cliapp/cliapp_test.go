package cliapp

import (
	"bytes"
	"errors"
	"slices"
	"strings"
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

// TestFprintfEscapesArguments: the bytes written hold no ESC, CR or bidi override from an
// argument, the format's own newline and the layout verbs (%-8s, %d, %q) are kept.
func TestFprintfEscapesArguments(t *testing.T) {
	hostile := "H200\x1b[2J\x1b]0;x\x07\rverified \u202edeifirev"
	for _, tc := range []struct {
		name   string
		format string
		args   []any
		want   string
	}{
		{"string", "device %s\n", []any{hostile}, "device H200\\x1b[2J\\x1b]0;x\\x07\\rverified \\u202edeifirev\n"},
		{"padded", "%-6s|%d\n", []any{"a\rb", 3}, "a\\rb   |3\n"},
		{"error", "qualrun: %v\n", []any{errors.New("layer 1: title \x1b[31mx")}, "qualrun: layer 1: title \\x1b[31mx\n"},
		{"error lines", "qualrun: %v\n", []any{ErrorLines(errors.New("refused:\n  /a\x1b[2J: thermal\r\n  /b"))}, "qualrun: refused:\n  /a\\x1b[2J: thermal\\r\n  /b\n"},
		{"error on a line", "  finding: %v\n", []any{errors.New("device a\nverdict  verified")}, "  finding: device a\\nverdict  verified\n"},
		{"quoted", "%q\n", []any{"a\x1bb"}, "\"a\\x1bb\"\n"},
		{"plain", "%s %v %.2f\n", []any{"ok", true, 1.5}, "ok true 1.50\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			Fprintf(&b, tc.format, tc.args...)
			if b.String() != tc.want {
				t.Fatalf("Fprintf = %q, want %q", b.String(), tc.want)
			}
		})
	}
	var b strings.Builder
	Fprintln(&b, "note:", "a\u2066b")
	if b.String() != "note: a\\u2066b\n" {
		t.Fatalf("Fprintln = %q", b.String())
	}
}
