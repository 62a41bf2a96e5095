package campaign

import (
	"fmt"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// degradedRows describes the degraded open-loop rows of a serving case ("" when none): such a
// row is not a measurement of its declared load, the offered rate (docs/metrics.md, client
// fidelity). A closed-loop row's declared load is its concurrency (in_flight_peak shows it
// reached); its client-lag degraded flag is reported in degraded_rows without failing the case.
func degradedRows(rows []contract.Row) string {
	return describeDegraded(rows, contract.RowLoopOpen, "open-loop")
}

// laggingRows describes the degraded closed-loop rows of a serving case ("" when none): the
// client itself delayed requests past its fidelity bound (docs/metrics.md). Such a row neither
// fails its case nor makes the receipt unpublishable (its declared load, the concurrency, is
// checked by in_flight_peak, and its latencies are measured from t_send), but the receipt's notes
// name it, and qualverify compare refuses performance rules on it (degraded_row).
func laggingRows(rows []contract.Row) string {
	return describeDegraded(rows, contract.RowLoopClosed, "closed-loop")
}

// describeDegraded names (up to four of) the degraded rows of one loop kind and counts them
// against the rows of that kind.
func describeDegraded(rows []contract.Row, loop contract.RowLoop, label string) string {
	var parts []string
	n, all := 0, 0
	for _, row := range rows {
		if row.Loop != loop {
			continue
		}
		all++
		if !row.Fidelity.Degraded {
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
	return fmt.Sprintf("%d of %d %s rows degraded (%s)", n, all, label, strings.Join(parts, "; "))
}

// degradedHint is what to do about the first degraded open-loop row, by the cause its fidelity
// judgement measured (metric.FidelityHint): measures_saturation is suggested only when in flight
// reached the concurrency cap.
func degradedHint(rows []contract.Row) string {
	for _, row := range rows {
		if row.Loop == contract.RowLoopOpen && row.Fidelity.Degraded && row.Fidelity.Judgement != nil {
			if h := metric.FidelityHint(string(row.Fidelity.Judgement.Cause)); h != "" {
				return h
			}
		}
	}
	return "the client did not keep its schedule: see the row's fidelity reasons"
}

// laggingNotes are the receipt's notes for degraded closed-loop rows.
func (r *run) laggingNotes() []string {
	out := make([]string, 0, len(r.lagging))
	for _, s := range r.lagging {
		out = append(out, clipString(s+": the client, not the server, delayed requests; performance comparisons of these rows are refused", 2048))
	}
	return out
}

func measuresSaturation(c contract.Case) bool {
	return c.MeasuresSaturation != nil && *c.MeasuresSaturation
}

// saturationReasons are the receipt's unpublishable reasons and notes for cases that passed
// with degraded rows because they measure saturation.
func (r *run) saturationReasons() []string {
	out := make([]string, 0, len(r.saturated))
	for _, s := range r.saturated {
		out = append(out, clipString(s+": not publishable as a rate claim (a degraded row did not sustain its declared load)", 512))
	}
	return out
}

// cacheContradictions describes the rows whose observed prefix-cache regime contradicts the
// declared one (up to four named; "" when none): such a row fails its case (docs/caching.md).
func cacheContradictions(rows []contract.Row) string {
	return describeRows(rows, "contradict their declared cache regime", func(row contract.Row) *string {
		if row.Cache == nil {
			return nil
		}
		return row.Cache.Contradiction
	})
}

// describeRows says how many rows have a problem (what returns it, nil for none) and names up to
// four with it: "N of M rows <verb> (c=C r=R: problem; ...)", "" when none has one.
func describeRows(rows []contract.Row, verb string, what func(contract.Row) *string) string {
	var parts []string
	n := 0
	for _, row := range rows {
		p := what(row)
		if p == nil {
			continue
		}
		n++
		if len(parts) < 4 {
			parts = append(parts, fmt.Sprintf("c=%d r=%d: %s", row.Concurrency, row.Repetition, *p))
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d rows %s (%s)", n, len(rows), verb, strings.Join(parts, "; "))
}
