package verify

import (
	"cmp"
	"context"
	"slices"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/check/driver"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// Inspection is a verification result together with the evidence it was computed from, for
// renderers that show evidence to people (package verify/report). Everything in it was read and
// checked by the same run of the protocol that produced Result; the row numbers are recomputed
// from the retained request records by the formulas of docs/metrics.md, never copied from the
// receipt.
type Inspection struct {
	Result   *Result
	Evidence Evidence
	// Receipt is nil when the receipt does not validate against its contract.
	Receipt *contract.ReceiptDoc
	// Workload is the workload the receipt binds, when it is present with the bound digest.
	Workload *contract.WorkloadDoc
	// Lifecycle is the lifecycle record, when it was readable and valid.
	Lifecycle *contract.LifecycleRecordDoc
	// Cases has one entry per result of the receipt, in the receipt's order.
	Cases []CaseEvidence
}

// CaseEvidence is one result of the receipt and, for a serving case, its rows; for a driver case,
// its evidence result.
type CaseEvidence struct {
	// Result is the receipt's entry.
	Result contract.Result
	// CaseResult is the bound case result; nil when there is none or it was unreadable.
	CaseResult *contract.CaseResultDoc
	// SLO is the case's declared SLO; nil when it declares none or the workload is unavailable
	// (SLOKnown false: the SLO metrics are then not recomputed).
	SLO      *contract.SLO
	SLOKnown bool
	Rows     []RowEvidence
	// Kind is the workload's kind of the case ("serving", "command", "driver"); "" when the
	// workload is unavailable or does not declare the case.
	Kind string
	// Driver is the bound driver result of a driver case; nil when there is none or it was
	// unreadable or not one of the version-2 driver contracts.
	Driver *DriverEvidence
}

// DriverEvidence is a driver case's version-2 evidence result, decoded from the bytes verify read,
// hashed and re-checked. Exactly one of NextToken, PathAttribution and LayerAttribution is set.
type DriverEvidence struct {
	// Contract is the result's schema id, e.g. "qualkit.path-attribution.v2".
	Contract string
	// Path is the result's path relative to the evidence root; Digest its bytes' digest.
	Path, Digest     string
	NextToken        *contract.NextTokenResultDoc
	PathAttribution  *contract.PathAttributionDoc
	LayerAttribution *contract.LayerAttributionDoc
	// Recomputed are the result's tolerance outcomes recomputed from its numbers, one for each
	// outcome it records, in its order (the rules as the result records them; the tolerances
	// check compares them with the workload's). Nil when they could not be evaluated.
	Recomputed []contract.ToleranceOutcome
}

// Header returns the members every driver result has.
func (d *DriverEvidence) Header() contract.DriverResultHeader {
	switch {
	case d.NextToken != nil:
		return d.NextToken.DriverResultHeader
	case d.PathAttribution != nil:
		return d.PathAttribution.DriverResultHeader
	case d.LayerAttribution != nil:
		return d.LayerAttribution.DriverResultHeader
	}
	return contract.DriverResultHeader{}
}

// RowEvidence is one serving row: as its case result records it, and as its request records
// recompute it.
type RowEvidence struct {
	// Row is the row as the case result records it.
	Row contract.Row
	// Readable is false when the row's records file could not be read; nothing below is then set.
	Readable bool
	// Records counts the row's valid records (warmups included); InvalidRecords the invalid lines
	// of its file.
	Records, InvalidRecords int
	// Requests, Successes and Failures count the measured requests, recomputed.
	Requests, Successes, Failures int64
	// Metrics are the row metrics recomputed from the records.
	Metrics []contract.Metric
	// Fidelity is the client fidelity recomputed from the records (Reasons copied from the row).
	Fidelity contract.Fidelity
	// Telemetry are the row's device telemetry samples, when it has them and they are readable
	// and match their digest (nil otherwise).
	Telemetry []contract.TelemetrySampleDoc
	// Samples are the measured requests' per-request samples.
	Samples Samples
	// FirstSendNs is the earliest t_send and LastResponseNs the latest t_close (t_end where a
	// request has no t_close) of the row's records, warmups included; HasSpan is false when no
	// record was sent.
	FirstSendNs, LastResponseNs int64
	HasSpan                     bool
}

// Samples are a row's per-request samples in the units of docs/metrics.md, in index order of the
// measured requests: the latencies over the successful ones (ICL pooled over their gaps), the
// schedule lag over every request sent.
type Samples struct {
	TTFTMs, TTFTSchedMs, TTFBMs, E2EMs, E2ESchedMs, TPOTMs, DecodeRate, ICLMs, ICLMaxMs, ScheduleLagMs []float64
}

// Inspect verifies one receipt exactly as Verify does and returns the result with the evidence it
// read. The error is Verify's: non-nil only when verification could not be carried out.
func Inspect(ctx context.Context, evidence Evidence, policy Policy, opts ...Option) (*Inspection, error) {
	cfg := newConfig(opts)
	res, s, err := verify(ctx, evidence, policy, cfg)
	if err != nil {
		return nil, err
	}
	in := &Inspection{Result: res, Evidence: evidence, Receipt: s.RC, Workload: s.Workload, Lifecycle: s.Lifecycle}
	if s.RC == nil {
		return in, nil
	}
	for _, r := range s.RC.Results {
		ce := CaseEvidence{Result: r}
		if r.CaseResult != nil {
			ce.CaseResult = s.CaseResults[r.CaseResult.Path]
		}
		wc := s.Case(r.ID)
		if wc != nil {
			ce.SLO, ce.SLOKnown, ce.Kind = wc.SLO, true, string(wc.Kind)
		}
		if r.CaseResult != nil {
			ce.Driver = driverEvidenceOf(s, r.CaseResult.Path)
		}
		if ce.CaseResult != nil {
			for _, row := range ce.CaseResult.Rows {
				ce.Rows = append(ce.Rows, rowEvidence(s, ce.CaseResult, row, wc))
			}
		}
		in.Cases = append(in.Cases, ce)
	}
	return in, nil
}

func rowEvidence(s *load.Snapshot, cr *contract.CaseResultDoc, row contract.Row, wc *contract.Case) RowEvidence {
	re := RowEvidence{Row: row}
	f := s.Files[row.Records.Path]
	if f == nil || f.Records == nil {
		return re
	}
	recs := check.RowRecords(nil, cr, row, f.Records)
	rf := record.RecomputeRow(check.RowSpecOf(row, wc), recs)
	re.Readable, re.Records, re.InvalidRecords = true, len(recs), f.Records.InvalidLines
	re.Telemetry = rowcheck.TelemetrySamples(s, row)
	re.Requests, re.Successes, re.Failures, re.Metrics = rf.Requests, rf.Successes, rf.Failures, rf.Metrics
	re.Fidelity = contract.Fidelity{ScheduleLagP50Ms: rf.LagP50, ScheduleLagP99Ms: rf.LagP99, ScheduleLagMaxMs: rf.LagMax,
		OfferedRate: row.Fidelity.OfferedRate, AchievedRate: rf.Achieved, Degraded: rf.Degraded, Reasons: slices.Clone(row.Fidelity.Reasons)}
	var measured []*record.Record
	for _, r := range recs {
		if r.HasSend {
			last := r.End
			if r.HasClose {
				last = r.Close
			}
			if !re.HasSpan || r.Send < re.FirstSendNs {
				re.FirstSendNs = r.Send
			}
			if (r.HasClose || r.HasEnd) && last > re.LastResponseNs {
				re.LastResponseNs = last
			}
			re.HasSpan = true
		}
		if !r.Warmup {
			measured = append(measured, r)
		}
	}
	slices.SortStableFunc(measured, func(a, b *record.Record) int { return cmp.Compare(a.Index, b.Index) })
	sm := record.SamplesOf(measured)
	re.Samples = Samples{TTFTMs: sm.TTFTMs, TTFTSchedMs: sm.TTFTSchedMs, TTFBMs: sm.TTFBMs, E2EMs: sm.E2EMs, E2ESchedMs: sm.E2ESchedMs,
		TPOTMs: sm.TPOTMs, DecodeRate: sm.DecodeRate, ICLMs: sm.ICLMs, ICLMaxMs: sm.ICLMaxMs, ScheduleLagMs: sm.ScheduleLagMs}
	return re
}

// driverEvidence decodes the driver result at path as its contract's document; nil when verify
// did not accept it as a driver result.
func driverEvidenceOf(s *load.Snapshot, path string) *DriverEvidence {
	dr, f := s.DriverResults[path], s.Files[path]
	if dr == nil || f == nil {
		return nil
	}
	de := &DriverEvidence{Contract: "qualkit." + dr.Name, Path: path, Digest: f.Digest}
	var err error
	switch dr.Name {
	case contract.NextTokenResult:
		de.NextToken = new(contract.NextTokenResultDoc)
		err = jsonstrict.DecodeInto(f.Raw, de.NextToken)
	case contract.PathAttribution:
		de.PathAttribution = new(contract.PathAttributionDoc)
		err = jsonstrict.DecodeInto(f.Raw, de.PathAttribution)
	case contract.LayerAttribution:
		de.LayerAttribution = new(contract.LayerAttributionDoc)
		err = jsonstrict.DecodeInto(f.Raw, de.LayerAttribution)
	default:
		return nil
	}
	if err != nil {
		return nil
	}
	rules := make([]contract.DriverTolerance, 0, len(dr.Header.Tolerances))
	for _, o := range dr.Header.Tolerances {
		rules = append(rules, contract.DriverTolerance{Metric: contract.DriverMetric(o.Metric), Op: contract.Op(o.Op), Limit: o.Limit, Subject: o.Subject})
	}
	if rec, err := driver.EvaluateEach(dr.Name, rules, dr.Body); err == nil && len(rec) == len(rules) {
		de.Recomputed = rec
	}
	return de
}
