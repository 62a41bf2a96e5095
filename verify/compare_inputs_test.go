package verify

import (
	"slices"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/compare"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// TestCompareInputKindsCoverEveryBoundInput: every artifact kind the contract does not call
// evidence is compared, the driver's inputs included; a receipt pair that binds different driver
// scripts is not like for like.
func TestCompareInputKindsCoverEveryBoundInput(t *testing.T) {
	for _, k := range contract.ArtifactKindValues() {
		if !contract.Kinds[k].Evidence && !slices.Contains(compare.InputKinds, k) {
			t.Errorf("bound-input kind %s is not compared", k)
		}
	}
	snap := func(id, digest string) *load.Snapshot {
		return &load.Snapshot{RC: &contract.ReceiptDoc{ReceiptID: id, Artifacts: []contract.Artifact{
			{Kind: contract.ArtifactKindDriverScript, Path: "drivers/next_token.py", Digest: digest, Bytes: 10}}}}
	}
	x := &compare.Comparer{Cmp: &Comparison{}, B: snap("b", "sha256:aa"), C: snap("c", "sha256:bb")}
	x.Artifacts(SameEnvironmentPerformance)
	if len(x.Cmp.Rejected) != 1 || x.Cmp.Rejected[0].Path != "artifacts.driver_script" {
		t.Fatalf("different driver scripts: rejected %+v", x.Cmp.Rejected)
	}
}
