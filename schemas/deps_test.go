package schemas_test

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection: schemas is the root of the workspace graph; it imports no other qualkit
// module and never links cue.
func TestDependencyDirection(t *testing.T) {
	deps := depcheck.Forbid(t, ".",
		"github.com/qualkit/qualkit/runner", "github.com/qualkit/qualkit/attest",
		"github.com/qualkit/qualkit/verify", "github.com/qualkit/qualkit/tools", "cuelang.org/go")
	if len(deps) == 0 {
		t.Fatal("go list returned no dependencies")
	}
}
