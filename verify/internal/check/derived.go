package check

import (
	"fmt"
	"strings"
	"time"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Runner-written fields that verify recomputes instead of trusting: the receipt id (from its
// start, backend, host id, workload id and variant) and the run directory it names; the
// required flag of each result (from the workload's case); each result's status (from its case
// result); the campaign verdict (from the required results and the lifecycle record); and
// publishable (from the source identity, the derived verdict and the rows' fidelity).

// checkIdentity (hashes check): the receipt id is the one qualrun derives from the receipt's own
// fields, and every evidence file lives below the run directory it names.
func checkIdentity(s *load.Snapshot, c *finding.Collector) {
	rc := s.RC
	file := s.Receipt.Path
	start, err := time.Parse(time.RFC3339Nano, rc.Qualification.StartedAt)
	if err != nil {
		c.Add(file, "/qualification/started_at", reason.ErrIdentityMismatch, "started_at %q is not an RFC 3339 time: the receipt id cannot be recomputed", rc.Qualification.StartedAt)
	} else if want := contract.ReceiptIDFor(start, string(rc.Qualification.Backend), rc.Environment.HostID, rc.Workload.ID, rc.Workload.Variant); want != rc.ReceiptID {
		c.Add(file, "/receipt_id", reason.ErrIdentityMismatch, "receipt id %q, but the receipt's start, backend, host id %q, workload %q and variant %q name it %q",
			rc.ReceiptID, rc.Environment.HostID, rc.Workload.ID, rc.Workload.Variant, want)
	}
	dir := s.RunDir()
	for i, a := range rc.Artifacts {
		if contract.Kinds[a.Kind].Evidence && !strings.HasPrefix(a.Path, dir) {
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrIdentityMismatch, "%s %s is not below the run directory %s that the receipt id names", a.Kind, a.Path, dir)
		}
	}
}

// checkLaunch (comparability check): the launch recipes the receipt binds are exactly the ones
// the variant's serving cases launch.
func checkLaunch(s *load.Snapshot, c *finding.Collector, v *contract.Variant) {
	file := s.Receipt.Path
	want := map[string]string{} // path -> a case that launches it
	for _, cs := range v.Cases {
		if cs.Kind == contract.CaseKindServing && cs.Launch != "" {
			if _, ok := want[cs.Launch]; !ok {
				want[cs.Launch] = cs.ID
			}
		}
	}
	bound := map[string]bool{}
	for i, a := range s.RC.Artifacts {
		if a.Kind != contract.ArtifactKindLaunchRecipe {
			continue
		}
		bound[a.Path] = true
		if _, ok := want[a.Path]; !ok {
			c.Add(file, finding.Pointer("artifacts", i, "path"), reason.ErrWorkloadMismatch, "launch recipe %s is bound, but no serving case of variant %s launches it", a.Path, v.ID)
		}
	}
	for _, p := range sortedKeys(want) {
		if !bound[p] {
			c.Add(file, "/artifacts", reason.ErrWorkloadMismatch, "case %s of variant %s launches %s, which the receipt does not bind", want[p], v.ID, p)
		}
	}
}

// derived is what the receipt's verdict fields should say, recomputed.
type derived struct {
	verdict     contract.QualificationVerdict // passed or failed
	failed      []string                      // required results that did not pass, with why
	unpublished []string                      // why the receipt cannot be publishable
}

// derive recomputes the campaign verdict and publishability. The required flag comes from the
// workload's case when the workload is available (else from the receipt, and the note says so);
// each result's status from its case result when that was read.
func derive(s *load.Snapshot) derived {
	rc := s.RC
	d := derived{verdict: contract.QualificationVerdictPassed}
	for _, r := range rc.Results {
		required := r.Required
		if wc := s.Case(r.ID); wc != nil {
			required = wc.Required
		}
		status := r.Status
		if r.CaseResult != nil {
			if cr := s.CaseResults[r.CaseResult.Path]; cr != nil {
				status = cr.Status
			}
		}
		if required && status != contract.StatusPassed {
			d.failed = append(d.failed, fmt.Sprintf("required case %s (repetition %d) %s", r.ID, r.Repetition, status))
		}
	}
	if rc.Lifecycle != nil && rc.Lifecycle.Verdict != contract.LifecycleRefVerdictPassed {
		d.failed = append(d.failed, "the lifecycle record's verdict is "+string(rc.Lifecycle.Verdict))
	}
	if s.Lifecycle != nil && s.Lifecycle.Verdict != contract.RecordVerdictPassed {
		d.failed = append(d.failed, "the lifecycle record says "+string(s.Lifecycle.Verdict))
	}
	if len(d.failed) > 0 {
		d.verdict = contract.QualificationVerdictFailed
	}
	src := rc.Source
	switch {
	case !src.Clean:
		d.unpublished = append(d.unpublished, "the source tree was not clean")
	case src.OriginMain == nil:
		d.unpublished = append(d.unpublished, "there was no origin/main")
	case *src.OriginMain != src.Commit:
		d.unpublished = append(d.unpublished, "HEAD was not origin/main")
	}
	if rc.Qualification.Verdict == contract.QualificationVerdictInterrupted {
		d.unpublished = append(d.unpublished, "the campaign was interrupted")
	}
	if d.verdict != contract.QualificationVerdictPassed {
		d.unpublished = append(d.unpublished, "the derived verdict is failed: "+strings.Join(d.failed, "; "))
	}
	// A degraded row also makes a receipt unpublishable, but receipts written before qualrun said
	// so carry publishable: true beside one (the frozen a-2): their publication is refused by the
	// source check's degraded_row, not called an inconsistent receipt here.
	return d
}

// checkDerived (tolerances check): the required flags, result statuses, campaign verdict and
// publishable are the ones derived from the workload and the evidence.
func checkDerived(s *load.Snapshot, c *finding.Collector) {
	rc := s.RC
	file := s.Receipt.Path
	if s.Variant() == nil {
		c.Note("the workload's variant is not available: the required flags were taken from the receipt")
	}
	for i, r := range rc.Results {
		if wc := s.Case(r.ID); wc != nil && wc.Required != r.Required {
			c.Add(file, finding.Pointer("results", i, "required"), reason.ErrVerdictMismatch, "result %q is recorded required: %v, the workload's case %s says required: %v", r.ID, r.Required, r.ID, wc.Required)
		}
		if r.CaseResult != nil {
			if cr := s.CaseResults[r.CaseResult.Path]; cr != nil && cr.Status != r.Status && r.Status != contract.StatusPassed {
				// (a passed result over a failed case result is a result_mismatch already)
				c.Add(file, finding.Pointer("results", i, "status"), reason.ErrVerdictMismatch, "result %q is recorded %s, its case result says %s", r.ID, r.Status, cr.Status)
			}
		}
	}
	d := derive(s)
	switch v := rc.Qualification.Verdict; {
	case v == contract.QualificationVerdictPassed && d.verdict != contract.QualificationVerdictPassed:
		c.Add(file, "/qualification/verdict", reason.ErrVerdictMismatch, "the verdict is passed, but %s", strings.Join(d.failed, "; "))
	case v == contract.QualificationVerdictFailed && d.verdict == contract.QualificationVerdictPassed:
		c.Add(file, "/qualification/verdict", reason.ErrVerdictMismatch, "the verdict is failed, but every required case passed and the lifecycle passed")
	}
	if rc.Publishable && len(d.unpublished) > 0 {
		c.Add(file, "/publishable", reason.ErrVerdictMismatch, "the receipt says publishable, but %s", strings.Join(d.unpublished, "; "))
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// rowRef names one row of one result.
type rowRef struct {
	result      string
	repetition  int64
	file        string
	index       int
	concurrency int64
	rowRep      int64
	saturation  bool // its case declares measures_saturation: true
}

func (r rowRef) String() string {
	return fmt.Sprintf("row c%d-r%d of result %s (repetition %d)", r.concurrency, r.rowRep, r.result, r.repetition)
}

// degradedRows lists the degraded open-loop rows of serving cases: such a row did not run its
// offered rate, so its receipt cannot be published as a measurement of that load, whatever the
// case declares (measures_saturation: true lets the case pass with it, the runner then writes the
// receipt not publishable "as a rate claim", and so does this check). A degraded closed-loop row
// (the client's own lag over its bound) does not block publication: its declared load, the
// concurrency, is checked by load_not_reached from in_flight_peak, and its latencies are measured
// from t_send; performance comparisons refuse it (compare's degraded_row).
func degradedRows(s *load.Snapshot) []rowRef {
	var out []rowRef
	for _, r := range s.RC.Results {
		if r.CaseResult == nil {
			continue
		}
		cr := s.CaseResults[r.CaseResult.Path]
		if cr == nil {
			continue
		}
		for j, row := range cr.Rows {
			if row.Fidelity.Degraded && row.Loop == contract.RowLoopOpen {
				out = append(out, rowRef{result: r.ID, repetition: r.Repetition, file: r.CaseResult.Path, index: j, concurrency: row.Concurrency, rowRep: row.Repetition, saturation: MeasuresSaturation(s, r.ID)})
			}
		}
	}
	return out
}

// measuresSaturation reports whether the variant's case id declares measures_saturation: true.
// Read from the workload's bytes (the member is optional, and absent in workloads written
// before it existed: a degraded row of such a case is never publishable).
func MeasuresSaturation(s *load.Snapshot, id string) bool {
	if s.Workload == nil || s.RC == nil {
		return false
	}
	f := s.Files[s.RC.Workload.Path]
	if f == nil || f.Raw == nil {
		return false
	}
	tree, err := jsonstrict.Parse(f.Raw)
	if err != nil {
		return false
	}
	w, _ := tree.(map[string]any)
	variants, _ := w["variants"].([]any)
	for _, v := range variants {
		vm, _ := v.(map[string]any)
		if vm["id"] != s.RC.Workload.Variant {
			continue
		}
		cases, _ := vm["cases"].([]any)
		for _, c := range cases {
			cm, _ := c.(map[string]any)
			if cm["id"] == id {
				b, _ := cm["measures_saturation"].(bool)
				return b
			}
		}
	}
	return false
}
