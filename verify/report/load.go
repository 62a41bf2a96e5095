package report

import (
	"fmt"
	"html/template"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/figure"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// A row's load shape on the page: how it ended (a duration, its requests, a stop rule), its
// stages, its trace replay and its per-second series (achieved and scheduled sends, in-flight
// requests, E2E latency) drawn as inline SVG, from the case result as recorded (the tolerances
// check recomputed each of them from the records).

// keepLoad keeps what the page draws of a case's load shape.
func (v *View) keepLoad(receipt, kase int, ce verify.CaseEvidence) {
	if ce.CaseResult != nil && ce.CaseResult.Stopped != nil {
		v.stopped[distKey{receipt, kase, -1, ""}] = ce.CaseResult.Stopped
	}
	for j, re := range ce.Rows {
		r := re.Row
		if r.Ended != nil || len(r.Stages) > 0 || r.Series != nil || r.Replay != nil {
			v.load[distKey{receipt, kase, j, ""}] = r
		}
	}
}

// Load draws Receipts[receipt].Cases[kase].Rows[row]'s load shape, or nothing when it has none;
// row 0 also says when and why the case stopped.
func (p pageData) Load(receipt, kase, row int) template.HTML {
	var b strings.Builder
	if st := p.stopped[distKey{receipt, kase, -1, ""}]; st != nil && row == 0 {
		fmt.Fprintf(&b, `<p class="bad">The case stopped before its end: %s after %s s.</p>`, template.HTMLEscapeString(string(st.Reason)), format.Num(st.AfterSeconds))
	}
	r, ok := p.load[distKey{receipt, kase, row, ""}]
	if !ok {
		return template.HTML(b.String())
	}
	if e := r.Ended; e != nil {
		class := "ok"
		if e.Reason != contract.RowEndReasonRequests && e.Reason != contract.RowEndReasonDuration {
			class = "bad"
		}
		fmt.Fprintf(&b, `<p class="note">Row ended: <span class="%s">%s</span> after %s s, %d cut at the grace deadline.</p>`, class, template.HTMLEscapeString(string(e.Reason)), format.Num(e.AfterSeconds), e.Cut)
	}
	if rp := r.Replay; rp != nil {
		unit := "tokens (exact, by the case's bound tokenizer)"
		if rp.LengthUnit != contract.RowReplayLengthUnitTokens {
			unit = fmt.Sprintf("%s (%s words per token, no tokenizer bound)", template.HTMLEscapeString(string(rp.LengthUnit)), format.Num(rp.WordsPerToken))
		}
		fmt.Fprintf(&b, `<p class="note">Trace replay: %d entries of <span class="mono">%s</span> at time scale %s; lengths in %s; send error |t_send − t_trace| p50 %s ms, p99 %s ms, max %s ms.</p>`,
			rp.Entries, template.HTMLEscapeString(format.Short(rp.TraceDigest)), format.Num(rp.TimeScale), unit, format.Num(rp.SendErrorP50Ms), format.Num(rp.SendErrorP99Ms), format.Num(rp.SendErrorMaxMs))
	}
	if len(r.Stages) > 0 {
		b.WriteString(`<table class="rows"><thead><tr><th>stage</th><th>kind</th><th class="n">start s</th><th class="n">seconds</th><th class="n">offered/s</th><th class="n">achieved/s</th><th class="n">scheduled</th><th class="n">req</th><th class="n">fail</th></tr></thead><tbody>`)
		for k, st := range r.Stages {
			fmt.Fprintf(&b, `<tr><td>%d</td><td>%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%s</td><td class="n">%d</td><td class="n">%d</td><td class="n%s">%d</td></tr>`,
				k, template.HTMLEscapeString(stageKind(st)), format.Num(st.StartSeconds), format.Num(st.Seconds), format.NumPtr(st.OfferedRate), format.Num(st.AchievedRate), st.Scheduled, st.Requests, failClass(st.Failures), st.Failures)
		}
		b.WriteString(`</tbody></table>`)
	}
	if s := r.Series; s != nil && len(s.Bins) > 0 {
		b.WriteString(`<div class="pair">` + figure.SeriesRate(s.Bins) + figure.SeriesLatency(s.Bins) + `</div>`)
	}
	return template.HTML(b.String())
}

// stageKind names a stage: its kind, and a workers stage's workers.
func stageKind(st contract.RowStage) string {
	if st.Concurrency != nil {
		return fmt.Sprintf("%s %d", st.Kind, *st.Concurrency)
	}
	return string(st.Kind)
}

func failClass(n int64) string {
	if n > 0 {
		return " bad"
	}
	return ""
}
