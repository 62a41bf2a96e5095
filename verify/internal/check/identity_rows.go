package check

import (
	"fmt"
	"path"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/check/rowcheck"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
	"github.com/qualkit/qualkit/verify/internal/record"
)

// durationSlackSeconds bounds the rounding between a case's duration and the sum of its rows'
// windows, and between the campaign's duration and the sum of its cases' (all measured on one
// monotonic clock).
const durationSlackSeconds = 1e-6

// checkResultIdentity: the receipt's results are the workload's cases in the runner's order
// (every case of the variant in declared order, repetition after repetition, from 0), each bound
// to the case directory the runner names after its index, id and repetition. On 4822f1d a
// result relabelled to repetition 7 verified (in a fleet that moves a host out of the statistics).
func checkResultIdentity(s *load.Snapshot, c *finding.Collector, v *contract.Variant) {
	n := len(v.Cases)
	if n == 0 {
		return
	}
	file := s.Receipt.Path
	for i, r := range s.RC.Results {
		idx, rep := i%n, int64(i/n)
		want := v.Cases[idx].ID
		if r.ID != want || r.Repetition != rep {
			c.Add(file, finding.Pointer("results", i), reason.ErrWorkloadMismatch, "result %d is case %s repetition %d; the runner runs variant %s's cases in declared order, repetition after repetition, so result %d is case %s repetition %d", i, r.ID, r.Repetition, v.ID, i, want, rep)
			continue
		}
		if r.CaseResult == nil || !strings.HasPrefix(r.CaseResult.Path, s.RunDir()+"cases/") {
			continue
		}
		dir := fmt.Sprintf("%scases/%03d-%s-r%03d", s.RunDir(), idx, want, rep)
		if path.Dir(r.CaseResult.Path) != dir {
			c.Add(file, finding.Pointer("results", i, "case_result", "path"), reason.ErrWorkloadMismatch, "case %s repetition %d is bound at %s, the runner writes it in %s/", want, rep, r.CaseResult.Path, dir) // not a contract value: the result's member name
		}
	}
}

// checkRowIdentity: each serving row's records are the file the runner names after its
// concurrency and repetition, a closed-loop row declares no offered rate, and a row's device
// telemetry was sampled at the interval the case declares.
func checkRowIdentity(c *finding.Collector, p string, cr *contract.CaseResultDoc, wc *contract.Case) {
	dir := path.Dir(p)
	for j, row := range cr.Rows {
		if strings.HasSuffix(p, "/case-result.json") {
			if want := fmt.Sprintf("%s/rows/c%04d-r%03d.jsonl", dir, row.Concurrency, row.Repetition); row.Records.Path != want {
				c.Add(p, finding.Pointer("rows", j, "records", "path"), reason.ErrUnlikeRows, "row c%d-r%d binds records %s, the runner writes them to %s", row.Concurrency, row.Repetition, row.Records.Path, want)
			}
		}
		if row.Loop == contract.RowLoopClosed && row.Fidelity.OfferedRate != nil {
			c.Add(p, finding.Pointer("rows", j, "fidelity", "offered_rate"), reason.ErrUnlikeRows, "closed-loop row c%d-r%d records an offered rate %s: a closed loop offers no rate", row.Concurrency, row.Repetition, record.FmtFloat(*row.Fidelity.OfferedRate))
		}
		switch dt := row.DeviceTelemetry; {
		case dt == nil:
		case wc.DeviceTelemetry == nil:
			c.Add(p, finding.Pointer("rows", j, "device_telemetry"), reason.ErrUnlikeRows, "row c%d-r%d carries device telemetry, the case declares none", row.Concurrency, row.Repetition) // not a contract value: the row's member name
		case dt.IntervalMs != wc.DeviceTelemetry.IntervalMs:
			c.Add(p, finding.Pointer("rows", j, "device_telemetry", "interval_ms"), reason.ErrUnlikeRows, "row c%d-r%d was sampled every %d ms, the case declares %d ms", row.Concurrency, row.Repetition, dt.IntervalMs, wc.DeviceTelemetry.IntervalMs) // not a contract value: the row's member name
		}
	}
}

// checkDurations: a result's duration is its case result's; a case lasted at least its rows'
// windows and their send calibrations (they run one after another, each calibration before its
// row's window); the cases together lasted no longer than the campaign.
func checkDurations(s *load.Snapshot, c *finding.Collector) {
	file := s.Receipt.Path
	var sum float64
	for i, r := range s.RC.Results {
		sum += r.DurationSeconds
		if r.CaseResult == nil {
			continue
		}
		cr := s.CaseResults[r.CaseResult.Path]
		if cr == nil {
			continue
		}
		if cr.DurationSeconds != r.DurationSeconds {
			c.Add(file, finding.Pointer("results", i, "duration_seconds"), reason.ErrResultMismatch, "result %s lasted %s s, its case result says %s s", r.ID, record.FmtFloat(r.DurationSeconds), record.FmtFloat(cr.DurationSeconds))
		}
		var windows, cals float64
		for _, row := range cr.Rows {
			windows += row.WindowSeconds
			cals += rowcheck.CalibrationSeconds(row)
		}
		if windows+cals > cr.DurationSeconds+durationSlackSeconds {
			c.Add(r.CaseResult.Path, "/duration_seconds", reason.ErrRowMismatch, "the case lasted %s s, its rows' windows add up to %s s and their send calibrations to %s s", record.FmtFloat(cr.DurationSeconds), record.FmtFloat(windows), record.FmtFloat(cals))
		}
	}
	if q := s.RC.Qualification.DurationSeconds; sum > q+durationSlackSeconds {
		c.Add(file, "/qualification/duration_seconds", reason.ErrResultMismatch, "the campaign lasted %s s, its cases add up to %s s", record.FmtFloat(q), record.FmtFloat(sum))
	}
}

// modelDirKinds are the artifact kinds a model directory's files are bound as.
var modelDirKinds = []contract.ArtifactKind{contract.ArtifactKindModelWeight, contract.ArtifactKindModelConfig, contract.ArtifactKindTokenizer, contract.ArtifactKindChatTemplate, contract.ArtifactKindModelFile}

// RunConfigModelID is the run configuration's model_id (qualrun run --model-id, which overrides
// the launch recipe's model id), "" when it has none.
func RunConfigModelID(s *load.Snapshot) string {
	for _, a := range ArtifactsOfKind(s.RC, contract.ArtifactKindConfigFile) {
		f := s.Files[a.Path]
		if f == nil || !f.Present || !load.IsRunConfig(f) || len(f.Violations) > 0 {
			continue
		}
		if m, ok := jsonstrict.Parse(f.Raw); ok == nil {
			if doc, _ := m.(map[string]any); doc != nil {
				id, _ := doc["model_id"].(string)
				return id
			}
		}
	}
	return ""
}

// checkRunConfig: the campaign's effective-run-config.json says what the receipt says (workload
// id, path and variant, variables, seed, qualrun's argv and version) and carries the variant's
// effective configuration; a --model-dir bound some model file; the receipt's environment names
// the qualrun version its qualification does. On 4822f1d it was bound by digest only: its
// variant, its max_tokens or qualrun's argv could be edited and re-bound (its version, model_dir
// and model_id on 38f126b).
func checkRunConfig(s *load.Snapshot, c *finding.Collector, v *contract.Variant) {
	rc := s.RC
	if got, ok := rc.Environment.Runtime["qualrun"]; ok && got != rc.Qualification.Qualrun.Version { // not a contract value: the runtime map's key
		c.Add(s.Receipt.Path, "/environment/runtime/qualrun", reason.ErrConfigMismatch, "the environment names qualrun %s, the qualification was run by qualrun %s", got, rc.Qualification.Qualrun.Version)
	}
	for _, a := range ArtifactsOfKind(rc, contract.ArtifactKindConfigFile) {
		f := s.Files[a.Path]
		if f == nil || !f.Present || !load.IsRunConfig(f) || len(f.Violations) > 0 {
			continue
		}
		doc, err := jsonstrict.Parse(f.Raw)
		m, ok := doc.(map[string]any)
		if err != nil || !ok {
			continue
		}
		wl, _ := m["workload"].(map[string]any) // not a contract value: the run config's member name
		qr, _ := m["qualrun"].(map[string]any)
		want := []struct {
			ptr  string
			got  any
			want any
		}{
			{"/workload/id", wl["id"], rc.Workload.ID},
			{"/workload/path", wl["path"], rc.Workload.Path},
			{"/workload/variant", wl["variant"], rc.Workload.Variant},
			{"/variables", m["variables"], rc.Workload.Variables},
			{"/seed", m["seed"], rc.Workload.Seed},
			{"/qualrun/command", qr["command"], rc.Qualification.Command}, // not a contract value: the run config's member name
			{"/qualrun/version", qr["version"], rc.Qualification.Qualrun.Version},
		}
		if v != nil {
			want = append(want, struct {
				ptr  string
				got  any
				want any
			}{"/effective_config", m["effective_config"], map[string]any(v.EffectiveConfig)})
		}
		for _, w := range want {
			if !finding.CanonicalEqual(w.got, w.want) {
				c.Add(a.Path, w.ptr, reason.ErrConfigMismatch, "the effective run configuration's %s differs from the receipt's (or the variant's)", strings.TrimPrefix(w.ptr, "/"))
			}
		}
		// --model-dir binds every file of the directory (it holds at least one).
		if dir, _ := m["model_dir"].(string); dir != "" && len(ArtifactsOfKind(rc, modelDirKinds...)) == 0 {
			c.Add(a.Path, "/model_dir", reason.ErrConfigMismatch, "the campaign ran with --model-dir %s, and the receipt binds no model file", dir)
		}
	}
}
