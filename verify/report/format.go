package report

import (
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// dist returns a row's distribution of a metric.
func dist(r *Row, metric string) *Distribution {
	for i := range r.Distributions {
		if string(r.Distributions[i].Metric) == metric {
			return &r.Distributions[i]
		}
	}
	return nil
}

// rowP is a row's p50 (q 50) or p99 of a metric, "-" when it has no distribution of it.
func rowP(r *Row, metric string, q int) string {
	d := dist(r, metric)
	if d == nil {
		return "-"
	}
	if q == 50 {
		return format.Num(d.P50)
	}
	return format.Num(d.P99)
}
