package metric

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/promtext"
)

// serverMetricName is the family part a server.<family>.delta metric name may carry.
var serverMetricName = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ServerDeltaName is the metric a server counter family's delta is recorded as:
// "server.<family>.delta", a ':' in the family's name (vLLM's and SGLang's namespace separator,
// "vllm:prefix_cache_hits_total") written '_'; ok is false when the name is not usable as a metric
// name.
func ServerDeltaName(family string) (string, bool) {
	plain := strings.ReplaceAll(family, ":", "_")
	name := "server." + plain + ".delta"
	return name, serverMetricName.MatchString(plain) && len(name) <= 128
}

// ServerTelemetry parses two /metrics pages of the server (scraped before and after a row's
// measured requests) and returns the row's server metrics (ServerMetrics), the series deltas and
// the warnings of both. The runner records what it returns; the verifier recomputes it from the
// pages the evidence keeps.
func ServerTelemetry(before, after []byte) ([]contract.Metric, []promtext.SeriesDelta, []string, error) {
	b, err := promtext.Parse(before)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse the scrape before the row: %w", err)
	}
	a, err := promtext.Parse(after)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("parse the scrape after the row: %w", err)
	}
	series, warnings := promtext.Deltas(b, a)
	ms, more := ServerMetrics(series)
	warnings = append(warnings, more...)
	return ms, series, warnings, nil
}

// ServerMetrics turns series deltas (promtext.Deltas, sorted) into the row's diagnostic server
// metrics: one per family, ServerDeltaName(family), summing its series' deltas in order
// (telemetry_delta.v1, unit s for *_seconds_total and *_seconds_sum, bytes for *_bytes_total and
// *_bytes_sum, else count; samples the family's series), then the ServerRatios whose denominator
// families moved. A family whose name is not usable, or whose metric name an earlier family (in
// name order) took, keeps only its series deltas, with a warning.
func ServerMetrics(series []promtext.SeriesDelta) ([]contract.Metric, []string) {
	var names []string
	sums := map[string]float64{}
	counts := map[string]int64{}
	for _, d := range series {
		if _, ok := sums[d.Name]; !ok {
			names = append(names, d.Name)
		}
		sums[d.Name] += d.Delta
		counts[d.Name]++
	}
	slices.Sort(names)
	f, _ := Lookup(TelemetryDelta)
	var ms []contract.Metric
	var warnings []string
	used := map[string]string{} // metric name -> the family it came from
	for _, n := range names {
		name, ok := ServerDeltaName(n)
		if prev, taken := used[name]; taken {
			warnings = append(warnings, fmt.Sprintf("%s: its metric name %s is %s's too: only its series deltas are kept", n, name, prev))
			continue
		}
		used[name] = n
		if !ok {
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
		s := counts[n]
		ms = append(ms, contract.Metric{Name: name, Value: sums[n], Unit: unit, Aggregation: f.Aggregation, Direction: f.Direction,
			Formula: f.ID, Samples: &s, Diagnostic: f.Diagnostic})
	}
	for _, r := range ServerRatios {
		num, _ := sumFamilies(names, sums, r.Numerator)
		den, n := sumFamilies(names, sums, r.Denominator)
		if n == 0 || den <= 0 {
			continue
		}
		rf, _ := Lookup(r.Formula)
		s := n
		ms = append(ms, contract.Metric{Name: rf.Name, Value: num / den, Unit: rf.Unit, Aggregation: rf.Aggregation, Direction: rf.Direction, Formula: rf.ID, Samples: &s, Diagnostic: rf.Diagnostic})
	}
	return ms, warnings
}

// sumFamilies sums, in name order, the deltas of the families that are one of want with or
// without _total, and counts them.
func sumFamilies(names []string, sums map[string]float64, want []string) (float64, int64) {
	v, n := 0.0, int64(0)
	for _, fam := range names {
		if slices.Contains(want, strings.TrimSuffix(fam, "_total")) {
			v, n = v+sums[fam], n+1
		}
	}
	return v, n
}
