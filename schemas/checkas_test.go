package schemas

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

func TestCheckAs(t *testing.T) {
	workload, err := os.ReadFile("testdata/workload.v1/valid/command-example.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckAs(workload, "w.json", contract.Workload); err != nil {
		t.Fatalf("a valid workload as a workload: %v", err)
	}
	err = CheckAs(workload, "w.json", contract.LaunchRecipe)
	if err == nil || !strings.Contains(err.Error(), "w.json is a qualkit.workload.v1, not a qualkit.launch-recipe.v1") {
		t.Fatalf("a workload as a launch recipe: %v", err)
	}
	bad, err := os.ReadFile("testdata/launch-recipe.v1/invalid/base-url-https.json")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckAs(bad, "r.json", contract.LaunchRecipe)
	if err == nil || !strings.HasPrefix(err.Error(), "r.json: ") {
		t.Fatalf("an invalid recipe: %v", err)
	}
	if err := CheckAs([]byte(`{"schema": 1,}`), "x.json", contract.Workload); err == nil || !strings.HasPrefix(err.Error(), "x.json: ") {
		t.Fatalf("malformed JSON: %v", err)
	}
}

// TestDecode: Decode validates and decodes in one call; the typed value equals what
// jsonstrict.DecodeInto gives, and every refusal CheckAs makes is Decode's too.
func TestDecode(t *testing.T) {
	raw, err := os.ReadFile("testdata/receipt.v1/valid/environment-devices-gpu-host.json")
	if err != nil {
		t.Fatal(err)
	}
	rc, err := Decode[contract.ReceiptDoc](raw, "r.json", contract.Receipt)
	if err != nil {
		t.Fatalf("a valid receipt: %v", err)
	}
	var want contract.ReceiptDoc
	if err := jsonstrict.DecodeInto(raw, &want); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*rc, want) {
		t.Fatalf("Decode differs from DecodeInto:\n%+v\n%+v", *rc, want)
	}
	if len(rc.Environment.Devices) == 0 {
		t.Fatal("decoded receipt lost its devices")
	}
	if _, err := Decode[contract.WorkloadDoc](raw, "r.json", contract.Workload); err == nil || !strings.Contains(err.Error(), "r.json is a qualkit.receipt.v1, not a qualkit.workload.v1") {
		t.Fatalf("a receipt as a workload: %v", err)
	}
	bad, err := os.ReadFile("testdata/launch-recipe.v1/invalid/base-url-https.json")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := Decode[contract.LaunchRecipeDoc](bad, "l.json", contract.LaunchRecipe); err == nil || d != nil || !strings.HasPrefix(err.Error(), "l.json: ") {
		t.Fatalf("an invalid recipe: %v %v", d, err)
	}
	out, err := CheckDocument(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeChecked[contract.LaunchRecipeDoc](bad, out); err == nil {
		t.Fatal("DecodeChecked accepted an outcome with violations")
	}
}
