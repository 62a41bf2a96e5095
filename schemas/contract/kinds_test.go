package contract_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// The six hand tables the generated kind table replaces, written out as they read today
// (attest/statement.go subjectKinds and runOutputKinds, verify/attest.go SubjectKinds and
// predicateExcludedKinds, verify/load.go contractOfKind and isEvidenceKind).
var (
	attestSubjectKinds   = []string{"case_result", "request_records", "lifecycle_record", "server_log", "driver_result", "driver_worker_output", "driver_log", "device_telemetry", "server_metrics"}
	attestRunOutputKinds = []string{"case_result", "request_records", "lifecycle_record", "server_log", "case_stdout", "case_stderr", "driver_result", "driver_worker_output", "driver_log", "device_telemetry", "server_metrics"}
	verifySubjectKinds   = []string{"case_result", "request_records", "lifecycle_record", "server_log", "driver_result", "driver_worker_output", "driver_log", "device_telemetry", "server_metrics"}
	verifyPredicateExcl  = []string{"case_result", "request_records", "lifecycle_record", "server_log", "case_stdout", "case_stderr", "driver_result", "driver_worker_output", "driver_log", "device_telemetry", "server_metrics"}
	verifyContractOfKind = map[string]string{
		"case_result":          "case-result.v1",
		"lifecycle_record":     "lifecycle-record.v1",
		"workload":             "workload.v1",
		"launch_recipe":        "launch-recipe.v1",
		"runtime_manifest":     "runtime-manifest.v1",
		"request_records":      "request-record.v1",
		"driver_request":       "driver-request.v1",
		"driver_worker_output": "driver-worker-output.v1",
		"driver_result":        "driver-result", // verify's role: any version-2 driver result
	}
	verifyIsEvidenceKind = []string{"case_result", "request_records", "lifecycle_record", "server_log", "case_stdout", "case_stderr", "driver_result", "driver_worker_output", "driver_log", "device_telemetry", "server_metrics"}
)

func strs(ks []contract.ArtifactKind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

// TestKindTableMatchesHandTables: the generated table answers what the six hand tables answer.
func TestKindTableMatchesHandTables(t *testing.T) {
	if got := strs(contract.SubjectKinds); !slices.Equal(got, verifySubjectKinds) || !slices.Equal(got, attestSubjectKinds) {
		t.Errorf("SubjectKinds = %v, want (in this order) %v", got, verifySubjectKinds)
	}
	if got := strs(contract.EvidenceKinds); !slices.Equal(got, verifyIsEvidenceKind) {
		t.Errorf("EvidenceKinds = %v, want %v", got, verifyIsEvidenceKind)
	}
	var subjects, runOutputs []string
	contracts := map[string]string{}
	for _, k := range contract.ArtifactKindValues() {
		info, ok := contract.KindOf(k)
		if !ok {
			t.Fatalf("KindOf(%q): not in the table", k)
		}
		if info.Subject {
			subjects = append(subjects, string(k))
		}
		if info.Evidence {
			runOutputs = append(runOutputs, string(k))
		}
		switch {
		case info.AnyDriverResult && info.Contract != "":
			t.Errorf("%s: both a contract and any driver result", k)
		case info.AnyDriverResult:
			contracts[string(k)] = "driver-result"
		case info.Contract != "":
			contracts[string(k)] = info.Contract
		}
	}
	if !slices.Equal(subjects, attestSubjectKinds) {
		t.Errorf("kinds with Subject = %v, want %v", subjects, attestSubjectKinds)
	}
	for name, want := range map[string][]string{"attest runOutputKinds": attestRunOutputKinds, "verify predicateExcludedKinds": verifyPredicateExcl, "verify isEvidenceKind": verifyIsEvidenceKind} {
		if !sameSet(runOutputs, want) {
			t.Errorf("kinds with Evidence = %v, want %s %v", runOutputs, name, want)
		}
	}
	if !reflect.DeepEqual(contracts, verifyContractOfKind) {
		t.Errorf("contracts by kind = %v, want %v", contracts, verifyContractOfKind)
	}
	if _, ok := contract.KindOf("no_such_kind"); ok {
		t.Error(`KindOf("no_such_kind") is ok`)
	}
	if len(contract.Kinds) != len(contract.ArtifactKindValues()) {
		t.Errorf("the kind table has %d kinds, the enum %d", len(contract.Kinds), len(contract.ArtifactKindValues()))
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestContractTable: the generated names and ids agree with each other and with the file layout.
func TestContractTable(t *testing.T) {
	if len(contract.Contracts) != 21 {
		t.Errorf("%d contracts, want 21", len(contract.Contracts))
	}
	for i, c := range contract.Contracts {
		if c.SchemaID != "qualkit."+c.Name || c.File != c.Name+".schema.json" || c.URL != "https://qualkit.dev/schemas/"+c.File {
			t.Errorf("%+v: name, id, URL and file disagree", c)
		}
		if i > 0 && contract.Contracts[i-1].Name >= c.Name {
			t.Errorf("Contracts not sorted by name at %s", c.Name)
		}
	}
	if contract.Receipt != "receipt.v1" || contract.ReceiptSchema != "qualkit.receipt.v1" || contract.RequestRecord != "request-record.v1" {
		t.Error("contract name constants do not say what schemas/contracts.go says")
	}
	if contract.SourceTreeHashFormat != "qualkit-source-tree-v1" {
		t.Errorf("SourceTreeHashFormat = %q", contract.SourceTreeHashFormat)
	}
}

// TestEnums: the constants and Valid agree with the contract's values.
func TestEnums(t *testing.T) {
	if !slices.Equal(contract.StatusValues(), []contract.Status{"passed", "failed", "skipped"}) {
		t.Errorf("StatusValues = %v", contract.StatusValues())
	}
	if !contract.AggregationP99_9.Valid() || contract.AggregationP99_9 != "p99.9" || contract.Aggregation("p99.99").Valid() {
		t.Error("Aggregation constants or Valid are wrong")
	}
	if contract.QualificationVerdictInterrupted != "interrupted" || contract.CaseKindDriver != "driver" || contract.BackendCUDA != "cuda" {
		t.Error("enum constants do not carry their contract values")
	}
}
