package verify_test

import (
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/depcheck"
)

// TestDependencyDirection keeps the workspace graph one-way (schemas <- verify <- tools) and the
// verifier's closure small enough for an auditor to read: no runner, attest or tools; no network
// client, no process execution, no cue; only the verification side of sigstore (no signing
// wrappers, KMS, TUF, Rekor, Fulcio or sigstore-go). Every package outside the standard library
// must be on the allow-list below, so a new dependency is a reviewed change of this test.
func TestDependencyDirection(t *testing.T) {
	deps := depcheck.Forbid(t, ".",
		"github.com/qualkit/qualkit/runner", "github.com/qualkit/qualkit/attest", "github.com/qualkit/qualkit/tools",
		"net/http", "os/exec", "cuelang.org/go",
		"github.com/sigstore/sigstore-go", "github.com/sigstore/rekor", "github.com/sigstore/cosign",
		"github.com/sigstore/sigstore/pkg/signature/kms", "github.com/sigstore/sigstore/pkg/signature/dsse",
		"github.com/sigstore/sigstore/pkg/tuf", "github.com/sigstore/sigstore/pkg/oauthflow", "github.com/sigstore/sigstore/pkg/fulcioroots",
		"github.com/secure-systems-lab/go-securesystemslib/signerverifier", "github.com/theupdateframework",
		"github.com/in-toto", "google.golang.org/grpc")
	allowed := []string{
		"github.com/qualkit/qualkit/verify",
		"github.com/qualkit/qualkit/schemas",
		"github.com/santhosh-tekuri/jsonschema/v6", // schemas: JSON Schema validation
		"golang.org/x/text",                        // schemas: validation messages
		"github.com/opencontainers/go-digest",      // sha256 digests
		// sigstore's verification side: verifiers, PEM public keys, and what they import.
		"github.com/sigstore/sigstore/pkg/signature",
		"github.com/sigstore/sigstore/pkg/cryptoutils",
		"github.com/sigstore/protobuf-specs/gen/pb-go/common/v1",
		"github.com/secure-systems-lab/go-securesystemslib/dsse", // the DSSE pre-authentication encoding
		"github.com/secure-systems-lab/go-securesystemslib/encrypted",
		"github.com/google/go-containerregistry/pkg/name",
		"github.com/youmark/pkcs8",
		"golang.org/x/crypto",
		"golang.org/x/sys",
		"golang.org/x/term",
		"google.golang.org/protobuf",
		"google.golang.org/genproto/googleapis/api",
	}
	for _, d := range deps {
		if first, _, _ := strings.Cut(d, "/"); !strings.Contains(first, ".") {
			continue // the standard library (and its vendored packages)
		}
		ok := false
		for _, a := range allowed {
			ok = ok || d == a || strings.HasPrefix(d, a+"/")
		}
		if !ok {
			t.Errorf("verify depends on %s, which is not on the allow-list: review it and add it here", d)
		}
	}
}
