package metrics

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/qualkit/qualkit/schemas/contract"
	formulas "github.com/qualkit/qualkit/schemas/metric"
)

// SeriesDelta is the change of one counter series (or a histogram's or summary's _count or
// _sum) between the scrapes before and after a row.
type SeriesDelta struct {
	// Name is the series name (a histogram's name with _count or _sum appended).
	Name string `json:"name"`
	// Labels renders the label set as {a="x",b="y"}, sorted by name ("" when empty).
	Labels string  `json:"labels"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Delta  float64 `json:"delta"`
}

var metricName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// TelemetryDeltas parses two Prometheus text-format pages (the server's /metrics before and after
// a row) and returns the counter deltas: one SeriesDelta per series (counters, and the _count and
// _sum of histograms and summaries), and one diagnostic metric per family,
// "server.<name>.delta" (a ':' in the name written '_'), summing its series' deltas (formula telemetry_delta.v1). Such metrics are
// evidence for diagnosis, never for a verdict. A series that only the second page has counts
// from zero; a series that decreased (a counter reset) or vanished is left out with a warning.
// It is a pure function of the two pages.
func TelemetryDeltas(before, after []byte) ([]contract.Metric, []SeriesDelta, []string, error) {
	b, err := parseFamilies(before)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse the scrape before the row: %w", err)
	}
	a, err := parseFamilies(after)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse the scrape after the row: %w", err)
	}
	var series []SeriesDelta
	var warnings []string
	sums := map[string]float64{}
	counts := map[string]int{}
	for key, av := range a {
		bv, ok := b[key]
		if !ok {
			bv = sample{name: av.name, labels: av.labels}
		}
		if av.value < bv.value {
			warnings = append(warnings, fmt.Sprintf("%s%s decreased from %g to %g (counter reset): left out", av.name, av.labels, bv.value, av.value))
			continue
		}
		d := SeriesDelta{Name: av.name, Labels: av.labels, Before: bv.value, After: av.value, Delta: av.value - bv.value}
		series = append(series, d)
		sums[av.name] += d.Delta
		counts[av.name]++
	}
	for key, bv := range b {
		if _, ok := a[key]; !ok {
			warnings = append(warnings, fmt.Sprintf("%s%s vanished between the scrapes: left out", bv.name, bv.labels))
		}
	}
	slices.SortFunc(series, func(x, y SeriesDelta) int {
		if c := strings.Compare(x.Name, y.Name); c != 0 {
			return c
		}
		return strings.Compare(x.Labels, y.Labels)
	})
	slices.Sort(warnings)
	names := make([]string, 0, len(sums))
	for n := range sums {
		names = append(names, n)
	}
	slices.Sort(names)
	var ms []contract.Metric
	used := map[string]string{} // metric name -> the family it came from
	for _, n := range names {
		// A ':' (vLLM's and SGLang's namespace separator, "vllm:prefix_cache_hits") is not
		// allowed in a metric name: it becomes '_'. Two families that then collide keep only
		// their series deltas.
		plain := strings.ReplaceAll(n, ":", "_")
		name := "server." + plain + ".delta"
		if prev, ok := used[name]; ok {
			warnings = append(warnings, fmt.Sprintf("%s: its metric name %s is %s's too: only its series deltas are kept", n, name, prev))
			continue
		}
		used[name] = n
		if !metricName.MatchString(plain) || len(name) > 128 {
			warnings = append(warnings, fmt.Sprintf("%s: name not usable as a metric name: only its series deltas are kept", n))
			continue
		}
		unit := "count"
		switch {
		case strings.HasSuffix(n, "_seconds_total") || strings.HasSuffix(n, "_seconds_sum"):
			unit = "s"
		case strings.HasSuffix(n, "_bytes_total") || strings.HasSuffix(n, "_bytes_sum"):
			unit = "bytes"
		}
		s := int64(counts[n])
		ms = append(ms, contract.Metric{Name: name, Value: sums[n], Unit: unit, Aggregation: contract.Aggregation(telemetryDelta.Aggregation), Direction: contract.Direction(telemetryDelta.Direction),
			Formula: telemetryDelta.ID, Samples: &s, Diagnostic: telemetryDelta.Diagnostic})
	}
	ms = append(ms, serverRatios(sums)...)
	return ms, series, warnings, nil
}

// serverRatios are the built-in ratios (formulas.ServerRatios) of the families' summed deltas,
// each emitted when its denominator families moved.
func serverRatios(sums map[string]float64) []contract.Metric {
	sum := func(names []string) (float64, int) {
		v, n := 0.0, 0
		for fam, d := range sums {
			if slices.Contains(names, strings.TrimSuffix(fam, "_total")) {
				v, n = v+d, n+1
			}
		}
		return v, n
	}
	var out []contract.Metric
	for _, r := range formulas.ServerRatios {
		num, _ := sum(r.Numerator)
		den, n := sum(r.Denominator)
		if n == 0 || den <= 0 {
			continue
		}
		f, _ := formulas.Lookup(r.Formula)
		s := int64(n)
		out = append(out, contract.Metric{Name: f.Name, Value: num / den, Unit: f.Unit, Aggregation: f.Aggregation, Direction: f.Direction, Formula: f.ID, Samples: &s, Diagnostic: f.Diagnostic})
	}
	return out
}

type sample struct {
	name, labels string
	value        float64
}

// parseFamilies reads the cumulative series of a text-format page, keyed by name and labels.
func parseFamilies(page []byte) (map[string]sample, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	out := map[string]sample{}
	put := func(name string, m *dto.Metric, v float64) {
		l := renderLabels(m.GetLabel())
		out[name+l] = sample{name: name, labels: l, value: v}
	}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				put(name, m, m.GetCounter().GetValue())
			case dto.MetricType_HISTOGRAM:
				put(name+"_count", m, float64(m.GetHistogram().GetSampleCount()))
				put(name+"_sum", m, m.GetHistogram().GetSampleSum())
			case dto.MetricType_SUMMARY:
				put(name+"_count", m, float64(m.GetSummary().GetSampleCount()))
				put(name+"_sum", m, m.GetSummary().GetSampleSum())
			}
		}
	}
	return out, nil
}

func renderLabels(ls []*dto.LabelPair) string {
	if len(ls) == 0 {
		return ""
	}
	ls = slices.Clone(ls)
	slices.SortFunc(ls, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
	var sb strings.Builder
	sb.WriteByte('{')
	for i, l := range ls {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, "%s=%q", l.GetName(), l.GetValue())
	}
	sb.WriteByte('}')
	return sb.String()
}

// telemetryDelta is the catalogue's telemetry_delta.v1 (its unit is each family's own).
var telemetryDelta, _ = formulas.Lookup(formulas.TelemetryDelta)
