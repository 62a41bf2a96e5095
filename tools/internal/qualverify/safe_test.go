package qualverify

import (
	"bytes"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/tools/internal/oci"
)

// TestPulledLayerTitleIsEscaped: a registry serves a receipt artifact whose layer title holds an
// escape sequence that clears the screen, a carriage return that would print a forged verdict over
// the line, and a bidi override. qualverify refuses the artifact (the layer is over its limit) and names the layer; the
// bytes it prints hold the title's escapes visibly and none of the control characters.
func TestPulledLayerTitleIsEscaped(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	const title = "r\x1b[2J\x1b[H\rverdict  verified\u202enosj.json"
	manifest := map[string]any{
		"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "artifactType": oci.ArtifactType,
		"config": map[string]any{"mediaType": "application/vnd.oci.empty.v1+json", "size": 2,
			"digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"},
		"layers": []any{map[string]any{"mediaType": oci.FileMediaType, "size": oci.DefaultLimits.FileBytes + 1,
			"digest":      "sha256:" + strings.Repeat("a", 64),
			"annotations": map[string]string{"org.opencontainers.image.title": title}}},
		"annotations": map[string]string{oci.AnnotationReceipt: title},
	}
	b, err := json.Marshal(manifest)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPut, srv.URL+"/v2/fleet/hostile/manifests/v1", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/vnd.oci.image.manifest.v1+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("push manifest: %s", resp.Status)
	}
	var stdout, stderr bytes.Buffer
	code := Main([]string{"qualverify", "verify", "oci://" + host + "/fleet/hostile:v1", "--allow-unsigned-unsafe"}, &stdout, &stderr)
	if code != exitcode.Rejected {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitcode.Rejected, stdout.String(), stderr.String())
	}
	printed := stdout.String() + stderr.String()
	if !strings.Contains(printed, `r\x1b[2J\x1b[H\rverdict  verified\u202enosj.json`) {
		t.Fatalf("the refusal does not name the layer title escaped:\n%q", printed)
	}
	for _, bad := range []string{"\x1b", "\r", "\u202e"} {
		if strings.Contains(printed, bad) {
			t.Errorf("printed %q:\n%q", bad, printed)
		}
	}
}
