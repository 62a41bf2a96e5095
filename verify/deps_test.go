package verify_test

import (
	"os/exec"
	"slices"
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

// verifyLayers names, for every package of the module (relative to the module root), the
// packages of the module it may import directly: verify's folders are layered one way (see "Where
// things live" in docs/verification.md). A new package is a reviewed change of this table.
var verifyLayers = map[string][]string{
	"internal/gitobj":         {}, // the git object reader imports nothing of verify
	"internal/reason":         {},
	"internal/limits":         {"internal/gitobj"},
	"internal/policy":         {"internal/limits"},
	"internal/record":         {"internal/limits", "internal/policy", "internal/reason"},
	"internal/finding":        {"internal/reason"},
	"internal/load":           {"internal/gitobj", "internal/limits", "internal/policy", "internal/reason", "internal/record"},
	"internal/check/rowcheck": {"internal/finding", "internal/load", "internal/policy", "internal/reason", "internal/record"},
	"internal/check/driver":   {"internal/finding", "internal/load", "internal/reason"},
	"internal/check":          {"internal/check/driver", "internal/check/rowcheck", "internal/finding", "internal/gitobj", "internal/limits", "internal/load", "internal/policy", "internal/reason", "internal/record"},
	"internal/compare":        {"internal/check", "internal/check/rowcheck", "internal/finding", "internal/load", "internal/policy", "internal/reason", "internal/record"},
	"internal/fleet":          {"internal/finding", "internal/limits", "internal/load", "internal/policy"},
	".": {"internal/check", "internal/check/driver", "internal/check/rowcheck", "internal/compare", "internal/finding", "internal/fleet", "internal/gitobj",
		"internal/limits", "internal/load", "internal/policy", "internal/reason", "internal/record"},
	"report/internal/format":    {},
	"report/internal/figure":    {"report/internal/format"},
	"report/internal/fleetpage": {".", "report/internal/format"},
	"report/internal/textout":   {},
	"report":                    {".", "report/internal/figure", "report/internal/fleetpage", "report/internal/format", "report/internal/textout"},
}

// TestInternalLayering: each package of the verify module imports only the packages of the module
// its layer allows (verifyLayers), so a check cannot reach up into compare or fleet and the git
// object reader stays a leaf.
func TestInternalLayering(t *testing.T) {
	const module = "github.com/qualkit/qualkit/verify"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg, _ := rel(fields[0])
		allowed, known := verifyLayers[pkg]
		if !known {
			t.Errorf("package %s is not in verifyLayers: add it with the packages it may import", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if r, ok := rel(imp); ok && !slices.Contains(allowed, r) {
				t.Errorf("%s imports %s, which its layer does not allow (verifyLayers)", pkg, r)
			}
		}
	}
}
