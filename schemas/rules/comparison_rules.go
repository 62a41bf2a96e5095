package rules

import "github.com/qualkit/qualkit/schemas/contract"

// CheckComparison applies the comparison report's rules that its schema cannot express.
func CheckComparison(c *contract.ComparisonDoc) []Problem {
	r := &rules{}
	if compatible := c.Mode != nil && len(c.RejectedDifferences) == 0; c.Compatible != compatible {
		r.add("/compatible", "compatible is %v with mode %s and %d rejected differences", c.Compatible, strOr(c.Mode, "null"), len(c.RejectedDifferences))
	}
	failed := 0
	for i, e := range c.Evaluations {
		if (e.Status == contract.EvaluationStatusFailed) != (e.Code != nil) {
			r.add(ptr("evaluations", i, "code"), "a %s evaluation has code %s: a failure has a code, nothing else does", e.Status, strOr(e.Code, "null"))
		}
		if e.Status == contract.EvaluationStatusFailed {
			failed++
		}
	}
	if c.OK && (!c.Compatible || len(c.EvidenceErrors) > 0 || failed > 0) {
		r.add("/ok", "ok, yet compatible is %v with %d evidence errors and %d failed evaluations", c.Compatible, len(c.EvidenceErrors), failed)
	}
	if len(c.Evaluations) > 0 && (!c.Compatible || len(c.EvidenceErrors) > 0) {
		r.add("/evaluations", "rules are evaluated only for compatible receipts that both verified cleanly")
	}
	return r.out
}

func strOr[S ~string](p *S, alt string) string {
	if p == nil {
		return alt
	}
	return string(*p)
}
