package verify

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/verify/internal/record"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature"
)

// frozenRoot is the frozen evidence of a real campaign (see testdata/frozen/README.md).
const frozenRoot = "testdata/frozen/v1"

// frozenReceipts are its receipts: two runs of variant cpu-a and one of cpu-b.
var frozenReceipts = []string{".qualification/receipts/a-1.json", ".qualification/receipts/a-2.json", ".qualification/receipts/b-1.json"}

// copyTree copies the frozen evidence to a temporary directory.
func copyTree(t testing.TB, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// testKey is an ECDSA P-256 signing key made for one test.
type testKey struct {
	sv  *signature.ECDSASignerVerifier
	pub crypto.PublicKey
}

func newTestKey(t testing.TB) testKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sv, err := signature.LoadECDSASignerVerifier(priv, crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return testKey{sv: sv, pub: priv.Public()}
}

func (k testKey) policy() Policy {
	p := DefaultPolicy()
	p.Keys = []crypto.PublicKey{k.pub}
	return p
}

// readTree reads a JSON file as a generic tree (numbers kept as literals).
func readTree(t testing.TB, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func writeTree(t testing.TB, path string, m any) {
	t.Helper()
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fileDigest(t testing.TB, path string) (string, int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return evidence.DigestOf(b), int64(len(b))
}

// reseal makes a receipt consistent with the files as they now are (records digests in case
// results, artifact digests and sizes, result and lifecycle references, the workload digest) and
// signs it anew: what a campaign that really produced these files would have written. Files that
// do not exist keep their recorded digests.
func reseal(t testing.TB, root, receipt string, k testKey) {
	t.Helper()
	rp := filepath.Join(root, receipt)
	rc := readTree(t, rp)
	arts := rc["artifacts"].([]any)
	exists := func(p string) bool { _, err := os.Stat(filepath.Join(root, p)); return err == nil }
	// Case results first: their rows bind the records.
	for _, a := range arts {
		m := a.(map[string]any)
		if m["kind"] != "case_result" || !exists(m["path"].(string)) {
			continue
		}
		cp := filepath.Join(root, m["path"].(string))
		cr := readTree(t, cp)
		rows, ok := cr["rows"].([]any)
		if !ok || len(rows) == 0 {
			continue
		}
		for _, r := range rows {
			ref := r.(map[string]any)["records"].(map[string]any)
			if exists(ref["path"].(string)) {
				ref["digest"], _ = fileDigest(t, filepath.Join(root, ref["path"].(string)))
			}
		}
		writeTree(t, cp, cr)
	}
	digests := map[string]string{}
	for _, a := range arts {
		m := a.(map[string]any)
		p := m["path"].(string)
		if strings.HasPrefix(p, "/") || !exists(p) {
			continue
		}
		d, n := fileDigest(t, filepath.Join(root, p))
		m["digest"], m["bytes"] = d, json.Number(record.Itoa(n))
		digests[p] = d
	}
	for _, r := range rc["results"].([]any) {
		if ref, ok := r.(map[string]any)["case_result"].(map[string]any); ok {
			if d, ok := digests[ref["path"].(string)]; ok {
				ref["digest"] = d
			}
		}
	}
	if l, ok := rc["lifecycle"].(map[string]any); ok {
		if d, ok := digests[l["path"].(string)]; ok {
			l["digest"] = d
		}
	}
	wl := rc["workload"].(map[string]any)
	if d, ok := digests[wl["path"].(string)]; ok {
		wl["digest"] = d
	}
	writeTree(t, rp, rc)
	sign(t, root, receipt, k, statementFor(t, root, receipt))
}

// statementFor builds the fixed-format in-toto statement of a receipt as it is on disk.
func statementFor(t testing.TB, root, receipt string) map[string]any {
	t.Helper()
	rp := filepath.Join(root, receipt)
	rc := readTree(t, rp)
	rd, _ := fileDigest(t, rp)
	subjects := []any{map[string]any{"name": receipt, "digest": map[string]any{"sha256": strings.TrimPrefix(rd, "sha256:")}}}
	var predArts []any
	for _, a := range rc["artifacts"].([]any) {
		m := a.(map[string]any)
		kind := m["kind"].(string)
		if slices.Contains(contract.SubjectKinds, contract.ArtifactKind(kind)) {
			subjects = append(subjects, map[string]any{"name": m["path"], "digest": map[string]any{"sha256": strings.TrimPrefix(m["digest"].(string), "sha256:")}})
		}
		if !contract.Kinds[contract.ArtifactKind(kind)].Evidence {
			predArts = append(predArts, m)
		}
	}
	return map[string]any{
		"_type":         attestfmt.StatementType,
		"subject":       subjects,
		"predicateType": attestfmt.PredicateType,
		"predicate": map[string]any{
			"receipt_id": rc["receipt_id"],
			"source":     rc["source"],
			"artifacts":  predArts,
			"workload":   rc["workload"],
			"host_id":    rc["environment"].(map[string]any)["host_id"],
			"qualrun":    rc["qualification"].(map[string]any)["qualrun"],
		},
	}
}

// sign writes the DSSE envelope and the Sigstore bundle of a statement beside the receipt.
func sign(t testing.TB, root, receipt string, k testKey, st map[string]any) {
	t.Helper()
	payload, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	env, bundle := sealPayload(t, payload, k)
	base := filepath.Join(root, strings.TrimSuffix(receipt, ".json"))
	if err := os.WriteFile(base+attestfmt.EnvelopeSuffix, env, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+attestfmt.BundleSuffix, bundle, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sealPayload signs payload (ECDSA P-256 over the DSSE PAE) and returns the envelope and bundle.
func sealPayload(t testing.TB, payload []byte, k testKey) ([]byte, []byte) {
	t.Helper()
	sig, err := k.sv.SignMessage(bytes.NewReader(dsse.PAE(attestfmt.PayloadType, payload)))
	if err != nil {
		t.Fatal(err)
	}
	env, _ := json.Marshal(map[string]any{"payloadType": attestfmt.PayloadType, "payload": base64.StdEncoding.EncodeToString(payload),
		"signatures": []any{map[string]any{"keyid": "", "sig": base64.StdEncoding.EncodeToString(sig)}}})
	der, _ := x509.MarshalPKIXPublicKey(k.pub)
	hint := sha256.Sum256(der)
	bundle, _ := json.Marshal(map[string]any{"mediaType": attestfmt.BundleMediaType,
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": base64.StdEncoding.EncodeToString(hint[:])}},
		"dsseEnvelope": map[string]any{"payloadType": attestfmt.PayloadType, "payload": base64.StdEncoding.EncodeToString(payload),
			"signatures": []any{map[string]any{"sig": base64.StdEncoding.EncodeToString(sig)}}}})
	return append(env, '\n'), append(bundle, '\n')
}

// verifyAt verifies a receipt under root.
func verifyAt(t testing.TB, root, receipt string, p Policy, opts ...Option) *Result {
	t.Helper()
	ev, err := LocateIn(root, filepath.Join(root, receipt))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Verify(context.Background(), ev, p, opts...)
	if err != nil {
		t.Fatalf("Verify %s: %v", receipt, err)
	}
	return res
}

// findingsOf lists the codes of a check's findings, for messages.
func findingsOf(res *Result) string {
	var b strings.Builder
	for _, f := range res.Findings {
		b.WriteString("\n    ")
		b.WriteString(f.Code())
		b.WriteString(" ")
		b.WriteString(f.Error())
	}
	return b.String()
}

// runDirOf returns the run directory of a frozen receipt.
func runDirOf(t testing.TB, root, receipt string) string {
	t.Helper()
	rc := readTree(t, filepath.Join(root, receipt))
	return ".qualification/runs/" + rc["receipt_id"].(string)
}

// renameRun gives a receipt the id qualrun derives from its (edited) start, backend, host id,
// workload and variant, as a campaign with those fields would have named it: the run directory
// moves and every path that names it, in the receipt, its case results and its lifecycle record,
// follows.
func renameRun(t testing.TB, root, receipt string) {
	t.Helper()
	rp := filepath.Join(root, receipt)
	var rc contract.ReceiptDoc
	b, err := os.ReadFile(rp)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rc); err != nil {
		t.Fatal(err)
	}
	start, err := time.Parse(time.RFC3339Nano, rc.Qualification.StartedAt)
	if err != nil {
		t.Fatal(err)
	}
	id := contract.ReceiptIDFor(start, string(rc.Qualification.Backend), rc.Environment.HostID, rc.Workload.ID, rc.Workload.Variant)
	if id == rc.ReceiptID {
		return
	}
	oldDir, newDir := ".qualification/runs/"+rc.ReceiptID, ".qualification/runs/"+id
	if err := os.Rename(filepath.Join(root, oldDir), filepath.Join(root, newDir)); err != nil {
		t.Fatal(err)
	}
	rewrite := func(p string) {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(oldDir+"/"), []byte(newDir+"/"))
		b = bytes.ReplaceAll(b, []byte(`"`+rc.ReceiptID+`"`), []byte(`"`+id+`"`))
		// Replaced, not rewritten in place: the file may be a hard link to a template's copy.
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		mustWriteTB(t, p, b)
	}
	rewrite(rp)
	for _, a := range rc.Artifacts {
		// The lifecycle record names the server log's path on the host, in the run directory.
		if a.Kind == "case_result" || a.Kind == "lifecycle_record" {
			rewrite(filepath.Join(root, strings.Replace(a.Path, oldDir+"/", newDir+"/", 1)))
		}
	}
}

// syncRunConfigCommand gives the run directory's effective-run-config.json the qualrun command a
// test wrote into its receipt (qualrun writes both from one argv; verify compares them). The file
// is replaced, not rewritten in place, so a hard link to a template's copy is left alone.
func syncRunConfigCommand(tb testing.TB, runDir string, cmd []any) {
	tb.Helper()
	p := filepath.Join(runDir, "effective-run-config.json")
	m := readTree(tb, p)
	m["qualrun"].(map[string]any)["command"] = cmd
	if err := os.Remove(p); err != nil {
		tb.Fatal(err)
	}
	writeTree(tb, p, m)
}
