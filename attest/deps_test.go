package attest_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection keeps the workspace graph one-way: schemas <- attest <- tools. Since
// attest links in-toto-golang (its in_toto package only: links, layouts, canonical JSON), the
// parts of its module graph that would reach the network or a CLI framework stay out of the
// attest package itself: no net/http, gRPC, SPIFFE or cobra (docs/dependencies.md). Keyless
// signing (attest/keyless) talks to Fulcio, Rekor and a timestamp authority, so net/http (and
// sigstore-go, which brings cobra through github.com/sassoftware/relic's x509tools) is allowed
// there and in its loopback stand-ins, and the Vault client in attest/kms; never in attest.
func TestDependencyDirection(t *testing.T) {
	depcheck.Forbid(t, ".", "github.com/qualkit/qualkit/runner", "github.com/qualkit/qualkit/verify", "github.com/qualkit/qualkit/tools", "cuelang.org/go",
		"github.com/in-toto/in-toto-golang/cmd")
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	for _, d := range strings.Fields(string(out)) {
		for _, f := range []string{"net/http", "google.golang.org/grpc", "github.com/spiffe", "github.com/sigstore/sigstore-go", "github.com/sigstore/rekor", "github.com/spf13/cobra"} {
			if d == f || strings.HasPrefix(d, f+"/") {
				t.Errorf("package attest depends on %s (forbidden: %s); network clients belong in attest/keyless", d, f)
			}
		}
	}
}
