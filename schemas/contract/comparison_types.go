package contract

// ComparisonDoc is a comparison report (qualkit.comparison.v1): what `qualverify compare --json`
// prints. Conventions as in types.go.
type ComparisonDoc struct {
	Schema string `json:"schema"`
	// OK: compatible, both sides verified without a finding, and no rule failed.
	OK bool `json:"ok"`
	// Compatible: a mode applied and no difference was rejected.
	Compatible bool `json:"compatible"`
	// Mode is the mode applied; nil when none could be.
	Mode                *string                   `json:"mode"`
	Baseline            ComparisonSide            `json:"baseline"`
	Candidate           ComparisonSide            `json:"candidate"`
	RejectedDifferences []ComparisonDifference    `json:"rejected_differences"`
	AllowedDifferences  []ComparisonDifference    `json:"allowed_differences"`
	EvidenceErrors      []ComparisonEvidenceError `json:"evidence_errors"`
	Evaluations         []ComparisonEvaluation    `json:"evaluations"`
	Warnings            []string                  `json:"warnings"`
}

// ComparisonSide identifies one compared receipt; a member is nil when the receipt does not
// validate.
type ComparisonSide struct {
	Receipt   string  `json:"receipt"`
	ReceiptID *string `json:"receipt_id"`
	Digest    *string `json:"digest"`
	Variant   *string `json:"variant"`
	Backend   *string `json:"backend"`
	HostID    *string `json:"host_id"`
	// Verdict is the receipt's own verdict; Verification that of verifying it.
	Verdict      *string `json:"verdict"`
	Verification string  `json:"verification"`
}

// ComparisonDifference is one difference between the compared receipts, at a dot path, with the
// values found on each side (nil where a side has none).
type ComparisonDifference struct {
	Path      string `json:"path"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Baseline  any    `json:"baseline"`
	Candidate any    `json:"candidate"`
}

// ComparisonEvidenceError is a finding of verifying one side ("baseline" or "candidate").
type ComparisonEvidenceError struct {
	Side    string `json:"side"`
	Check   string `json:"check"`
	File    string `json:"file"`
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ComparisonEvaluation is one metric rule applied to one matched row or result. The implicit
// rule of a cross-backend comparison (equal output sets) has no unit, aggregation, direction or
// formula.
type ComparisonEvaluation struct {
	Scope                 string   `json:"scope"`
	Metric                string   `json:"metric"`
	MetricClass           string   `json:"metric_class"`
	Unit                  *string  `json:"unit"`
	Aggregation           *string  `json:"aggregation"`
	Direction             *string  `json:"direction"`
	Formula               *string  `json:"formula"`
	Operator              string   `json:"operator"`
	AbsoluteTolerance     float64  `json:"absolute_tolerance"`
	RelativeTolerance     float64  `json:"relative_tolerance"`
	Required              bool     `json:"required"`
	Status                string   `json:"status"`
	Code                  *string  `json:"code"`
	Reason                string   `json:"reason"`
	Baseline              *float64 `json:"baseline"`
	Candidate             *float64 `json:"candidate"`
	Tolerance             *float64 `json:"tolerance"`
	Violation             *float64 `json:"violation"`
	AbsoluteChange        *float64 `json:"absolute_change"`
	RelativeChangePercent *float64 `json:"relative_change_percent"`
}
