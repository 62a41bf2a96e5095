package report

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/verify/report/internal/format"
	"github.com/qualkit/qualkit/verify/report/internal/textout"
)

// TextWidth is the widest line Text writes for the fixed tables; free text (paths, findings,
// reasons) wraps at it too.
const TextWidth = textout.Width

// JSON writes the view as indented JSON, a document of the report view contract
// (qualkit.report-view.v1, docs/contracts/report-view.v1.md). It checks the document against the
// contract first and writes nothing when it does not satisfy it (a qualkit bug).
func (v *View) JSON(w io.Writer) error {
	b, err := json.MarshalIndent(&v.ReportViewDoc, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	b = append(b, '\n')
	if err := schemas.CheckAs(b, "the report view", contract.ReportView); err != nil {
		return fmt.Errorf("the report does not satisfy its contract (a qualkit bug): %w", err)
	}
	_, err = w.Write(b)
	return err
}

// Text writes the view as aligned tables for a terminal, no line wider than TextWidth columns.
func (v *View) Text(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := &textPrinter{Printer: textout.New(bw), fig: v.figures}
	if v.Unverified {
		p.Line("*** UNVERIFIED: this report shows evidence that did not verify (--unverified-unsafe) ***")
	}
	for i := range v.Receipts {
		if i > 0 || v.Unverified {
			p.Line("")
		}
		p.ri = i
		p.receipt(&v.Receipts[i], v.Unverified)
	}
	p.acrossText(v.across)
	for i := range v.Comparisons {
		p.Line("")
		p.comparison(&v.Comparisons[i], v.Unverified)
	}
	if err := p.Err(); err != nil {
		return err
	}
	return bw.Flush()
}

// textPrinter writes a view's sections (textout.Printer's lines, wrapped text and tables).
type textPrinter struct {
	*textout.Printer
	// fig and ri are the view's case figures and the receipt being printed (figures.go).
	fig map[[2]int]*caseFigures
	ri  int
}

func (p *textPrinter) receipt(r *Receipt, unverified bool) {
	title := "receipt    " + title(*r)
	if unverified {
		title += "  [UNVERIFIED]"
	}
	p.Line(title)
	p.Wrap("file", r.Path)
	verdict := r.Verification.Summary
	if r.Verification.Signer != "" {
		verdict += ", signer " + r.Verification.Signer
	}
	p.Wrap("verdict", verdict)
	if r.Scope != "" {
		p.Wrap("scope", r.Scope)
	}
	if len(r.Verification.Weakened) > 0 {
		p.Wrap("weakened", strings.Join(r.Verification.Weakened, ", "))
	}
	for _, f := range r.Verification.Findings {
		p.Wrap("finding", fmt.Sprintf("%s: %s: %s: %s [%s]", f.Check, f.File, f.Pointer, f.Message, f.Code))
	}
	for _, w := range r.Verification.Warnings {
		p.Wrap("warning", w)
	}
	if s := r.Source; s != nil {
		origin := "none" // not a contract value: the text of an absent value
		if s.OriginMain != "" {
			origin = s.OriginMain[:min(12, len(s.OriginMain))]
		}
		p.Wrap("source", fmt.Sprintf("commit %s, tree hash %s, origin/main %s, clean %s, publishable %s",
			format.Short(s.Commit), format.Short(s.TreeHash), origin, format.YesNo(s.Clean), format.YesNo(r.Publishable)))
		p.Wrap("workload", fmt.Sprintf("%s variant %s (%s %s)", r.Workload.ID, r.Workload.Variant, r.Workload.Path, format.Short(r.Workload.Digest))) // not a contract value: a label of the text report
		p.Wrap("campaign", fmt.Sprintf("%s on %s: %s in %s s, %d artifacts bound", r.Run.Kind, r.Run.Backend, r.Run.Verdict, format.Num(r.Run.DurationSeconds), len(r.Artifacts)))
	}
	for i := range r.Cases {
		p.serving(&r.Cases[i])
		p.figures(p.fig[[2]int{p.ri, i}])
	}
	if l := r.Lifecycle; l != nil {
		var ev []string
		for _, e := range l.Events {
			ev = append(ev, fmt.Sprintf("%s %s", e.Name, format.Num(e.OffsetMs)))
		}
		p.Wrap("lifecycle", fmt.Sprintf("%s; ms from launch: %s", l.Verdict, strings.Join(ev, ", ")))
		exit := "no exit code"
		if l.ExitCode != nil {
			exit = fmt.Sprintf("exit %d", *l.ExitCode)
		}
		if l.ExitSignal != "" {
			exit = "signal " + l.ExitSignal
		}
		forced := "graceful"
		if l.Forced {
			forced = "FORCED"
		}
		p.Wrap("", fmt.Sprintf("port free before launch %s, listener %s, shutdown %s %s (%s), residue %s",
			format.YesNo(l.PortFreeBeforeLaunch), l.Ownership, forced, exit, map[bool]string{true: "acceptable", false: "not acceptable"}[l.ExitAcceptable], l.Residue))
	}
}

func (p *textPrinter) serving(c *Case) {
	head := fmt.Sprintf("%s r%d: %s", c.ID, c.Repetition, c.Status)
	if c.Driver != nil {
		head += fmt.Sprintf(" (%s, %s)", c.Driver.Title, c.Driver.Contract)
	}
	p.Wrap("case", head)
	if c.Details != "" && c.Driver == nil {
		p.Wrap("details", c.Details)
	}
	if c.Driver != nil {
		p.driver(c.Driver)
	} else if c.Kind == contract.ViewCaseKindDriver {
		p.Wrap("", "no driver result is bound for this case")
	}
	if len(c.Rows) == 0 {
		return
	}
	if c.SLO != "" {
		p.Wrap("", "SLO "+c.SLO)
	}
	p.Line("  latency in ms, p50/p99, over the successful measured requests")
	lat := [][]string{{"row", "req", "fail", "TTFT", "TPOT", "E2E", "ICL"}}
	rate := [][]string{{"row", "W s", "req/s", "out tok/s", "goodput/s", "good", "lag p50/p99 ms", "client"}}
	for i := range c.Rows {
		r := &c.Rows[i]
		if !r.Readable {
			lat = append(lat, []string{r.Name, "-", "-", "records unreadable"})
			rate = append(rate, []string{r.Name, "-", "-", "records unreadable"})
			continue
		}
		client := "ok"
		if r.Fidelity.Degraded {
			client = "DEGRADED"
		}
		lat = append(lat, []string{r.Name, fmt.Sprint(r.Requests), fmt.Sprint(r.Failures), pq(r, "ttft_ms"), pq(r, "tpot_ms"), pq(r, "e2e_ms"), pq(r, "icl_ms")})
		rate = append(rate, []string{r.Name, format.Num(r.WindowSeconds), format.NumPtr(r.Throughput.RequestsPerSecond), format.NumPtr(r.Throughput.OutputTokensPerSecond),
			format.NumPtr(r.Throughput.GoodputPerSecond), format.NumPtr(r.Throughput.GoodFraction), format.Num(r.Fidelity.ScheduleLagP50Ms) + "/" + format.Num(r.Fidelity.ScheduleLagP99Ms), client})
	}
	p.Table(1, lat)
	p.Line("  rates over the request window W; client fidelity (schedule lag)")
	p.Table(1, rate)
	if turns := turnsTable(c.Rows); turns != nil {
		p.Line("  TTFT by turn, p50 ms (samples), over the successful requests of each turn position")
		p.Table(1, turns)
	}
	if ledger := ledgerTable(c.Rows); ledger != nil {
		p.Line("  token ledger (docs/tokens.md): the client's counts with the bound tokenizer against the server's usage")
		p.Table(1, ledger)
	}
	cache := [][]string{{"row", "declared", "observed", "cached tokens", "reporting", "hit fraction"}}
	for i := range c.Rows {
		if pc := c.Rows[i].PrefixCache; pc != nil {
			cache = append(cache, []string{c.Rows[i].Name, string(pc.Declared), string(pc.Observed), fmt.Sprint(pc.CachedPromptTokens), fmt.Sprint(pc.Reporting), format.NumPtr(pc.HitFraction)})
		}
	}
	if len(cache) > 1 {
		p.Line("  prefix cache (docs/caching.md): declared regime, what the server reported")
		p.Table(1, cache)
		for i := range c.Rows {
			if pc := c.Rows[i].PrefixCache; pc != nil && pc.Contradiction != nil {
				p.Wrap(c.Rows[i].Name, *pc.Contradiction)
			}
		}
	}
}

func pq(r *Row, metric string) string {
	d := dist(r, metric)
	if d == nil {
		return "-"
	}
	return format.Num(d.P50) + "/" + format.Num(d.P99)
}

func (p *textPrinter) comparison(c *Comparison, unverified bool) {
	title := "compare    " + c.Candidate
	if unverified {
		title += "  [UNVERIFIED]"
	}
	p.Line(title)
	p.Wrap("against", c.Baseline)
	if c.Error != "" {
		p.Wrap("error", c.Error)
		return
	}
	verdict := "ok"
	switch {
	case !c.Compatible:
		verdict = "not comparable"
	case !c.OK:
		verdict = "rules failed"
	}
	mode := c.Mode
	if mode == "" {
		mode = "none" // not a contract value: the text of an absent value
	}
	p.Wrap("mode", mode+": "+verdict)
	for _, d := range c.Rejected {
		p.Wrap("rejected", fmt.Sprintf("%s: %s [%s]", d.Path, d.Message, d.Code)) // not a contract value: a label of the text report
	}
	for _, d := range c.Allowed {
		p.Wrap("allowed", fmt.Sprintf("%s: %s", d.Path, d.Message))
	}
	for _, r := range c.Rows {
		p.Wrap("row", fmt.Sprintf("%s r%d %s", r.Case, r.Repetition, r.Row))
		rows := [][]string{{"metric", "unit", "baseline", "candidate", "change", "change %", "rule"}}
		for _, m := range r.Metrics {
			rule := m.Rule
			if rule == "" {
				rule = "-"
			}
			rows = append(rows, []string{m.Metric, m.Unit, format.Num(m.Baseline), format.Num(m.Candidate), format.Signed(m.Change), format.Pct(m.ChangePercent), string(rule)})
		}
		p.Table(2, rows)
	}
	failed := 0
	for _, r := range c.Rules {
		if r.Status == contract.RuleStatusFailed {
			failed++
			p.Wrap("failed", fmt.Sprintf("%s: %s", r.Scope, r.Reason)) // not a contract value: a label of the text report
		}
	}
	p.Wrap("rules", fmt.Sprintf("%d evaluated, %d failed", len(c.Rules), failed))
}

func (p *textPrinter) driver(d *Driver) {
	v := d.Verdict
	verdict := string(v.Status)
	if l := verdictLine(d); l != "" {
		verdict += "; " + l
	}
	p.Wrap("verdict", string(verdict))
	for _, r := range v.Reasons {
		p.Wrap("reason", r)
	}
	c := d.Containment
	probe := "only loopback"
	if !isolated(c) {
		probe = "NOT ISOLATED"
	}
	p.Wrap("isolation", fmt.Sprintf("%s by %s (%s): interfaces %s, outside unreachable %s, host loopback unreachable %s, loopback bind %s; start gate %s; hash-bound exec %s",
		c.Network, c.Mechanism, probe, strings.Join(c.Interfaces, ","), format.YesNo(c.OutsideUnreachable), format.YesNo(c.HostLoopbackUnreachable),
		format.YesNo(c.LoopbackBind), c.StartGate, format.YesNo(c.HashBoundExec)))
	exit := "ended by a signal"
	if c.ExitCode != nil {
		exit = fmt.Sprintf("exit %d", *c.ExitCode)
	}
	residue := "none" // not a contract value: the text of an absent value
	if len(c.Residue) > 0 {
		residue = strings.Join(c.Residue, "; ")
	}
	p.Wrap("worker", fmt.Sprintf("%s after %s s of %d s, timed out %s, forced %s, residue %s", exit, format.Exact(c.ElapsedSeconds), c.TimeoutSeconds,
		format.YesNo(c.TimedOut), format.YesNo(c.Forced), residue))
	p.Wrap("env", fmt.Sprintf("%d names: %s", len(c.EnvironmentNames), strings.Join(c.EnvironmentNames, ", ")))
	im := d.Implementation
	p.Wrap("code", fmt.Sprintf("script %s %s, executable %s %s, qualrun %s %s", im.Script, im.ScriptDigest, im.Executable, im.ExecutableDigest,
		im.QualrunVersion, im.QualrunDigest))
	p.Wrap("request", fmt.Sprintf("%s, %d input tokens, %s %s", d.Request.ID, d.Request.InputTokenCount, d.Request.Path, d.Request.Digest))
	p.Wrap("model", fmt.Sprintf("%s, %s %s", d.Model.ID, d.Model.Path, d.Model.Digest))
	p.Wrap("result", d.Result+" "+d.ResultDigest)
	if len(d.Tolerances) == 0 {
		p.Line("  no tolerance declared")
	} else {
		p.Line("  tolerances")
		rows := [][]string{{"metric", "subject", "op", "limit", "observed", "passed"}} // not a contract value: the column headings of the text report
		for _, t := range d.Tolerances {
			obs := "none" // not a contract value: the text of an absent value
			if t.Observed != nil {
				obs = format.Fine(*t.Observed)
			}
			rows = append(rows, []string{string(t.Metric), t.Subject, string(t.Op), format.Fine(t.Limit), obs, format.YesNo(t.Passed)})
		}
		p.FitTable(3, rows)
	}
	for _, m := range d.Mismatches {
		p.Wrap("mismatch", m)
	}
	if nt := d.NextToken; nt != nil {
		p.Line(fmt.Sprintf("  oracle %s, vocabulary %d: argmax token %d, top-logit margin %s", nt.Dtype, nt.Vocab, nt.ArgmaxTokenID, format.Fine(nt.TopLogitMargin)))
		p.Wrap("logits", fmt.Sprintf("%s (%d bytes)", nt.LogitsSHA256, nt.LogitsBytes))
		top := [][]string{{"rank", "token", "logit", "chosen by"}}
		for _, t := range nt.TopTokens {
			top = append(top, []string{fmt.Sprint(t.Rank), fmt.Sprint(t.TokenID), format.Fine(t.Logit), strings.Join(t.Candidates, ", ")})
		}
		p.Line("  top tokens")
		p.FitTable(0, top)
		cand := [][]string{{"candidate", "token", "logit", "rank", "argmax"}}
		for _, c := range nt.CandidateTokens {
			cand = append(cand, []string{c.Label, fmt.Sprint(c.TokenID), format.Fine(c.Logit), fmt.Sprint(c.Rank), format.YesNo(c.Argmax)})
		}
		p.FitTable(1, cand)
	}
	if pa := d.PathAttribution; pa != nil {
		p.Line(fmt.Sprintf("  paths against %s (reference argmax %d)", pa.ReferencePath, pa.ReferenceArgmax))
		rows := [][]string{{"path", "argmax", "equal", "cosine", "max abs err", "mean abs err", "top-10", "tolerances"}}
		for _, r := range pa.Paths {
			tol := "held"
			if len(r.Failed) > 0 {
				tol = "FAILED"
			}
			id := r.ID
			if r.Attributed {
				id += " *"
			}
			rows = append(rows, []string{id, fmt.Sprint(r.Argmax), format.YesNo(r.ArgmaxEqual), format.Fine(r.CosineSimilarity), format.Fine(r.MaxAbsError),
				format.Fine(r.MeanAbsError), fmt.Sprint(r.Top10Overlap), tol})
		}
		p.FitTable(1, rows)
		if v.Attribution != nil && *v.Attribution != rules.NotReproduced {
			p.Line("  * the path the difference is attributed to")
		}
	}
	if la := d.LayerAttribution; la != nil {
		p.Line("  layer boundaries: relative RMS error and its growth from the previous boundary")
		rows := [][]string{{"boundary", "cosine", "max abs err", "mean abs err", "rel RMS err", "growth", "tolerances"}}
		for _, b := range la.Boundaries {
			tol := "held"
			if len(b.Failed) > 0 {
				tol = "FAILED"
			}
			growth := format.Fine(b.Growth)
			if b.Growth > 0 {
				growth = "+" + growth
			}
			if b.Largest {
				growth += " *"
			}
			rows = append(rows, []string{b.Name, format.Fine(b.CosineSimilarity), format.Fine(b.MaxAbsError), format.Fine(b.MeanAbsError),
				format.Fine(b.RelativeRootMeanSquareError), growth, tol})
		}
		p.FitTable(1, rows)
		p.Line("  * the largest growth")
	}
}
