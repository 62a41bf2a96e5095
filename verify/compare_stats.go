package verify

import (
	"fmt"
	"math"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

// significance decides a not_worse_significantly rule on a matched row from the per-request
// samples of the rule's formula, recomputed from both sides' request records (never from the
// recorded numbers): a two-sided Mann-Whitney U test at significance 1 - confidence and the
// Hodges-Lehmann shift candidate - baseline with its interval (schemas/metric). The rule fails
// when the change is significant, in the worse direction, and worse than the minimum effect
// (the rule's tolerance, max(absolute, |baseline median| x relative)); it is refused
// (too_few_samples) when a side has fewer than metric.MinSamplesSignificance samples.
func (x *comparer) significance(e *Evaluation, rule contract.MetricRule, rows *rowPair) {
	fail := func(r *Reason, format string, args ...any) {
		e.Status, e.Code, e.Reason = contract.EvaluationStatusFailed, r.Code(), fmt.Sprintf("%v: ", r)+fmt.Sprintf(format, args...)
	}
	if rows == nil || rule.Confidence == nil {
		fail(ErrRuleFailed, "%s needs a row-scoped rule with a confidence", rule.Operator)
		return
	}
	confidence := *rule.Confidence
	xb, okb := x.b.perRequest(rows.m.crb, rows.b, rule.Formula)
	xc, okc := x.c.perRequest(rows.m.crc, rows.c, rule.Formula)
	if !okb || !okc {
		fail(ErrTooFewSamples, "the request records of the row are not readable on both sides: the samples cannot be recomputed")
		return
	}
	sig := &contract.ComparisonSignificance{Confidence: confidence, BaselineSamples: int64(len(xb)), CandidateSamples: int64(len(xc)),
		MinimumSamples: metric.MinSamplesSignificance}
	if len(xb) < metric.MinSamplesSignificance || len(xc) < metric.MinSamplesSignificance {
		fail(ErrTooFewSamples, "%d baseline and %d candidate samples of %s; a statistical rule needs at least %d on each side", len(xb), len(xc), rule.Formula, metric.MinSamplesSignificance)
		return
	}
	mw := metric.MannWhitneyU(xb, xc)
	hl := metric.HodgesLehmann(xb, xc, confidence)
	sorted := slices.Clone(xb)
	slices.Sort(sorted)
	minEffect := math.Max(e.AbsoluteTolerance, math.Abs(metric.Percentile(sorted, 0.5))*e.RelativeTolerance)
	sig.Test = contract.SignificanceTestMannWhitneyUNormal
	if mw.Exact {
		sig.Test = contract.SignificanceTestMannWhitneyUExact
	}
	sig.PValue, sig.Shift, sig.ShiftLow, sig.ShiftHigh, sig.ShiftConfidence = mw.P, hl.Estimate, hl.Low, hl.High, hl.Confidence
	sig.MinimumEffect = minEffect
	sig.Significant = mw.P < 1-confidence
	e.Significance = sig
	worse := hl.Estimate // how much worse the candidate is, in the rule's unit
	if rule.Direction == contract.DirectionHigherIsBetter {
		worse = -worse
	}
	violation := math.Max(0, worse)
	e.Tolerance, e.Violation = &minEffect, &violation
	change := hl.Estimate
	e.AbsoluteChange = &change
	if med := metric.Percentile(sorted, 0.5); med != 0 {
		pct := change / math.Abs(med) * 100
		e.RelativeChangePercent = &pct
	}
	what := fmt.Sprintf("%s: n %d vs %d, shift %s %s [%s, %s] at %s, p %s",
		mw.Test(), len(xb), len(xc), fmtSigned(hl.Estimate), rule.Unit, fmt4(hl.Low), fmt4(hl.High), fmt4(hl.Confidence), fmtP(mw.P))
	switch {
	case !sig.Significant:
		e.Status, e.Reason = contract.EvaluationStatusPassed, fmt.Sprintf("no significant change (%s >= %s)", what, fmt4(1-confidence))
	case worse <= minEffect:
		e.Status, e.Reason = contract.EvaluationStatusPassed, fmt.Sprintf("significant change, not worse than the minimum effect %s %s (%s < %s)", fmt4(minEffect), rule.Unit, what, fmt4(1-confidence))
	default:
		fail(ErrRuleFailed, "significantly worse by more than the minimum effect %s %s (%s < %s)", fmt4(minEffect), rule.Unit, what, fmt4(1-confidence))
	}
}

// perRequest recomputes the per-request samples of a formula for a row from its records.
func (s *snapshot) perRequest(cr *contract.CaseResultDoc, row contract.Row, formula string) ([]float64, bool) {
	f := s.files[row.Records.Path]
	if cr == nil || f == nil || f.records == nil {
		return nil, false
	}
	_, measured := measuredRequests(rowRecords(nil, cr, row, f.records))
	return metric.PerRequest(formula, samplesOf(measured))
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
