package runner_test

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection keeps the workspace graph one-way: schemas <- runner <- tools.
func TestDependencyDirection(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/qualkit/qualkit/attest", "github.com/qualkit/qualkit/verify", "github.com/qualkit/qualkit/tools", "cuelang.org/go")
}
