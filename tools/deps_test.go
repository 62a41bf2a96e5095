package tools_test

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection: the CLIs never link cue (schemagen, its own module, does).
func TestDependencyDirection(t *testing.T) {
	depcheck.Forbid(t, ".", "cuelang.org/go")
}
