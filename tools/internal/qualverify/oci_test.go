package qualverify

import (
	"bytes"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/qualrun"
)

// TestVerifyBatchReportFromRegistry: qualrun publish pushes the frozen receipt to a real
// registry on 127.0.0.1:0; qualverify verify (by digest and by tag), batch and report take the
// oci:// reference, pull into a temporary tree that is gone afterwards, and verify from there.
func TestVerifyBatchReportFromRegistry(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.WithReferrersSupport(true), registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	var stdout, stderr bytes.Buffer
	if code := qualrun.Main([]string{"qualrun", "publish", filepath.Join(frozen, ".qualification/receipts/a-1.json"), "--to", "oci://" + host + "/fleet/a:v1"}, &stdout, &stderr); code != 0 {
		t.Fatalf("publish: exit %d: %s%s", code, stdout.String(), stderr.String())
	}
	line, _, _ := strings.Cut(stdout.String(), "\n")
	byDigest := strings.Fields(line)[1]
	if !strings.Contains(byDigest, "@sha256:") || !strings.Contains(stdout.String(), "bundle referrer sha256:") {
		t.Fatalf("publish printed %q", stdout.String())
	}
	tmpBefore := tempPulls(t)
	key := filepath.Join(frozen, "frozen.pub")
	out := filepath.Join(t.TempDir(), "r.html")
	for _, args := range [][]string{
		{"verify", byDigest, "--key", key},
		{"verify", "oci://" + host + "/fleet/a:v1", "--key", key},
		{"batch", "oci://" + host + "/fleet/a:v1", "--key", key},
		{"report", byDigest, "--key", key, "-o", out},
	} {
		stdout.Reset()
		stderr.Reset()
		if code := Main(append([]string{"qualverify"}, args...), &stdout, &stderr); code != exitcode.OK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, stdout.String(), stderr.String())
		}
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Fatalf("report: %v", err)
	}
	if after := tempPulls(t); after != tmpBefore {
		t.Fatalf("%d pulled trees left in the temporary directory", after-tmpBefore)
	}
	// qualverify fleet takes the reference too: the frozen receipt was not written by a fleet job
	// (its --output names no plan row), so it is bound to no row and named by its reference.
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.json")
	os.WriteFile(plan, []byte(`{"schema": "qualkit.fleet-plan.v1", "id": "oci-fleet", "description": "One row.",
  "repository": "/tmp/fz.git", "commit": "e8aa37b0b94b64a7d082dcb734da7e049953db6c", "signing": {"key_file": "/etc/qualkit/host.key"},
  "receipts": {"directory": "/shared/receipts"}, "rows": [{"index": 0, "workload": "workloads/frozen.json", "variant": "cpu-a", "repetition": 1}]}`), 0o644)
	if code := qualrun.Main([]string{"qualrun", "keygen", "--unencrypted", "--output-prefix", filepath.Join(dir, "sign")}, &stdout, &stderr); code != 0 {
		t.Fatalf("keygen: %s", stderr.String())
	}
	stdout.Reset()
	manifest := filepath.Join(dir, "fleet.json")
	code := Main([]string{"qualverify", "fleet", plan, byDigest, "--key", key, "--sign-key", filepath.Join(dir, "sign.key"), "--output", manifest}, &stdout, &stderr)
	if code != exitcode.Rejected || !strings.Contains(stdout.String(), "1 missing; 1 receipts not belonging") {
		t.Fatalf("fleet over oci: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	if b, _ := os.ReadFile(manifest); !strings.Contains(string(b), `"path": "`+byDigest+`"`) {
		t.Fatalf("the manifest does not name the reference:\n%s", b)
	}
	// A digest nothing was pushed under: the registry answers, nothing to verify.
	missing := "oci://" + host + "/fleet/a@sha256:" + strings.Repeat("0", 64)
	if code := Main([]string{"qualverify", "verify", missing, "--key", key}, &stdout, &stderr); code == exitcode.OK {
		t.Fatal("a missing artifact verified")
	}
	if code := Main([]string{"qualverify", "verify", "oci://" + host + "/Bad", "--key", key}, &stdout, &stderr); code != exitcode.Usage {
		t.Fatalf("bad reference: exit %d, want %d", code, exitcode.Usage)
	}
}

func tempPulls(t *testing.T) int {
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "qualverify-oci-*"))
	if err != nil {
		t.Fatal(err)
	}
	return len(m)
}
