package verify

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// TestRowAndResultIdentity: the identity of results and rows is recomputed from the workload and
// the runner's naming, and durations, closed-loop offered rates and telemetry intervals are
// compared with what bounds them. Each change verified on 4822f1d.
func TestRowAndResultIdentity(t *testing.T) {
	serving := func(s *load.Snapshot) *contract.CaseResultDoc { return s.CaseResults[s.RC.Results[0].CaseResult.Path] }
	rate := 3.0
	runCheckTable(t, check.Comparability, []checkCase{
		{"results in the runner's order", func(s *load.Snapshot) {}, nil, ""},
		{"result relabelled to repetition 7", func(s *load.Snapshot) { s.RC.Results[1].Repetition = 7 }, ErrWorkloadMismatch, ""},
		{"results swapped", func(s *load.Snapshot) { s.RC.Results[0], s.RC.Results[1] = s.RC.Results[1], s.RC.Results[0] }, ErrWorkloadMismatch, ""},
		{"records of another row", func(s *load.Snapshot) {
			rows := serving(s).Rows
			rows[0].Records, rows[1].Records = rows[1].Records, rows[0].Records
		}, ErrUnlikeRows, ""},
		{"closed-loop row with an offered rate", func(s *load.Snapshot) { serving(s).Rows[0].Fidelity.OfferedRate = &rate }, ErrUnlikeRows, ""},
		{"telemetry the case does not declare", func(s *load.Snapshot) {
			serving(s).Rows[0].DeviceTelemetry = &contract.RowDeviceTelemetry{IntervalMs: 100}
		}, ErrUnlikeRows, ""},
		{"run config names another variant", func(s *load.Snapshot) {
			f := s.Files[check.ArtifactsOfKind(s.RC, "config_file")[0].Path]
			f.Raw = bytes.Replace(f.Raw, []byte(`"variant": "cpu-a"`), []byte(`"variant": "cpu-b"`), 1)
		}, ErrConfigMismatch, ""},
		{"run config with another max_tokens", func(s *load.Snapshot) {
			f := s.Files[check.ArtifactsOfKind(s.RC, "config_file")[0].Path]
			f.Raw = bytes.Replace(f.Raw, []byte(`"max_tokens": 4`), []byte(`"max_tokens": 5`), 1)
		}, ErrConfigMismatch, ""},
		{"run config with another qualrun argv", func(s *load.Snapshot) { s.RC.Qualification.Command = s.RC.Qualification.Command[1:] }, ErrConfigMismatch, ""},
		{"telemetry at another interval", func(s *load.Snapshot) {
			s.Case("chat-stream").DeviceTelemetry = &contract.DeviceTelemetry{IntervalMs: 100}
			serving(s).Rows[0].DeviceTelemetry = &contract.RowDeviceTelemetry{IntervalMs: 250}
		}, ErrUnlikeRows, ""},
	})
	runCheckTable(t, check.Tolerances, []checkCase{
		{"result duration not the case's", func(s *load.Snapshot) { s.RC.Results[1].DurationSeconds *= 2 }, ErrResultMismatch, ""},
		{"case shorter than its rows", func(s *load.Snapshot) {
			serving(s).DurationSeconds = 0.001
			s.RC.Results[0].DurationSeconds = 0.001
		}, ErrRowMismatch, ""},
		{"receipt metric with another formula", func(s *load.Snapshot) { s.RC.Metrics[1].Formula += "x" }, ErrMetricMismatch, ""},
		{"cases longer than the campaign", func(s *load.Snapshot) { s.RC.Qualification.DurationSeconds = 0.01 }, ErrResultMismatch, ""},
	})
}

// TestRepetitionRelabelResealed: the case end to end, re-bound and re-signed.
func TestRepetitionRelabelResealed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	root := copyTree(t, frozenRoot)
	k := newTestKey(t)
	editJSON(t, filepath.Join(root, receipt), func(rc map[string]any) {
		rc["results"].([]any)[0].(map[string]any)["repetition"] = json.Number("7")
	})
	reseal(t, root, receipt, k)
	res := verifyAt(t, root, receipt, k.policy())
	if !hasFinding(res, CheckComparability, ErrWorkloadMismatch, "result 0 is case chat-stream repetition 7") {
		t.Fatalf("not rejected for the repetition:%s", findingsOf(res))
	}
}
