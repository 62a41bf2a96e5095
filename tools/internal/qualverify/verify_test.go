package qualverify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// TestExitCodes pins the exit codes of verify, compare and batch: 0 verified (or ok), 1 rejected,
// 2 usage, 3 could not verify.
func TestExitCodes(t *testing.T) {
	f := frozen + "/.qualification/receipts/"
	key := frozen + "/frozen.pub"
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "qualification/receipts/dir.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"verified", []string{"verify", f + "a-1.json", "--key", key}, exitcode.OK},
		{"verified, flags first", []string{"verify", "--key", key, f + "b-1.json"}, exitcode.OK},
		{"usage: a relaxation the policy forbids", []string{"verify", f + "a-1.json", "--key", key, "--allow-unpublished-unsafe", "--policy", writePolicy(t, dir, `{"require_publishable": false, "allow_unsafe": []}`)}, exitcode.Usage},
		{"usage: no key", []string{"verify", f + "a-1.json"}, exitcode.Usage},
		{"usage: two receipts", []string{"verify", f + "a-1.json", f + "a-2.json", "--key", key}, exitcode.Usage},
		{"rejected: a receipt that is not a regular file", []string{"verify", filepath.Join(dir, "qualification/receipts/dir.json"), "--key", key}, exitcode.Rejected},
		{"compare ok", []string{"compare", f + "a-1.json", f + "b-1.json"}, exitcode.OK},
		{"compare not ok", []string{"compare", f + "a-1.json", f + "a-2.json"}, exitcode.Rejected},
		{"compare usage", []string{"compare", f + "a-1.json"}, exitcode.Usage},
		{"batch verified", []string{"batch", frozen, "--key", key}, exitcode.OK},
		{"batch usage", []string{"batch", dir + "/nothing", "--key", key}, exitcode.Usage},
	}
	for _, tc := range cases {
		var out, errOut bytes.Buffer
		got := Main(append([]string{"qualverify"}, tc.args...), &out, &errOut)
		if got != tc.want {
			t.Errorf("%s: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", tc.name, got, tc.want, out.String(), errOut.String())
		}
	}
	// A rejection: the frozen receipt against a key that did not sign it.
	pub := filepath.Join(dir, "wrong.pub")
	if err := os.WriteFile(pub, []byte(wrongKeyPEM), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if got := Main([]string{"qualverify", "verify", f + "a-1.json", "--key", pub}, &out, &errOut); got != exitcode.Rejected || !strings.Contains(out.String(), "bad_signature") {
		t.Errorf("wrong key: exit %d, want %d\n%s%s", got, exitcode.Rejected, out.String(), errOut.String())
	}
}

func writePolicy(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "policy.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// wrongKeyPEM is an ECDSA P-256 public key that signed nothing here.
const wrongKeyPEM = `-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEdw+oA59jkeLAs8f6EgOKs8Q9QuNl
UouMHvCI13hRumBiYV2NWxI0UMvvGNsTeHIwK/QMb5HrzRW26FofmC1txw==
-----END PUBLIC KEY-----
`
