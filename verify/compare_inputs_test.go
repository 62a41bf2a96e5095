package verify

import (
	"slices"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// TestCompareInputKindsCoverEveryBoundInput: every artifact kind the contract does not call
// evidence is compared, the driver's inputs included; a receipt pair that binds different driver
// scripts is not like for like.
func TestCompareInputKindsCoverEveryBoundInput(t *testing.T) {
	for _, k := range contract.ArtifactKindValues() {
		if !contract.Kinds[k].Evidence && !slices.Contains(inputKinds, k) {
			t.Errorf("bound-input kind %s is not compared", k)
		}
	}
	snap := func(id, digest string) *load.Snapshot {
		return &load.Snapshot{RC: &contract.ReceiptDoc{ReceiptID: id, Artifacts: []contract.Artifact{
			{Kind: contract.ArtifactKindDriverScript, Path: "drivers/next_token.py", Digest: digest, Bytes: 10}}}}
	}
	x := &comparer{cmp: &Comparison{}, b: snap("b", "sha256:aa"), c: snap("c", "sha256:bb")}
	x.artifacts(SameEnvironmentPerformance)
	if len(x.cmp.Rejected) != 1 || x.cmp.Rejected[0].Path != "artifacts.driver_script" {
		t.Fatalf("different driver scripts: rejected %+v", x.cmp.Rejected)
	}
}
