package load

import (
	"sort"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/metric"
)

// Rows: a row's receipt numbers from its request records, by the catalogue's formulas (package
// schemas/metric, which the verifier recomputes with), and the hashes of its prompt and output
// sets. Row is a pure function of its arguments.

// RowSpec is what a row's numbers depend on besides its request records.
type RowSpec struct {
	Concurrency int64
	Repetition  int64
	// Loop is "closed" (concurrency slots) or "open" (a declared rate; concurrency caps the
	// requests in flight).
	Loop contract.RowLoop
	// OfferedRate is the declared open-loop rate in requests/s; nil in closed loop.
	OfferedRate *float64
	// SLO holds the declared gates (zero: not declared).
	SLO contract.SLO
	// PromptSetSHA256 is PromptSetSHA256 of the row's prompts in measured order.
	PromptSetSHA256 string
	// CacheRegime is the case's declared cache regime ("" when it declares none).
	CacheRegime contract.CacheRegime
	// Tokenizer is the case's bound tokenizer (nil when it binds none): the row then carries its
	// token ledger.
	Tokenizer *contract.Tokenizer
	// Fidelity is the case's declared fidelity bound (nil: the defaults).
	Fidelity *contract.FidelitySpec
	// Calibration is the row's send calibration (nil: none was made).
	Calibration *contract.SendCalibration
}

// Row computes a serving row from its request records with package metric: the counts, the
// request window, the prompt and output set hashes, every metric of docs/metrics.md and the
// client fidelity. It is a pure function of its arguments (records in any order; warmup records
// are ignored), so a verifier can recompute every number from the retained records. Records is
// left empty (the caller binds the records file).
func Row(spec RowSpec, records []contract.RequestRecordDoc) contract.Row {
	measured := measuredOf(records)
	reqs := make([]metric.Request, len(measured))
	for i, r := range measured {
		reqs[i] = metric.RequestOf(r)
	}
	slo := metric.SLO{TTFTMs: spec.SLO.TTFTMs, ICLMs: spec.SLO.ICLMs, E2EMs: spec.SLO.E2EMs}
	res := metric.Row(metric.RowSpec{Concurrency: spec.Concurrency, Loop: spec.Loop, OfferedRate: spec.OfferedRate, SLO: &slo,
		Bound: metric.BoundOf(spec.Fidelity), Calibration: metric.CalibrationOf(spec.Calibration)}, reqs)
	f := res.Fidelity
	row := contract.Row{
		Concurrency: spec.Concurrency, Repetition: spec.Repetition, Loop: spec.Loop,
		Requests: res.Requests, Successes: res.Successes, Failures: res.Failures,
		WindowSeconds: res.WindowSeconds, PromptSetSHA256: spec.PromptSetSHA256,
		OutputSetSHA256: outputSet(measured),
		Metrics:         metric.MetricsOf(res.Values),
		Fidelity: contract.Fidelity{
			ScheduleLagP50Ms: f.ScheduleLagP50Ms, ScheduleLagP99Ms: f.ScheduleLagP99Ms, ScheduleLagMaxMs: f.ScheduleLagMaxMs,
			OfferedRate: spec.OfferedRate, AchievedRate: f.AchievedRate, Degraded: f.Degraded, Reasons: f.Reasons,
			Calibration: spec.Calibration, Judgement: metric.JudgementOf(f.Judgement),
		},
	}
	if f.HasInFlight {
		peak, mean := f.InFlightPeak, f.InFlightMean
		row.Fidelity.InFlightPeak, row.Fidelity.InFlightMean = &peak, &mean
	}
	// The cache object: when the case declares a regime, or a measured request reported cached
	// prompt tokens (so that evidence without either stays as it was).
	if cf := metric.CacheOf(reqs); spec.CacheRegime != "" || cf.Reporting > 0 {
		rc := cf.RowCache(spec.CacheRegime)
		row.Cache = &rc
	}
	if tk := spec.Tokenizer; tk != nil {
		rt := metric.LedgerOf(reqs).RowTokens(tk.MaxMismatchFraction)
		row.Tokens = &rt
	}
	return row
}

// measuredOf are the measured (not warmup) records in index order.
func measuredOf(records []contract.RequestRecordDoc) []*contract.RequestRecordDoc {
	var measured []*contract.RequestRecordDoc
	for i := range records {
		if !records[i].Warmup {
			measured = append(measured, &records[i])
		}
	}
	sort.SliceStable(measured, func(a, b int) bool { return measured[a].Index < measured[b].Index })
	return measured
}

// outputSet is the output set hash of the measured records (evidence.OutputSetDigest); nil when
// a measured request failed or has no output digest.
func outputSet(measured []*contract.RequestRecordDoc) *string {
	digests := make([]string, 0, len(measured))
	for _, r := range measured {
		if r.Error != nil || r.OutputDigest == nil {
			return nil
		}
		digests = append(digests, *r.OutputDigest)
	}
	h, ok := evidence.OutputSetDigest(digests)
	if !ok {
		return nil
	}
	return &h
}

// OutputSetSHA256 returns the output set hash of a row's records: the sha256 digest of the
// RFC 8785 canonical JSON array of the measured requests' output digests in index order
// (["sha256:…",…]); nil when a measured request failed.
func OutputSetSHA256(records []contract.RequestRecordDoc) *string {
	return outputSet(measuredOf(records))
}

// PromptSetSHA256 returns the prompt set hash (evidence.PromptSetDigest).
func PromptSetSHA256(prompts []contract.Prompt) (string, error) {
	return evidence.PromptSetDigest(prompts)
}
