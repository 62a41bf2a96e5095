package rowcheck

import (
	"fmt"
	"sort"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// MetricList compares recorded metrics with their recomputation by name: values within tol,
// sample counts equal, nothing missing and nothing undefined (diagnostic metrics and those skip
// names are left alone). Identity (unit, aggregation, direction, formula) is the comparability
// check's business.
func MetricList(c *finding.Collector, file, base string, recorded, recomputed []contract.Metric, tol policy.Tolerance, skip func(string) bool) {
	want := map[string]contract.Metric{}
	for _, m := range recomputed {
		want[m.Name] = m
	}
	seen := map[string]bool{}
	for k, m := range recorded {
		if m.Diagnostic || (skip != nil && skip(m.Name)) {
			continue
		}
		seen[m.Name] = true
		w, ok := want[m.Name]
		switch {
		case !ok:
			c.Add(file, base+finding.Pointer(k, "name"), reason.ErrMetricMismatch, "%s is not a metric the formulas define here", m.Name)
		case !record.Within(m.Value, w.Value, tol):
			c.Add(file, base+finding.Pointer(k, "value"), reason.ErrMetricMismatch, "%s is %s, recomputed %s (tolerance max(%g, |x| × %g))", m.Name, record.FmtFloat(m.Value), record.FmtFloat(w.Value), tol.Absolute, tol.Relative)
		case !EqualSamples(m.Samples, w.Samples):
			c.Add(file, base+finding.Pointer(k, "samples"), reason.ErrMetricMismatch, "%s has %s samples, recomputed %s", m.Name, samplesString(m.Samples), samplesString(w.Samples))
		case (w.Unit != "" || w.Formula != "") && IdentityOf(m) != IdentityOf(w):
			c.Add(file, base+finding.Pointer(k), reason.ErrMetricMismatch, "%s carries %s, its formula gives %s", m.Name, IdentityOf(m), IdentityOf(w))
		}
	}
	var missing []string
	for _, m := range recomputed {
		if !seen[m.Name] && (skip == nil || !skip(m.Name)) {
			missing = append(missing, m.Name)
		}
	}
	sort.Strings(missing)
	for _, n := range missing {
		c.Add(file, base, reason.ErrMetricMismatch, "%s is missing (recomputed %s)", n, record.FmtFloat(want[n].Value))
	}
}

// Identity is what makes two metrics of one name comparable.
type Identity struct {
	Unit        string
	Aggregation contract.Aggregation
	Direction   contract.Direction
	Formula     string
}

func IdentityOf(m contract.Metric) Identity {
	return Identity{m.Unit, m.Aggregation, m.Direction, m.Formula}
}

func (i Identity) String() string {
	return fmt.Sprintf("formula %s, unit %s, aggregation %s, %s", i.Formula, i.Unit, i.Aggregation, i.Direction)
}

// RateWarning names the classic confusion.
func RateWarning(a, b Identity) string {
	window := func(i Identity) bool { return strings.HasSuffix(i.Formula, "_throughput_window.v1") }
	decode := func(i Identity) bool { return i.Formula == "decode_rate.v1" }
	if (window(a) && decode(b)) || (decode(a) && window(b)) {
		return ": a request-window throughput is never compared with a decode rate"
	}
	return ""
}

func EqualSamples(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func samplesString(p *int64) string {
	if p == nil {
		return "no"
	}
	return record.Itoa(*p)
}
