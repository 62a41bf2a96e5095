package verify

import (
	"bytes"
	"crypto"
	"os"
	"path/filepath"
	"testing"

	"github.com/qualkit/qualkit/verify/internal/load"
)

// FuzzReadAttestation: envelopes and bundles are untrusted input. Reading one never panics, and
// an attestation is only ever attributed to the pinned key when a signature over its payload
// verifies with it. The seeds are whole attestation files: fuzz with -fuzzminimizetime 0, or the
// engine spends its time minimizing them (go test -run '^$' -fuzz FuzzReadAttestation
// -fuzzminimizetime 0 ./verify/).
func FuzzReadAttestation(f *testing.F) {
	for _, n := range []string{"a-1.intoto.dsse.json", "a-1.sigstore.json"} {
		b, err := os.ReadFile(filepath.Join(frozenRoot, ".qualification/receipts", n))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, n == "a-1.sigstore.json")
		// The same attestation with an extra garbage signature beside the valid one.
		f.Add(bytes.Replace(b, []byte(`"signatures":[`), []byte(`"signatures":[{"keyid":"x","sig":"Z2FyYmFnZQ=="},`), 1), n == "a-1.sigstore.json")
	}
	pub, err := LoadPublicKey(filepath.Join(frozenRoot, "frozen.pub"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, bundle bool) {
		kind := "envelope"
		if bundle {
			kind = "bundle"
		}
		a := load.ReadAttestation(kind, "x", data, []crypto.PublicKey{pub})
		if a.Signer != "" && a.Payload == nil {
			t.Fatal("a signer without a payload")
		}
		// Every signature is listed (at most MaxSignatures), each verified one with the pinned
		// key's fingerprint; the signer is the first verified one.
		if len(a.Sigs) > MaxSignatures || (a.Payload != nil && len(a.Sigs) != a.SigCount) {
			t.Fatalf("%d signature outcomes for %d signatures", len(a.Sigs), a.SigCount)
		}
		first := ""
		for i, o := range a.Sigs {
			if o.Index != i || o.Verified != (o.Key != "") || (o.Verified && o.Key != KeyFingerprint(pub)) || (!o.Verified && o.Problem == "") {
				t.Fatalf("signature outcome %+v", o)
			}
			if o.Verified && first == "" {
				first = o.Key
			}
		}
		if a.Signer != first {
			t.Fatalf("signer %q, first verified signature %q", a.Signer, first)
		}
		if a.Stmt != nil && (len(a.Stmt.Subjects) == 0 || len(a.Stmt.Subjects) > MaxSubjects) {
			t.Fatalf("%d subjects accepted", len(a.Stmt.Subjects))
		}
	})
}
