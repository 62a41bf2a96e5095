package promtext

import (
	"fmt"
	"slices"
	"strings"
)

// SeriesDelta is the change of one cumulative series between a page scraped before a row and one
// scraped after it.
type SeriesDelta struct {
	// Name is the series name (a histogram's name with _count or _sum appended).
	Name string `json:"name"`
	// Labels renders the label set as {a="x",b="y"}, sorted by name ("" when empty).
	Labels string  `json:"labels"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Delta  float64 `json:"delta"`
}

// Deltas compares the cumulative series of two pages of one server (Parse's output, before and
// after) and returns one SeriesDelta per series of the second page, sorted by name and labels,
// and warnings, sorted. A series that only the second page has counts from zero; a series that
// decreased (a counter reset: the server restarted or reset it) or vanished is left out with a
// warning. It is the one rule for both the runner and the verifier.
func Deltas(before, after []Sample) ([]SeriesDelta, []string) {
	key := func(s Sample) string { return s.Name + s.Labels }
	b := make(map[string]Sample, len(before))
	for _, s := range before {
		b[key(s)] = s
	}
	a := make(map[string]bool, len(after))
	out := []SeriesDelta{}
	var warnings []string
	for _, av := range after {
		a[key(av)] = true
		bv, ok := b[key(av)]
		if !ok {
			bv = Sample{Name: av.Name, Labels: av.Labels}
		}
		if av.Value < bv.Value {
			warnings = append(warnings, fmt.Sprintf("%s%s decreased from %g to %g (counter reset): left out", av.Name, av.Labels, bv.Value, av.Value))
			continue
		}
		out = append(out, SeriesDelta{Name: av.Name, Labels: av.Labels, Before: bv.Value, After: av.Value, Delta: av.Value - bv.Value})
	}
	for _, bv := range before {
		if !a[key(bv)] {
			warnings = append(warnings, fmt.Sprintf("%s%s vanished between the scrapes: left out", bv.Name, bv.Labels))
		}
	}
	slices.SortFunc(out, func(x, y SeriesDelta) int {
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return strings.Compare(x.Labels, y.Labels)
	})
	slices.Sort(warnings)
	return out, warnings
}
