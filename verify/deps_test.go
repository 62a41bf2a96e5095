package verify_test

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection keeps the workspace graph one-way: schemas <- verify <- tools.
func TestDependencyDirection(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/qualkit/qualkit/runner", "github.com/qualkit/qualkit/attest", "github.com/qualkit/qualkit/tools", "net/http", "os/exec", "cuelang.org/go")
}
