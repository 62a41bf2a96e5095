package cliapp

import (
	"fmt"
	"io"
	"strings"

	"github.com/qualkit/qualkit/schemas/safetext"
)

// Safe returns s made safe for a terminal (schemas/safetext: control characters, ESC and CR
// included, and Unicode bidi overrides, isolates and marks written as visible escapes such as
// \x1b and \u202e). Text output of input-derived strings goes through it; JSON output never does.
func Safe(s string) string { return safetext.Escape(s) }

// Fprintf is fmt.Fprintf for text output: every argument is formatted as fmt would and then made
// Safe, so a device name, a model id, a layer title or an error quoting one cannot drive the
// terminal. The format itself is the program's own and is written as is.
func Fprintf(w io.Writer, format string, a ...any) (int, error) {
	return fmt.Fprintf(w, format, safeArgs(a)...)
}

// Fprintln is fmt.Fprintln for text output, its arguments made Safe as Fprintf's are.
func Fprintln(w io.Writer, a ...any) (int, error) {
	return fmt.Fprintln(w, safeArgs(a)...)
}

func safeArgs(a []any) []any {
	out := make([]any, len(a))
	for i, v := range a {
		out[i] = safeArg{v}
	}
	return out
}

// safeArg formats its value with the verb, flags, width and precision it was given, then makes
// the result Safe. %q is already safe (strconv.Quote escapes every non-printable rune) and is
// left to fmt, so nothing is escaped twice. Lines keep their line breaks, each line made Safe.
type safeArg struct{ v any }

func (s safeArg) Format(f fmt.State, verb rune) {
	text := fmt.Sprintf(fmt.FormatString(f, verb), s.v)
	switch _, isLines := s.v.(Lines); {
	case verb == 'q':
	case isLines:
		text = SafeLines(text)
	default:
		text = Safe(text)
	}
	io.WriteString(f, text)
}

// Lines is a message made of lines, such as an error that lists its reasons one a line (a refused
// import, a preflight): Fprintf keeps its line breaks and makes each line Safe. Everything else an
// argument holds, a newline included, is escaped: a value printed on a line stays on that line.
type Lines string

// ErrorLines is err's message as Lines, for printing an error that ends a command.
func ErrorLines(err error) Lines { return Lines(err.Error()) }

// SafeLines is Safe for each line of s, the line breaks ("\n") kept.
func SafeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = Safe(l)
	}
	return strings.Join(lines, "\n")
}
