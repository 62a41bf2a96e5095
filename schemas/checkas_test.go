package schemas

import (
	"os"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
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
