package compare

import (
	"fmt"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// significance decides a not_worse_significantly rule on a matched row from the per-request
// samples of the rule's formula, recomputed from both sides' request records (never from the
// recorded numbers): a two-sided Mann-Whitney U test at significance 1 - confidence and the
// Hodges-Lehmann shift candidate - baseline with its interval (schemas/metric). The rule fails
// when the change is significant, in the worse direction, and worse than the minimum effect
// (the rule's tolerance, max(absolute, |baseline median| x relative)); it is refused
// (too_few_samples) when a side has fewer than metric.MinSamplesSignificance samples.
func (x *Comparer) significance(e *Evaluation, rule contract.MetricRule, rows *rowPair) {
	fail := func(r *reason.Reason, format string, args ...any) {
		e.Status, e.Code, e.Reason = contract.EvaluationStatusFailed, r.Code(), fmt.Sprintf("%v: ", r)+fmt.Sprintf(format, args...)
	}
	if rows == nil || rule.Confidence == nil {
		fail(reason.ErrRuleFailed, "%s needs a row-scoped rule with a confidence", rule.Operator)
		return
	}
	confidence := *rule.Confidence
	xb, okb := perRequest(x.B, rows.m.crb, rows.b, rule.Formula)
	xc, okc := perRequest(x.C, rows.m.crc, rows.c, rule.Formula)
	if !okb || !okc {
		fail(reason.ErrTooFewSamples, "the request records of the row are not readable on both sides: the samples cannot be recomputed")
		return
	}
	if len(xb) < metric.MinSamplesSignificance || len(xc) < metric.MinSamplesSignificance {
		fail(reason.ErrTooFewSamples, "%d baseline and %d candidate samples of %s; a statistical rule needs at least %d on each side", len(xb), len(xc), rule.Formula, metric.MinSamplesSignificance)
		return
	}
	d := DecideStatistical(xb, xc, confidence, rule.Direction, e.AbsoluteTolerance, e.RelativeTolerance)
	d.Intervals(rule.Aggregation, xb, xc)
	mw, hl, sig, minEffect, worse := d.mw, d.hl, d.Sig, d.Sig.MinimumEffect, d.worse
	e.Significance = sig
	violation := math.Max(0, worse)
	e.Tolerance, e.Violation = &minEffect, &violation
	change := hl.Estimate
	e.AbsoluteChange = &change
	if d.median != 0 {
		pct := change / math.Abs(d.median) * 100
		e.RelativeChangePercent = &pct
	}
	what := fmt.Sprintf("%s: n %d vs %d, shift %s %s [%s, %s] at %s, p %s",
		mw.Test(), len(xb), len(xc), fmtSigned(hl.Estimate), rule.Unit, fmt4(hl.Low), fmt4(hl.High), fmt4(hl.Confidence), fmtP(mw.P))
	switch {
	case !sig.Significant:
		e.Status, e.Reason = contract.EvaluationStatusPassed, fmt.Sprintf("no significant change (%s >= %s)", what, fmt4(1-confidence))
	case !d.Fails:
		e.Status, e.Reason = contract.EvaluationStatusPassed, fmt.Sprintf("significant change, not worse than the minimum effect %s %s (%s < %s)", fmt4(minEffect), rule.Unit, what, fmt4(1-confidence))
	default:
		fail(reason.ErrRuleFailed, "significantly worse by more than the minimum effect %s %s (%s < %s)", fmt4(minEffect), rule.Unit, what, fmt4(1-confidence))
	}
}

// perRequest recomputes the per-request samples of a formula for a row from its records.
func perRequest(s *load.Snapshot, cr *contract.CaseResultDoc, row contract.Row, formula string) ([]float64, bool) {
	f := s.Files[row.Records.Path]
	if cr == nil || f == nil || f.Records == nil {
		return nil, false
	}
	reqs, _ := record.MeasuredRequests(check.RowRecords(nil, cr, row, f.Records))
	return metric.PerRequest(formula, metric.SamplesOf(reqs))
}

// fmt4 prints a statistic with four significant digits (the evaluation's fields keep them whole).
func fmt4(v float64) string { return fmt.Sprintf("%.4g", v) }

func fmtSigned(v float64) string {
	if v > 0 {
		return "+" + fmt4(v)
	}
	return fmt4(v)
}

// fmtP prints a p-value with three significant digits.
func fmtP(p float64) string { return fmt.Sprintf("%.3g", p) }

// statisticalDecision is the outcome of a statistical rule on two samples.
type statisticalDecision struct {
	mw     metric.MannWhitney
	hl     metric.Shift
	Sig    *contract.ComparisonSignificance
	median float64 // the baseline's median
	worse  float64 // how much worse the candidate's shift is, in the rule's unit (negative: better)
	Fails  bool
}

// DecideStatistical tests candidate xc against baseline xb: significant when the two-sided
// Mann-Whitney p < 1 - confidence; the rule fails when significant, worse in the rule's
// direction, and worse by more than the minimum effect max(absolute, |median(xb)| x relative).
func DecideStatistical(xb, xc []float64, confidence float64, dir contract.Direction, absolute, relative float64) statisticalDecision {
	d := statisticalDecision{mw: metric.MannWhitneyU(xb, xc), hl: metric.HodgesLehmann(xb, xc, confidence)}
	sorted := slices.Clone(xb)
	slices.Sort(sorted)
	d.median = metric.Percentile(sorted, 0.5)
	minEffect := math.Max(absolute, math.Abs(d.median)*relative)
	test := contract.SignificanceTestMannWhitneyUNormal
	if d.mw.Exact {
		test = contract.SignificanceTestMannWhitneyUExact
	}
	d.Sig = &contract.ComparisonSignificance{Test: test, Confidence: confidence, BaselineSamples: int64(len(xb)), CandidateSamples: int64(len(xc)),
		MinimumSamples: metric.MinSamplesSignificance, PValue: d.mw.P, Shift: d.hl.Estimate, ShiftLow: d.hl.Low, ShiftHigh: d.hl.High,
		ShiftConfidence: d.hl.Confidence, MinimumEffect: minEffect, Significant: d.mw.P < 1-confidence}
	d.worse = d.hl.Estimate
	if dir == contract.DirectionHigherIsBetter {
		d.worse = -d.worse
	}
	d.Fails = d.Sig.Significant && d.worse > minEffect
	return d
}

// intervals adds each side's seeded bootstrap interval of the aggregation's percentile, when the
// aggregation is one and the side has enough samples for it (metric.MinSamplesQuantile).
func (d *statisticalDecision) Intervals(a contract.Aggregation, xb, xc []float64) {
	q, ok := metric.QuantileOf(a)
	if !ok {
		return
	}
	least := int64(metric.MinSamplesQuantile(q))
	d.Sig.IntervalMinimumSamples = &least
	interval := func(xs []float64) *contract.ComparisonInterval {
		if int64(len(xs)) < least {
			return nil
		}
		in := metric.BootstrapQuantile(xs, q, d.Sig.Confidence, metric.BootstrapResamples, metric.BootstrapSeed)
		return &contract.ComparisonInterval{Estimate: in.Estimate, Low: in.Low, High: in.High, Confidence: in.Confidence,
			Resamples: metric.BootstrapResamples, Seed: metric.BootstrapSeed}
	}
	d.Sig.BaselineInterval, d.Sig.CandidateInterval = interval(xb), interval(xc)
}
