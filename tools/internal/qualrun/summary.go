package qualrun

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/numfmt"
)

// summaryWidth is the widest line the end-of-run summary prints.
const summaryWidth = 100

// printServingSummary prints, after the case table, the numbers of every serving row: requests,
// latency percentiles, throughput, goodput, achieved concurrency or rate and client fidelity.
//
// The numbers are read back from the case-result files the run wrote and the receipt binds (one
// source: what is printed is what the evidence says); a file that cannot be read is named
// instead. Command cases have no rows and print nothing.
func printServingSummary(w io.Writer, root string, rc *contract.ReceiptDoc) {
	rates := caseRates(root, rc)
	first := true
	for _, res := range rc.Results {
		if res.CaseResult == nil {
			continue
		}
		cr, err := readCaseResult(root, res.CaseResult.Path)
		if err != nil {
			cliapp.Fprintf(w, "summary: %s: %v\n", res.ID, err)
			continue
		}
		for _, row := range cr.Rows {
			if first {
				fmt.Fprintln(w, "\nserving rows (from the case results; ms = milliseconds):")
				first = false
			}
			for _, l := range rowSummary(res.ID, res.Repetition, row, rates[res.ID]) {
				if len(l) > summaryWidth {
					l = l[:summaryWidth-3] + "..."
				}
				cliapp.Fprintln(w, l)
			}
		}
	}
}

// readCaseResult reads a case result the run wrote, bounded like any evidence read.
func readCaseResult(root, rel string) (*contract.CaseResultDoc, error) {
	b, err := evidence.ReadFileLimited(filepath.Join(root, filepath.FromSlash(rel)), jsonstrict.MaxDocumentBytes)
	if err != nil {
		return nil, fmt.Errorf("cannot read its case result %s: %w", rel, err)
	}
	var cr contract.CaseResultDoc
	if err := json.Unmarshal(b, &cr); err != nil {
		return nil, fmt.Errorf("case result %s is not a case result: %w", rel, err)
	}
	return &cr, nil
}

// caseRates are the open-loop arrival processes of the variant's cases, by case id, read from the
// workload file the receipt names (none when it cannot be read: the rate ranges are then not
// printed).
func caseRates(root string, rc *contract.ReceiptDoc) map[string]*contract.Rate {
	out := map[string]*contract.Rate{}
	b, err := evidence.ReadFileLimited(filepath.Join(root, filepath.FromSlash(rc.Workload.Path)), jsonstrict.MaxDocumentBytes)
	if err != nil {
		return out
	}
	var wl contract.WorkloadDoc
	if json.Unmarshal(b, &wl) != nil {
		return out
	}
	for _, v := range wl.Variants {
		if v.ID != rc.Workload.Variant {
			continue
		}
		for _, c := range v.Cases {
			if c.Rate != nil {
				out[c.ID] = c.Rate
			}
		}
	}
	return out
}

// rateRange says whether an achieved rate lies within the 95 % range of the seeded process
// (metric.RateRange) for n arrivals; "" when there is no process or range.
func rateRange(rate *contract.Rate, n int64, achieved float64) string {
	lo, hi, ok := metric.RateRange(rate, int(n))
	if !ok || rate.Mode == contract.RateModeConstant {
		return ""
	}
	where := "within"
	if achieved < lo || achieved > hi {
		where = "outside"
	}
	return fmt.Sprintf(" (%s the %g %% range %s to %s req/s of %d seeded %s arrivals)", where, metric.RateConfidence*100, formatNumber(lo), formatNumber(hi), n, rate.Mode)
}

// rowSummary is the lines of one serving row (rate: the case's arrival process, nil in closed
// loop). A metric the row does not have (no successful request, a single token) shows as "-",
// never as zero.
func rowSummary(caseID string, rep int64, row contract.Row, rate *contract.Rate) []string {
	m := map[string]float64{}
	for _, x := range row.Metrics {
		m[x.Name] = x.Value
	}
	get := func(name string) string {
		v, ok := m[name]
		if !ok {
			return "-"
		}
		return formatNumber(v)
	}
	fid := "ok"
	if row.Fidelity.Degraded {
		fid = "DEGRADED"
	}
	head := fmt.Sprintf("%s rep %d  c=%d r=%d %s-loop  requests %d ok, %d failed  fidelity %s",
		caseID, rep, row.Concurrency, row.Repetition, row.Loop, row.Successes, row.Failures, fid)
	// throughput divides the successes by the window (first send to last end), which holds the
	// last requests' service time; the achieved rate divides the sends by their own span (first
	// to last send). Each line names its denominator, so the two differ visibly for a reason.
	conc := "achieved rate " + formatNumber(row.Fidelity.AchievedRate) + " req/s over first to last send"
	if row.Fidelity.OfferedRate != nil {
		// A session row's declared rate is its session arrival rate; every turn is a request.
		unit := " req/s, "
		if sessionRow(row) {
			unit = " sessions/s, "
		}
		conc = "offered rate " + formatNumber(*row.Fidelity.OfferedRate) + unit + conc
		if !sessionRow(row) {
			conc += rateRange(rate, row.Requests, row.Fidelity.AchievedRate)
		}
	}
	if row.Fidelity.InFlightPeak != nil && row.Fidelity.InFlightMean != nil {
		conc = fmt.Sprintf("in flight peak %d mean %s, %s", *row.Fidelity.InFlightPeak, formatNumber(*row.Fidelity.InFlightMean), conc)
	}
	lines := []string{
		head,
		fmt.Sprintf("  TTFT ms p50 %s p99 %s | TPOT ms p50 %s p99 %s | ICL ms p99 %s",
			get("ttft_ms.p50"), get("ttft_ms.p99"), get("tpot_ms.p50"), get("tpot_ms.p99"), get("icl_ms.p99")),
		fmt.Sprintf("  E2E ms p50 %s p99 %s | window %s s from first send to last end", get("e2e_ms.p50"), get("e2e_ms.p99"), get("window_s")),
	}
	lines = append(lines, wrap(fmt.Sprintf("  per window: throughput %s req/s, %s output tok/s | goodput %s req/s",
		get("request_throughput"), get("output_throughput_window"), get("slo_goodput")), "    ", summaryWidth)...)
	lines = append(lines, wrap("  "+conc, "    ", summaryWidth)...)
	if e := row.Ended; e != nil {
		lines = append(lines, fmt.Sprintf("  ended by %s after %s s, %d cut at the grace deadline", e.Reason, formatNumber(e.AfterSeconds), e.Cut))
	}
	if c := row.Cache; c != nil {
		lines = append(lines, fmt.Sprintf("  prefix cache %s, observed %s: %d cached tokens (%d reporting), hit fraction %s",
			c.Declared, c.Observed, c.CachedPromptTokens, c.Reporting, get("prefix_cache_hit_fraction")))
		if c.Contradiction != nil {
			lines = append(lines, wrap("  prefix cache: "+*c.Contradiction, "    ", summaryWidth)...)
		}
	}
	if t := row.Tokens; t != nil {
		frac := "null"
		if t.MismatchFraction != nil {
			frac = formatNumber(*t.MismatchFraction)
		}
		lines = append(lines, fmt.Sprintf("  token ledger: %d compared, %d mismatched (fraction %s), largest difference prompt %d, completion %d",
			t.Compared, t.Mismatched, frac, t.LargestPromptDifference, t.LargestCompletionDifference))
		if t.Exceeded != nil {
			lines = append(lines, wrap("  token ledger: "+*t.Exceeded, "    ", summaryWidth)...)
		}
	}
	for _, r := range row.Fidelity.Reasons {
		lines = append(lines, wrap("  fidelity: "+r, "    ", summaryWidth)...)
	}
	if jd := row.Fidelity.Judgement; jd != nil && row.Fidelity.Degraded {
		if h := metric.FidelityHint(string(jd.Cause)); h != "" {
			lines = append(lines, wrap("  hint ("+strings.ReplaceAll(string(jd.Cause), "_", " ")+"): "+h, "    ", summaryWidth)...)
		}
	}
	return lines
}

// wrap breaks s at spaces into lines of at most width columns, continuation lines starting with
// indent; a word longer than a line stays whole (printServingSummary clips it).
func wrap(s, indent string, width int) []string {
	var out []string
	line := ""
	for _, w := range strings.Fields(s) {
		switch {
		case line == "":
			line = w
			if len(out) == 0 && strings.HasPrefix(s, " ") {
				line = s[:len(s)-len(strings.TrimLeft(s, " "))] + w
			}
		case len(line)+1+len(w) <= width:
			line += " " + w
		default:
			out = append(out, line)
			line = indent + w
		}
	}
	return append(out, line)
}

func formatNumber(v float64) string { return numfmt.Number(v) }

// sessionRow reports a row of multi-turn sessions: one that carries the per-session formulas.
func sessionRow(row contract.Row) bool {
	for _, m := range row.Metrics {
		if m.Formula == metric.SessionDuration || m.Formula == metric.TTFTByTurn {
			return true
		}
	}
	return false
}
