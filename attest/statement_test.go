package attest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"google.golang.org/protobuf/encoding/protojson"
)

var subjectKinds = []string{"case_result", "request_records", "lifecycle_record", "server_log", "driver_result", "driver_worker_output", "driver_log"}

func TestStatementSubjectsAreFilesOnDisk(t *testing.T) {
	c := newCampaign(t, nil)
	st, err := attest.Statement(c.root, receiptRel)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{receiptRel}, c.artifactsOfKind(subjectKinds...)...)
	var got []string
	for _, s := range st.InToto.GetSubject() {
		got = append(got, s.GetName())
		if len(s.GetDigest()) != 1 {
			t.Errorf("subject %s: digests %v, want only sha256", s.GetName(), s.GetDigest())
		}
		if d, disk := s.GetDigest()["sha256"], sha256File(t, filepath.Join(c.root, s.GetName())); d != disk {
			t.Errorf("subject %s: sha256 %s, file on disk %s", s.GetName(), d, disk)
		}
	}
	if !sameStrings(got, want) {
		t.Errorf("subjects\n got %q\nwant %q", got, want)
	}
	if len(want) != 8 { // receipt, case result, 4 request records, lifecycle record, server log
		t.Errorf("fixture has %d subjects, want 8", len(want))
	}
}

func TestStatementPayload(t *testing.T) {
	c := newCampaign(t, nil)
	st, err := attest.Statement(c.root, receiptRel)
	if err != nil {
		t.Fatal(err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, st.Payload); err != nil || !bytes.Equal(compact.Bytes(), st.Payload) {
		t.Errorf("payload is not compact JSON (%v)", err)
	}
	var doc struct {
		Type          string           `json:"_type"`
		PredicateType string           `json:"predicateType"`
		Subject       []map[string]any `json:"subject"`
		Predicate     map[string]json.RawMessage
	}
	dec := json.NewDecoder(bytes.NewReader(st.Payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("payload: %v\n%s", err, st.Payload)
	}
	if doc.Type != "https://in-toto.io/Statement/v1" || doc.PredicateType != attestfmt.PredicateType {
		t.Errorf("_type %q predicateType %q", doc.Type, doc.PredicateType)
	}
	var keys []string
	for k := range doc.Predicate {
		keys = append(keys, k)
	}
	wantKeys := []string{"artifacts", "host_id", "qualrun", "receipt_id", "source", "workload"}
	if !sameStrings(sortedStrings(keys), wantKeys) {
		t.Errorf("predicate keys %q, want %q", sortedStrings(keys), wantKeys)
	}
	// The predicate copies the receipt's objects: compare them as JSON values.
	for key, want := range map[string]any{
		"receipt_id": c.receipt["receipt_id"],
		"source":     c.receipt["source"],
		"workload":   c.receipt["workload"],
		"host_id":    c.receipt["environment"].(map[string]any)["host_id"],
		"qualrun":    c.receipt["qualification"].(map[string]any)["qualrun"],
	} {
		if !sameJSON(t, doc.Predicate[key], want) {
			t.Errorf("predicate %s = %s, want %s", key, doc.Predicate[key], marshal(t, want))
		}
	}
	var inputs []any
	for _, a := range c.receipt["artifacts"].([]any) {
		switch a.(map[string]any)["kind"] {
		case "case_result", "request_records", "lifecycle_record", "server_log", "case_stdout", "case_stderr", "driver_result", "driver_worker_output", "driver_log":
		default:
			inputs = append(inputs, a)
		}
	}
	if len(inputs) != 3 || !sameJSON(t, doc.Predicate["artifacts"], inputs) {
		t.Errorf("predicate artifacts = %s, want the %d bound inputs %s", doc.Predicate["artifacts"], len(inputs), marshal(t, inputs))
	}
	// The in-toto bindings read the payload back and validate it.
	var back ita1.Statement
	if err := protojson.Unmarshal(st.Payload, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Fatal(err)
	}
	if st.Predicate.ReceiptID != c.receipt["receipt_id"] || st.Receipt != receiptRel {
		t.Errorf("Predicate.ReceiptID %q, Receipt %q", st.Predicate.ReceiptID, st.Receipt)
	}
}

func TestStatementCleansReceiptPath(t *testing.T) {
	c := newCampaign(t, nil)
	st, err := attest.Statement(c.root, "./qualification//receipts/cpu/ci-runner-01/run.json")
	if err != nil {
		t.Fatal(err)
	}
	if got := st.InToto.GetSubject()[0].GetName(); got != receiptRel {
		t.Errorf("receipt subject %q, want %q", got, receiptRel)
	}
}

func TestStatementRejects(t *testing.T) {
	firstOfKind := func(c *campaign, kind string) string { return c.artifactsOfKind(kind)[0] }
	for _, tc := range []struct {
		name  string
		edit  func(rc map[string]any)
		after func(t *testing.T, c *campaign) string // returns the receipt path to attest
		want  []error
	}{
		{name: "missing receipt", after: func(t *testing.T, c *campaign) string { return "qualification/receipts/none.json" },
			want: []error{os.ErrNotExist}},
		{name: "receipt schema violation", edit: func(rc map[string]any) { delete(rc, "publishable") },
			want: []error{attest.ErrReceipt}},
		{name: "receipt semantic violation", edit: func(rc map[string]any) {
			rc["qualification"].(map[string]any)["finished_at"] = "2020-01-01T00:00:00Z"
		}, want: []error{attest.ErrReceipt}},
		{name: "receipt not strict JSON", after: func(t *testing.T, c *campaign) string {
			writeFile(t, filepath.Join(c.root, "dup.json"), []byte(`{"schema":"qualkit.receipt.v1","schema":"qualkit.receipt.v1"}`))
			return "dup.json"
		}, want: []error{attest.ErrReceipt}},
		{name: "not a receipt", after: func(t *testing.T, c *campaign) string {
			writeFile(t, filepath.Join(c.root, "recipe.json"), []byte(launchRecipe))
			return "recipe.json"
		}, want: []error{attest.ErrReceipt}},
		{name: "missing subject file", after: func(t *testing.T, c *campaign) string {
			os.Remove(filepath.Join(c.root, firstOfKind(c, "server_log")))
			return receiptRel
		}, want: []error{attest.ErrSubject, os.ErrNotExist}},
		{name: "subject changed after the receipt", after: func(t *testing.T, c *campaign) string {
			writeFile(t, filepath.Join(c.root, firstOfKind(c, "case_result")), []byte("{}\n"))
			return receiptRel
		}, want: []error{attest.ErrSubject}},
		{name: "subject is a symlink", after: func(t *testing.T, c *campaign) string {
			p := filepath.Join(c.root, firstOfKind(c, "lifecycle_record"))
			raw, _ := os.ReadFile(p)
			writeFile(t, p+".real", raw)
			os.Remove(p)
			if err := os.Symlink(filepath.Base(p)+".real", p); err != nil {
				t.Fatal(err)
			}
			return receiptRel
		}, want: []error{attest.ErrSubject, attest.ErrPath}},
		{name: "absolute subject path", edit: func(rc map[string]any) {
			for _, a := range rc["artifacts"].([]any) {
				if a := a.(map[string]any); a["kind"] == "server_log" {
					a["path"] = "/var/log/server.log"
				}
			}
		}, want: []error{attest.ErrSubject}},
		{name: "receipt path with ..", after: func(t *testing.T, c *campaign) string {
			return "qualification/../" + receiptRel
		}, want: []error{attest.ErrPath}},
		{name: "absolute receipt path", after: func(t *testing.T, c *campaign) string {
			return filepath.Join(c.root, receiptRel)
		}, want: []error{attest.ErrPath}},
		{name: "receipt directory is a symlink", after: func(t *testing.T, c *campaign) string {
			if err := os.Symlink(filepath.Join(c.root, "qualification/receipts/cpu"), filepath.Join(c.root, "qualification/receipts/link")); err != nil {
				t.Fatal(err)
			}
			return "qualification/receipts/link/ci-runner-01/run.json"
		}, want: []error{attest.ErrPath}},
		{name: "receipt is a directory", after: func(t *testing.T, c *campaign) string {
			return "qualification/receipts"
		}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCampaign(t, tc.edit)
			rel := receiptRel
			if tc.after != nil {
				rel = tc.after(t, c)
			}
			st, err := attest.Statement(c.root, rel)
			if err == nil {
				t.Fatalf("Statement succeeded: %s", st.Payload)
			}
			t.Log(err)
			for _, w := range tc.want {
				if !errors.Is(err, w) {
					t.Errorf("error %v; want it to wrap %v", err, w)
				}
			}
		})
	}
}

func TestStatementRefusesTooManySubjects(t *testing.T) {
	c := newCampaign(t, func(rc map[string]any) {})
	// 1,024 request record files after the receipt's own 7 evidence subjects and the receipt.
	runDir := filepath.Dir(c.artifactsOfKind("lifecycle_record")[0])
	arts := c.receipt["artifacts"].([]any)
	for i := 0; i < attest.MaxSubjects; i++ {
		rel := fmt.Sprintf("%s/extra/%04d.requests.jsonl", runDir, i)
		writeFile(t, filepath.Join(c.root, rel), nil)
		arts = append(arts, map[string]any{"kind": "request_records", "path": rel,
			"digest": "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "bytes": json.Number("0")})
	}
	c.receipt["artifacts"] = arts
	os.Remove(filepath.Join(c.root, receiptRel))
	writeFile(t, filepath.Join(c.root, receiptRel), marshal(t, c.receipt))
	if _, err := attest.Statement(c.root, receiptRel); !errors.Is(err, attest.ErrSubject) {
		t.Fatalf("error %v, want ErrSubject for more than %d subjects", err, attest.MaxSubjects)
	}
}

// launchRecipe is a valid qualkit document that is not a receipt.
const launchRecipe = `{
  "schema": "qualkit.launch-recipe.v1",
  "id": "sim-attest",
  "command": ["qualsim", "--listen", "127.0.0.1:18650"],
  "working_directory": ".",
  "environment": {},
  "environment_passthrough": [],
  "base_url": "http://127.0.0.1:18650",
  "model_id": "m-attest",
  "readiness": {"path": "/v1/models", "poll_interval_ms": 20, "probe_timeout_ms": 1000},
  "startup_timeout_seconds": 10,
  "shutdown_timeout_seconds": 5,
  "acceptable_exit_codes": [0],
  "isolation": {"pid_limit": null, "cgroup_accounting": "preferred"}
}
`

func sortedStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}

// sameJSON compares a JSON document with a Go value as JSON values (numbers by value).
func sameJSON(t *testing.T, raw json.RawMessage, want any) bool {
	t.Helper()
	var a, b any
	if err := json.Unmarshal(raw, &a); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	if err := json.Unmarshal(marshal(t, want), &b); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(a) == fmt.Sprint(b) && string(marshal(t, a)) == string(marshal(t, b))
}
