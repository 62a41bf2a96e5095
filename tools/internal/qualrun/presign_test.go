package qualrun

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
)

// frozenEvidence is real evidence of a passed, publishable campaign (verify/testdata/frozen).
const frozenEvidence = "../../../verify/testdata/frozen/v1"

// TestSignCheckedRefusesWhatItsContractRejects: qualrun run validates a receipt before it signs
// it (issue 27 item 2). A copy of real evidence, unsigned, is signed; the same evidence with one
// measured request's t_sched_ns wrapped to -2^63 (what an overflowed trace schedule recorded),
// every digest updated so that the receipt still binds it and attest would sign it, is refused:
// exit 3, the run directory named, no envelope, bundle or link written.
func TestSignCheckedRefusesWhatItsContractRejects(t *testing.T) {
	keys := t.TempDir()
	if code, _, stderr := runMain("keygen", "--unencrypted", "--output-prefix", filepath.Join(keys, "k")); code != 0 {
		t.Fatalf("keygen: %s", stderr)
	}
	signer, err := attest.LoadSigner(filepath.Join(keys, "k.key"), func() ([]byte, error) { return nil, nil })
	if err != nil {
		t.Fatal(err)
	}
	const receipt = ".qualification/receipts/a-1.json"
	const runDir = ".qualification/runs/20261130t144931051989z-cpu-frozen-host-qualsim-frozen-509242b324-v1"
	copyEvidence := func(t *testing.T) string {
		root := t.TempDir()
		if err := os.CopyFS(root, os.DirFS(frozenEvidence)); err != nil {
			t.Fatal(err)
		}
		for _, ext := range []string{".intoto.dsse.json", ".sigstore.json"} {
			if err := os.Remove(filepath.Join(root, strings.TrimSuffix(receipt, ".json")+ext)); err != nil {
				t.Fatal(err)
			}
		}
		return root
	}
	signed := func(root string) bool {
		_, err := os.Stat(filepath.Join(root, strings.TrimSuffix(receipt, ".json")+".intoto.dsse.json"))
		return err == nil
	}

	t.Run("valid", func(t *testing.T) {
		root := copyEvidence(t)
		var stderr bytes.Buffer
		if _, _, _, err := signChecked(context.Background(), root, receipt, runDir, true, signer, &stderr); err != nil || !signed(root) {
			t.Fatalf("%v\n%s", err, stderr.String())
		}
	})
	t.Run("a wrapped t_sched", func(t *testing.T) {
		root := copyEvidence(t)
		rows := runDir + "/cases/000-chat-stream-r000/rows/c0001-r000.jsonl"
		cr := runDir + "/cases/000-chat-stream-r000/case-result.json"
		old := digestOf(t, root, rows)
		b := readRel(t, root, rows)
		lines := bytes.Split(b, []byte("\n"))
		for i, l := range lines {
			if bytes.Contains(l, []byte(`"warmup":false`)) {
				lines[i] = regexp.MustCompile(`"t_sched_ns":\d+`).ReplaceAll(l, []byte(`"t_sched_ns":-9223372036854775808`))
				break
			}
		}
		writeRel(t, root, rows, bytes.Join(lines, []byte("\n")))
		oldCR := digestOf(t, root, cr)
		replaceRel(t, root, cr, old, digestOf(t, root, rows))
		replaceRel(t, root, receipt, old, digestOf(t, root, rows))
		replaceRel(t, root, receipt, oldCR, digestOf(t, root, cr))
		var stderr bytes.Buffer
		_, _, _, err := signChecked(context.Background(), root, receipt, runDir, true, signer, &stderr)
		if code := exitcode.Code(err); code != exitcode.Internal || !strings.Contains(err.Error(), runDir) || !strings.Contains(err.Error(), "was not signed") {
			t.Fatalf("exit %d: %v\n%s", code, err, stderr.String())
		}
		if signed(root) {
			t.Fatal("a receipt its contract rejects was signed")
		}
		if matches, _ := filepath.Glob(filepath.Join(root, ".qualification/receipts/a-1.*")); len(matches) != 1 {
			t.Fatalf("files beside the receipt: %v", matches)
		}
	})
}

func readRel(t *testing.T, root, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeRel(t *testing.T, root, rel string, b []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(root, rel), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func digestOf(t *testing.T, root, rel string) string { return evidence.DigestOf(readRel(t, root, rel)) }

func replaceRel(t *testing.T, root, rel, old, new string) {
	t.Helper()
	b := readRel(t, root, rel)
	if !bytes.Contains(b, []byte(old)) {
		t.Fatalf("%s does not bind %s", rel, old)
	}
	writeRel(t, root, rel, bytes.ReplaceAll(b, []byte(old), []byte(new)))
}
