package attest_test

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection keeps the workspace graph one-way: schemas <- attest <- tools. Since
// attest links in-toto-golang (its in_toto package only: links, layouts, canonical JSON), the
// parts of its module graph that would reach the network or a CLI framework stay out: no
// net/http, gRPC, SPIFFE or cobra (docs/dependencies.md).
func TestDependencyDirection(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/qualkit/qualkit/runner", "github.com/qualkit/qualkit/verify", "github.com/qualkit/qualkit/tools", "cuelang.org/go",
		"net/http", "google.golang.org/grpc", "github.com/spiffe", "github.com/spf13/cobra", "github.com/in-toto/in-toto-golang/cmd")
}
