package report

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// CSVColumns are the columns of View.CSV, in order. They are a stable interface (docs/report.md):
// a column is only ever added at the end.
var CSVColumns = []string{
	"receipt_id", "receipt_path", "verification", "publishable",
	"case_id", "case_repetition", "row", "concurrency", "repetition", "loop",
	"requests", "successes", "failures", "window_s",
	"family", "unit", "formula",
	"count", "min", "mean", "p50", "p90", "p95", "p99", "p99_9", "value",
	"metric", "low", "high", "confidence",
}

// csvScalars are the per-row scalar families of View.CSV, in order: name, unit, formula id and
// the row's value (nil: undefined, the family's line is left out).
func csvScalars(r *Row) []struct {
	name, unit, formula string
	v                   *float64
} {
	t, f := r.Throughput, r.Fidelity
	achieved, degraded := f.AchievedRate, 0.0
	if f.Degraded {
		degraded = 1
	}
	var hit *float64
	if r.PrefixCache != nil {
		hit = r.PrefixCache.HitFraction
	}
	return []struct {
		name, unit, formula string
		v                   *float64
	}{
		{"request_throughput", "requests/s", "request_throughput.v1", t.RequestsPerSecond},
		{"output_throughput_window", "tokens/s", "output_throughput_window.v1", t.OutputTokensPerSecond},
		{"total_throughput_window", "tokens/s", "total_throughput_window.v1", t.TotalTokensPerSecond},
		{"slo_goodput", "requests/s", "slo_goodput.v1", t.GoodputPerSecond},
		{"slo_goodput_tokens", "tokens/s", "slo_goodput_tokens.v1", t.GoodputTokens},
		{"slo_good_fraction", "fraction", "slo_good_fraction.v1", t.GoodFraction},
		{"output_tokens", "tokens", "output_tokens.v1", t.OutputTokens},
		{"offered_rate", "requests/s", "declared", f.OfferedRate},
		{"achieved_rate", "requests/s", "achieved_rate.v1", &achieved},
		{"dispatch_spread_ms", "ms", "dispatch_spread.v1", f.DispatchSpreadMs},
		{"degraded", "flag", "client_fidelity", &degraded},
		{"prefix_cache_hit_fraction", "fraction", "prefix_cache_hit_fraction.v1", hit},
	}
}

// CSV writes the view as comma-separated values (RFC 4180) for spreadsheets: a header of
// CSVColumns, then one line per serving row and metric family. A distribution family (ttft_ms,
// tpot_ms, e2e_ms, icl_ms, schedule_lag_ms) fills count to p99_9 and leaves value empty; a scalar
// family (throughputs, goodput, rates, dispatch spread, degraded: 1 when the client was the
// bottleneck, else 0) fills value alone; a family with no value
// in a row is left out. A row whose records could not be read has a single line, family
// records_unreadable, with no numbers. Every number is the value recomputed from the request
// records, as the shortest decimal that reads back as the same float64. Each line names its
// receipt's verification verdict, so an UNVERIFIED view (--unverified-unsafe) says so on every
// line. Command and driver cases have no rows and no lines.
func (v *View) CSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	cw := csv.NewWriter(bw)
	if err := cw.Write(CSVColumns); err != nil {
		return err
	}
	for i := range v.Receipts {
		rc := &v.Receipts[i]
		verification := string(rc.Verification.Verdict)
		if v.Unverified && rc.Verification.Verdict == contract.VerificationVerdictVerified {
			verification = string(contract.VerificationVerdictVerified) + " (view UNVERIFIED)"
		}
		for _, c := range rc.Cases {
			for j := range c.Rows {
				r := &c.Rows[j]
				head := []string{rc.ReceiptID, rc.Path, verification, strconv.FormatBool(rc.Publishable),
					c.ID, strconv.FormatInt(c.Repetition, 10), r.Name, strconv.FormatInt(r.Concurrency, 10),
					strconv.FormatInt(r.Repetition, 10), string(r.Loop)}
				if !r.Readable {
					line := append(append([]string{}, head...), "", "", "", "", "records_unreadable", "", "")
					if err := cw.Write(pad(line)); err != nil {
						return err
					}
					continue
				}
				head = append(head, strconv.FormatInt(r.Requests, 10), strconv.FormatInt(r.Successes, 10),
					strconv.FormatInt(r.Failures, 10), format.Exact(r.WindowSeconds))
				for _, d := range r.Distributions {
					line := append(append([]string{}, head...), string(d.Metric), d.Unit, d.Formula, strconv.FormatInt(d.Count, 10),
						format.Exact(d.Min), format.Exact(d.Mean), format.Exact(d.P50), format.Exact(d.P90), format.Exact(d.P95), format.Exact(d.P99), optExact(d.P999), "")
					if err := cw.Write(pad(line)); err != nil {
						return err
					}
				}
				for _, s := range csvScalars(r) {
					if s.v == nil {
						continue
					}
					line := append(append([]string{}, head...), s.name, s.unit, s.formula)
					line = append(line, "", "", "", "", "", "", "", "", format.Exact(*s.v))
					if err := cw.Write(pad(line)); err != nil {
						return err
					}
				}
			}
			for _, line := range csvFigures(c) {
				if err := cw.Write(pad(append([]string{rc.ReceiptID, rc.Path, verification, strconv.FormatBool(rc.Publishable),
					c.ID, strconv.FormatInt(c.Repetition, 10)}, line...))); err != nil {
					return err
				}
			}
		}
	}
	for _, a := range v.Across {
		line := []string{"", "", "", "", a.Case, "", a.Row, "", "", "", "", "", "", "",
			"median_across_receipts", "", "median_interval.v1", strconv.Itoa(len(a.Values)),
			"", "", "", "", "", "", "", format.Exact(a.Median), a.Metric, optExact(a.Low), optExact(a.High), format.Exact(a.Confidence)}
		if err := cw.Write(line); err != nil {
			return err
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return bw.Flush()
}

func optExact(p *float64) string {
	if p == nil {
		return ""
	}
	return format.Exact(*p)
}

// pad fills a line to the width of CSVColumns with empty cells.
func pad(line []string) []string {
	for len(line) < len(CSVColumns) {
		line = append(line, "")
	}
	return line
}

// csvFigures are a case's figure lines from the row column on (the receipt and case columns are
// the caller's): its capacity, each capacity probe, each Pareto front point (one line per
// coordinate, metric naming it) and each interval across repetitions.
func csvFigures(c Case) [][]string {
	var out [][]string
	// line is row, concurrency, repetition, 5 empty (loop, the request counts and the window),
	// family, unit, formula, count, 7 empty statistics, value, metric, low, high, confidence.
	line := func(row, conc, rep, family, unit, formula, count, value, metric, low, high, confidence string) []string {
		return []string{row, conc, rep, "", "", "", "", "", family, unit, formula, count, "", "", "", "", "", "", "", value, metric, low, high, confidence}
	}
	if cp := c.Capacity; cp != nil {
		if cp.Capacity != nil {
			out = append(out, line("", "", "", "capacity", "concurrency", "capacity_search", "", strconv.FormatInt(*cp.Capacity, 10), "", "", "", ""))
		}
		for _, p := range cp.Probes {
			out = append(out, line(rowName(p.Concurrency, 0), strconv.FormatInt(p.Concurrency, 10), "0", "capacity_probe", "fraction",
				"slo_good_fraction.v1", "", format.Exact(p.GoodFraction), "", "", "", ""))
		}
	}
	if p := c.Pareto; p != nil {
		for _, pt := range p.Front {
			row, conc, rep := rowName(pt.Concurrency, pt.Repetition), strconv.FormatInt(pt.Concurrency, 10), strconv.FormatInt(pt.Repetition, 10)
			out = append(out,
				line(row, conc, rep, "pareto_front", "", "pareto_front", "", format.Exact(pt.Throughput), string(p.Throughput), "", "", ""),
				line(row, conc, rep, "pareto_front", "", "pareto_front", "", format.Exact(pt.Latency), p.Latency, "", "", ""))
		}
	}
	for _, iv := range c.Intervals {
		out = append(out, line("", strconv.FormatInt(iv.Concurrency, 10), "", "interval", "", string(iv.Method), strconv.FormatInt(iv.Samples, 10),
			format.Exact(iv.Estimate), iv.Metric, optExact(iv.Low), optExact(iv.High), format.Exact(iv.Confidence)))
	}
	return out
}
