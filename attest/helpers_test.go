package attest_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/attest"
)

// receiptRel is where the fixture campaign's receipt lies under its root.
const receiptRel = "qualification/receipts/cpu/ci-runner-01/run.json"

// campaign is a repository root holding a receipt and every file it binds.
type campaign struct {
	root    string
	receipt map[string]any // the receipt as written
}

// newCampaign lays out testdata/receipt.json (a valid serving receipt) under a temporary root:
// every artifact with a relative path gets a file of its own content, and the receipt's digests
// and sizes (artifacts, case_result, lifecycle) are rewritten to match. edit, when set, changes
// the receipt before it is written.
func newCampaign(t *testing.T, edit func(rc map[string]any)) *campaign {
	t.Helper()
	root := t.TempDir()
	rc := readFixture(t)
	digests := map[string]string{}
	for _, a := range rc["artifacts"].([]any) {
		a := a.(map[string]any)
		p := a["path"].(string)
		if filepath.IsAbs(p) {
			continue
		}
		content := []byte(fmt.Sprintf("%s %s\n", a["kind"], p))
		writeFile(t, filepath.Join(root, p), content)
		d := sha256.Sum256(content)
		a["digest"] = "sha256:" + hex.EncodeToString(d[:])
		a["bytes"] = json.Number(fmt.Sprint(len(content)))
		digests[p] = a["digest"].(string)
	}
	for _, r := range rc["results"].([]any) {
		if cr, ok := r.(map[string]any)["case_result"].(map[string]any); ok {
			cr["digest"] = digests[cr["path"].(string)]
		}
	}
	if lc, ok := rc["lifecycle"].(map[string]any); ok {
		lc["digest"] = digests[lc["path"].(string)]
	}
	if edit != nil {
		edit(rc)
	}
	writeFile(t, filepath.Join(root, receiptRel), marshal(t, rc))
	return &campaign{root: root, receipt: rc}
}

func readFixture(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("testdata/receipt.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var rc map[string]any
	if err := dec.Decode(&rc); err != nil {
		t.Fatal(err)
	}
	return rc
}

func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sha256File is the hex sha256 of a file, computed independently of the package under test.
func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(b)
	return hex.EncodeToString(d[:])
}

// artifactsOfKind lists the receipt's artifact paths whose kind is in kinds, in receipt order.
func (c *campaign) artifactsOfKind(kinds ...string) []string {
	var out []string
	for _, a := range c.receipt["artifacts"].([]any) {
		a := a.(map[string]any)
		for _, k := range kinds {
			if a["kind"] == k {
				out = append(out, a["path"].(string))
			}
		}
	}
	return out
}

// newKey writes a key pair under dir (encrypted when password is not nil) and loads its signer.
func newKey(t *testing.T, dir string, password []byte) (attest.Signer, string) {
	t.Helper()
	prefix := filepath.Join(dir, "qual")
	if err := attest.GenerateKeyPair(prefix, password); err != nil {
		t.Fatal(err)
	}
	s, err := attest.LoadSigner(prefix+".key", func() ([]byte, error) { return password, nil })
	if err != nil {
		t.Fatal(err)
	}
	return s, prefix
}

// sameStrings reports whether a and b are equal.
func sameStrings(a, b []string) bool {
	return strings.Join(a, "\x00") == strings.Join(b, "\x00") && len(a) == len(b)
}

func decodeB64(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

func encodeB64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
