package textout

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas/safetext"
)

// Width is the widest line a Printer writes for the fixed tables; free text (paths, findings,
// reasons) wraps at it too.
const Width = 100

// Printer writes lines to w; the first write error stops it and is kept (Err).
type Printer struct {
	w   *bufio.Writer
	err error
}

// New returns a Printer writing to w.
func New(w *bufio.Writer) *Printer { return &Printer{w: w} }

// Err is the first write error, or nil.
func (p *Printer) Err() error { return p.err }

// Line writes s and a newline, s made safe for a terminal (safetext.Escape: a model id, a device
// name or a finding that quotes one holds no escape sequence, carriage return or bidi override
// that reaches the terminal). Wrap and the tables escape first so that widths count what is shown.
func (p *Printer) Line(s string) {
	if p.err == nil {
		_, p.err = p.w.WriteString(safetext.Escape(s) + "\n")
	}
}

// escapeCells returns rows with every cell made safe (safetext.Escape), so that column widths are
// those of the text shown.
func escapeCells(rows [][]string) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = make([]string, len(r))
		for j, c := range r {
			out[i][j] = safetext.Escape(c)
		}
	}
	return out
}

// Wrap writes label and text, continuing long text on indented lines within Width.
func (p *Printer) Wrap(label, text string) {
	const indent = 11
	prefix := fmt.Sprintf("%-*s", indent, safetext.Escape(label))
	words := strings.Fields(safetext.Escape(text))
	cur := prefix
	for _, word := range words {
		for len([]rune(word)) > Width-indent {
			// A word longer than a line (a path, a digest): break it.
			r := []rune(word)
			if cur != prefix && strings.TrimSpace(cur) != "" {
				p.Line(strings.TrimRight(cur, " "))
				cur = strings.Repeat(" ", indent)
			}
			p.Line(cur + string(r[:Width-indent]))
			cur = strings.Repeat(" ", indent)
			word = string(r[Width-indent:])
		}
		sep := " "
		if len(strings.TrimSpace(cur)) == 0 || cur == prefix {
			sep = ""
		}
		if len([]rune(cur))+len(sep)+len([]rune(word)) > Width {
			p.Line(strings.TrimRight(cur, " "))
			cur, sep = strings.Repeat(" ", indent), ""
		}
		cur += sep + word
	}
	p.Line(strings.TrimRight(cur, " "))
}

// Table writes cells aligned in columns two spaces apart, indented by two: the first left
// columns left-aligned, the others (numbers) right-aligned.
func (p *Printer) Table(left int, rows [][]string) {
	rows = escapeCells(rows)
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	for _, r := range rows {
		var b strings.Builder
		b.WriteString("  ")
		for i, c := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-len([]rune(c)))
			if i < left {
				b.WriteString(c + pad)
			} else {
				b.WriteString(pad + c)
			}
		}
		p.Line(strings.TrimRight(b.String(), " "))
	}
}

// FitTable writes rows as a table when it fits Width; otherwise each data row as one wrapped
// Line of "header value" pairs under its first cell, so nothing is cut.
func (p *Printer) FitTable(left int, rows [][]string) {
	rows = escapeCells(rows)
	widths := map[int]int{}
	for _, r := range rows {
		for i, c := range r {
			widths[i] = max(widths[i], len([]rune(c)))
		}
	}
	total := 2
	for i := range widths {
		total += widths[i]
		if i > 0 {
			total += 2
		}
	}
	if total <= Width {
		p.Table(left, rows)
		return
	}
	head := rows[0]
	for _, r := range rows[1:] {
		var parts []string
		for i := 1; i < len(r) && i < len(head); i++ {
			parts = append(parts, head[i]+" "+r[i])
		}
		p.Wrap("", r[0]+": "+strings.Join(parts, ", "))
	}
}
