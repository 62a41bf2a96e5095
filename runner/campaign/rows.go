package campaign

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas"
)

// degradedRows describes the degraded open-loop rows of a serving case ("" when none): such a
// row is not a measurement of its declared load, the offered rate (docs/metrics.md, client
// fidelity). A closed-loop row's declared load is its concurrency (in_flight_peak shows it
// reached); its client-lag degraded flag is reported in degraded_rows without failing the case.
func degradedRows(rows []schemas.Row) string {
	var parts []string
	n, open := 0, 0
	for _, row := range rows {
		if row.Loop == "open" {
			open++
		}
		if row.Loop != "open" || !row.Fidelity.Degraded {
			continue
		}
		n++
		if len(parts) < 4 {
			why := "degraded"
			if len(row.Fidelity.Reasons) > 0 {
				why = row.Fidelity.Reasons[0]
			}
			parts = append(parts, fmt.Sprintf("row c=%d r=%d: %s", row.Concurrency, row.Repetition, why))
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(parts) {
		parts = append(parts, fmt.Sprintf("and %d more", n-len(parts)))
	}
	return fmt.Sprintf("%d of %d open-loop rows degraded (%s)", n, open, strings.Join(parts, "; "))
}

// laggingRows describes the degraded closed-loop rows of a serving case ("" when none): the
// client itself delayed requests past its fidelity bound (docs/metrics.md). Such a row does not
// fail its case (its declared load, the concurrency, is checked by in_flight_peak), but the
// receipt is not publishable unless the case declares measures_saturation: true, the same rule
// qualverify applies to every degraded row (degraded_row).
func laggingRows(rows []schemas.Row) string {
	var parts []string
	n := 0
	for _, row := range rows {
		if row.Loop == "open" || !row.Fidelity.Degraded {
			continue
		}
		n++
		if len(parts) < 4 {
			why := "degraded"
			if len(row.Fidelity.Reasons) > 0 {
				why = row.Fidelity.Reasons[0]
			}
			parts = append(parts, fmt.Sprintf("row c=%d r=%d: %s", row.Concurrency, row.Repetition, why))
		}
	}
	if n == 0 {
		return ""
	}
	if n > len(parts) {
		parts = append(parts, fmt.Sprintf("and %d more", n-len(parts)))
	}
	return fmt.Sprintf("%d closed-loop rows degraded (%s)", n, strings.Join(parts, "; "))
}

func measuresSaturation(c schemas.Case) bool {
	return c.MeasuresSaturation != nil && *c.MeasuresSaturation
}

// saturationReasons are the receipt's unpublishable reasons and notes for cases that passed
// with degraded rows because they measure saturation.
func (r *run) saturationReasons() []string {
	out := make([]string, 0, len(r.saturated))
	for _, s := range r.saturated {
		out = append(out, clipString(s+": not publishable as a rate claim (a degraded row did not sustain its declared load)", 512))
	}
	for _, s := range r.lagging {
		out = append(out, clipString(s+": not publishable (the client, not the server, delayed requests; a measurement on a quieter host is)", 512))
	}
	return out
}
