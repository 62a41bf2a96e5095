package qualverify

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestExitCodesOfUnreadableEvidence: evidence that cannot be read safely, and a missing bound
// input, are rejections (exit 1), never usage (2) or internal (3) errors; the unsafe option
// for a missing input verifies (exit 0).
func TestExitCodesOfUnreadableEvidence(t *testing.T) {
	key := frozen + "/frozen.pub"
	copyFrozen := func(t *testing.T) string {
		t.Helper()
		dst := t.TempDir()
		if err := os.CopyFS(dst, os.DirFS(frozen)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	const a1 = ".qualification/receipts/a-1.json"
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		extra  []string
		want   int
	}{
		{"FIFO receipt", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, a1))
			if err := syscall.Mkfifo(filepath.Join(root, a1), 0o600); err != nil {
				t.Skip(err)
			}
		}, nil, exitcode.Rejected},
		{"8 GiB sparse receipt", func(t *testing.T, root string) {
			if err := os.Truncate(filepath.Join(root, a1), 8<<30); err != nil {
				t.Skip(err)
			}
		}, nil, exitcode.Rejected},
		{"symlinked receipt", func(t *testing.T, root string) {
			p := filepath.Join(root, a1)
			if err := os.Rename(p, filepath.Join(root, "a-1.json")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("../../a-1.json", p); err != nil {
				t.Fatal(err)
			}
		}, nil, exitcode.Rejected},
		{"extra file in the run directory", func(t *testing.T, root string) {
			runs, _ := filepath.Glob(filepath.Join(root, ".qualification/runs/20261130t144931051989z-*"))
			if err := os.WriteFile(filepath.Join(runs[0], "extra.json"), []byte("{}"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, nil, exitcode.Rejected},
		{"deleted workload", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "workloads/frozen.json"))
		}, nil, exitcode.Rejected},
		{"deleted workload, unsafe", func(t *testing.T, root string) {
			os.Remove(filepath.Join(root, "workloads/frozen.json"))
		}, []string{"--allow-missing-inputs-unsafe"}, exitcode.OK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyFrozen(t)
			tc.change(t, root)
			var out, errOut bytes.Buffer
			args := append([]string{"qualverify", "verify", filepath.Join(root, a1), "--key", key}, tc.extra...)
			if got := Main(args, &out, &errOut); got != tc.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", got, tc.want, out.String(), errOut.String())
			}
		})
	}
}
