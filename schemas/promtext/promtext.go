package promtext

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Limits on a page. A page is untrusted input: the server wrote it.
const (
	// MaxPageBytes bounds one page.
	MaxPageBytes = 16 << 20
	// MaxLineBytes bounds one line of a page.
	MaxLineBytes = 64 << 10
	// MaxSeries bounds the cumulative series (Sample) a page holds.
	MaxSeries = 1 << 17
	// MaxLabels bounds the labels of one sample line.
	MaxLabels = 64
)

// ErrPage is wrapped by every refusal of Parse.
var ErrPage = errors.New("not a Prometheus text page")

// Sample is one cumulative series of a page: a counter's series, or the _count or _sum series of a
// histogram or summary. Gauges, untyped series, buckets and quantiles are not cumulative and are
// not returned (Parse still checks their syntax).
type Sample struct {
	// Name is the series name as the page spells it (a histogram's name with _count or _sum).
	Name string
	// Labels renders the label set as {a="x",b="y"}, sorted by name, values quoted as Go's %q
	// does ("" when the set is empty).
	Labels string
	Value  float64
}

// family is what the page declared of one metric family.
type family struct {
	name, typ   string
	help, typed bool
	sampled     bool
	done        bool // another family's line followed its lines
}

// Parse reads a text-format page and returns its cumulative series sorted by name and labels.
// It refuses (ErrPage, naming the line) a page over MaxPageBytes, a line over MaxLineBytes, more
// than MaxSeries series, bytes that are not UTF-8, a malformed HELP, TYPE or sample line, an unknown
// type, a second HELP or TYPE of a family, a TYPE after the family's samples, a family whose lines
// are not together, a series given twice, a label given twice in one set, and a counter (or a
// _count) that is negative, and a cumulative series that is not finite.
func Parse(page []byte) ([]Sample, error) {
	if len(page) > MaxPageBytes {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrPage, len(page), MaxPageBytes)
	}
	p := parser{fams: map[string]*family{}, seen: map[string]bool{}}
	for n := 1; len(page) > 0; n++ {
		line := page
		if i := bytes.IndexByte(page, '\n'); i >= 0 {
			line, page = page[:i], page[i+1:]
		} else {
			page = nil
		}
		if err := p.line(line); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", ErrPage, n, err)
		}
	}
	slices.SortFunc(p.out, func(a, b Sample) int {
		if c := strings.Compare(a.Name, b.Name); c != 0 {
			return c
		}
		return strings.Compare(a.Labels, b.Labels)
	})
	return p.out, nil
}

type parser struct {
	fams map[string]*family
	cur  *family // the family of the previous line
	seen map[string]bool
	out  []Sample
}

func (p *parser) line(line []byte) error {
	if len(line) > MaxLineBytes {
		return fmt.Errorf("%d bytes, more than %d", len(line), MaxLineBytes)
	}
	if !utf8.Valid(line) {
		return errors.New("not UTF-8")
	}
	s := strings.TrimLeft(string(line), " \t")
	s = strings.TrimSuffix(s, "\r")
	switch {
	case strings.TrimRight(s, " \t") == "":
		return nil
	case s[0] == '#':
		return p.comment(s[1:])
	default:
		return p.sample(s)
	}
}

// comment reads a # line: HELP and TYPE declare a family, anything else is a comment.
func (p *parser) comment(s string) error {
	fields := strings.Fields(s)
	if len(fields) < 2 || (fields[0] != "HELP" && fields[0] != "TYPE") {
		return nil
	}
	name := fields[1]
	if !metricName(name) {
		return fmt.Errorf("%s names %.64q, not a metric name", fields[0], name)
	}
	f := p.enter(name)
	if f.done {
		return fmt.Errorf("%s %s after another family's lines: a family's lines must be together", fields[0], name)
	}
	if fields[0] == "HELP" {
		if f.help {
			return fmt.Errorf("a second HELP for %s", name)
		}
		f.help = true
		return nil
	}
	if len(fields) != 3 {
		return fmt.Errorf("TYPE %s: want one type after the name", name)
	}
	switch {
	case f.typed:
		return fmt.Errorf("a second TYPE for %s", name)
	case f.sampled:
		return fmt.Errorf("TYPE %s after its samples", name)
	}
	switch fields[2] {
	case "counter", "gauge", "histogram", "summary", "untyped":
	default:
		return fmt.Errorf("TYPE %s: unknown type %.32q", name, fields[2])
	}
	f.typ, f.typed = fields[2], true
	return nil
}

// enter makes the family named the current one, marking the previous one done.
func (p *parser) enter(name string) *family {
	if p.cur != nil && p.cur.name == name {
		return p.cur
	}
	if p.cur != nil {
		p.cur.done = true
	}
	f := p.fams[name]
	if f == nil {
		f = &family{name: name, typ: "untyped"}
		p.fams[name] = f
	}
	p.cur = f
	return f
}

// familyOf names the family a sample line belongs to: the current histogram's or summary's for
// its _bucket, _count and _sum (and a summary's quantiles), else the sample's own name.
func (p *parser) familyOf(name string) string {
	if f := p.cur; f != nil && (f.typ == "histogram" || f.typ == "summary") {
		switch name {
		case f.name + "_count", f.name + "_sum":
			return f.name
		case f.name + "_bucket":
			if f.typ == "histogram" {
				return f.name
			}
		}
	}
	return name
}

func (p *parser) sample(s string) error {
	i := 0
	for i < len(s) && nameByte(s[i], i == 0, true) {
		i++
	}
	name := s[:i]
	if name == "" {
		return fmt.Errorf("%.64q is not a sample line (a metric name first)", s)
	}
	rest := s[i:]
	var labels string
	var lnames []string
	if strings.HasPrefix(rest, "{") {
		var err error
		labels, lnames, rest, err = readLabels(rest[1:])
		if err != nil {
			return fmt.Errorf("%s: %v", name, err)
		}
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || len(fields) > 2 || (rest[0] != ' ' && rest[0] != '\t') {
		return fmt.Errorf("%s%s: want a value and an optional timestamp after the name and labels", name, clip(labels))
	}
	v, err := parseValue(fields[0])
	if err != nil {
		return fmt.Errorf("%s%s: value %.32q is not a number", name, clip(labels), fields[0])
	}
	if len(fields) == 2 {
		if _, err := strconv.ParseInt(fields[1], 10, 64); err != nil {
			return fmt.Errorf("%s%s: timestamp %.32q is not an integer of milliseconds", name, clip(labels), fields[1])
		}
	}
	fam := p.enter(p.familyOf(name))
	if fam.done {
		return fmt.Errorf("%s after another family's lines: a family's lines must be together", name)
	}
	fam.sampled = true
	key := name + labels
	if p.seen[key] {
		return fmt.Errorf("%s%s given twice", name, clip(labels))
	}
	cumulative := fam.typ == "counter" && name == fam.name ||
		(fam.typ == "histogram" || fam.typ == "summary") && (name == fam.name+"_count" || name == fam.name+"_sum")
	switch {
	case fam.typ == "histogram" && name == fam.name+"_bucket" && !slices.Contains(lnames, "le"):
		return fmt.Errorf("%s%s: a bucket without an le label", name, clip(labels))
	case fam.typ == "histogram" && name == fam.name:
		return fmt.Errorf("%s: a histogram's samples are %s_bucket, _count and _sum", name, name)
	case (fam.typ == "histogram" || fam.typ == "summary") && name != fam.name && slices.Contains(lnames, "le") && !strings.HasSuffix(name, "_bucket"):
		return fmt.Errorf("%s%s: le on a %s's _count or _sum", name, clip(labels), fam.typ)
	case cumulative && (math.IsNaN(v) || math.IsInf(v, 0)):
		return fmt.Errorf("%s%s: %s is not a finite number", name, clip(labels), fields[0])
	case cumulative && v < 0 && !strings.HasSuffix(name, "_sum"):
		return fmt.Errorf("%s%s: %s is negative (a counter and a _count are non-negative)", name, clip(labels), fields[0])
	}
	p.seen[key] = true
	if !cumulative {
		return nil
	}
	if len(p.out) >= MaxSeries {
		return fmt.Errorf("more than %d cumulative series", MaxSeries)
	}
	p.out = append(p.out, Sample{Name: name, Labels: labels, Value: v})
	return nil
}

// readLabels reads label pairs after '{' up to '}' and returns them rendered (sorted by name),
// their names and what follows the '}'.
func readLabels(s string) (string, []string, string, error) {
	type pair struct{ name, value string }
	var pairs []pair
	for {
		s = strings.TrimLeft(s, " \t")
		if strings.HasPrefix(s, "}") {
			break
		}
		if len(pairs) == MaxLabels {
			return "", nil, "", fmt.Errorf("more than %d labels", MaxLabels)
		}
		i := 0
		for i < len(s) && nameByte(s[i], i == 0, false) {
			i++
		}
		name := s[:i]
		if name == "" {
			return "", nil, "", fmt.Errorf("a label name expected at %.32q", s)
		}
		s = strings.TrimLeft(s[i:], " \t")
		if !strings.HasPrefix(s, "=") {
			return "", nil, "", fmt.Errorf("label %s: '=' expected", name)
		}
		s = strings.TrimLeft(s[1:], " \t")
		if !strings.HasPrefix(s, `"`) {
			return "", nil, "", fmt.Errorf("label %s: a quoted value expected", name)
		}
		var val strings.Builder
		j := 1
		for ; j < len(s) && s[j] != '"'; j++ {
			if s[j] != '\\' {
				val.WriteByte(s[j])
				continue
			}
			j++
			if j == len(s) {
				break
			}
			switch s[j] {
			case '\\', '"':
				val.WriteByte(s[j])
			case 'n':
				val.WriteByte('\n')
			default:
				return "", nil, "", fmt.Errorf("label %s: escape \\%c (only \\\\, \\\" and \\n)", name, s[j])
			}
		}
		if j >= len(s) {
			return "", nil, "", fmt.Errorf("label %s: unterminated value", name)
		}
		for _, p := range pairs {
			if p.name == name {
				return "", nil, "", fmt.Errorf("label %s given twice", name)
			}
		}
		pairs = append(pairs, pair{name, val.String()})
		s = strings.TrimLeft(s[j+1:], " \t")
		switch {
		case strings.HasPrefix(s, ","):
			s = s[1:]
		case strings.HasPrefix(s, "}"):
		default:
			return "", nil, "", fmt.Errorf("label %s: ',' or '}' expected after its value", name)
		}
	}
	rest := s[1:]
	if len(pairs) == 0 {
		return "", nil, rest, nil
	}
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.name, b.name) })
	buf := make([]byte, 0, 2*len(s))
	names := make([]string, len(pairs))
	buf = append(buf, '{')
	for i, p := range pairs {
		if i > 0 {
			buf = append(buf, ',')
		}
		names[i] = p.name
		buf = append(buf, p.name...)
		buf = append(buf, '=')
		buf = strconv.AppendQuote(buf, p.value)
	}
	buf = append(buf, '}')
	return string(buf), names, rest, nil
}

// parseValue reads a sample value: a decimal float, +Inf, -Inf or NaN (not Go's other spellings:
// hexadecimal, underscores, "inf", "infinity").
func parseValue(s string) (float64, error) {
	switch s {
	case "+Inf":
		return math.Inf(1), nil
	case "-Inf":
		return math.Inf(-1), nil
	case "NaN":
		return math.NaN(), nil
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseFloat(s, 64)
}

// metricName reports whether s is a metric name: [a-zA-Z_:][a-zA-Z0-9_:]*.
func metricName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !nameByte(s[i], i == 0, true) {
			return false
		}
	}
	return true
}

// nameByte reports whether c may stand in a metric name (colon true) or label name at its place.
func nameByte(c byte, first, colon bool) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || (colon && c == ':') || (!first && '0' <= c && c <= '9')
}

// clip shortens a rendered label set for a message.
func clip(s string) string {
	if len(s) <= 96 {
		return s
	}
	return s[:96] + "…"
}
