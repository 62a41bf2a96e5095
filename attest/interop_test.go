package attest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"google.golang.org/protobuf/encoding/protojson"
)

// TestCosignInterop verifies attestations made by the real cosign CLI (`cosign attest-blob
// --statement`) with this package's verifier. scripts/interop.sh (make interop) sets:
//
//	QUALKIT_INTEROP_PUB        the public key cosign signed with
//	QUALKIT_INTEROP_ROOT       the repository root the subjects are relative to
//	QUALKIT_INTEROP_ENVELOPES  plain DSSE envelopes written by cosign (path list)
//	QUALKIT_INTEROP_BUNDLES    Sigstore bundles written by cosign (path list)
//
// It is skipped otherwise.
func TestCosignInterop(t *testing.T) {
	pubPath := os.Getenv("QUALKIT_INTEROP_PUB")
	if pubPath == "" {
		t.Skip("run by scripts/interop.sh (make interop)")
	}
	pub, err := attest.ReadPublicKey(pubPath)
	if err != nil {
		t.Fatal(err)
	}
	root := os.Getenv("QUALKIT_INTEROP_ROOT")
	check := func(t *testing.T, name string, payload []byte) {
		var st ita1.Statement
		if err := protojson.Unmarshal(payload, &st); err != nil {
			t.Fatalf("%s: statement: %v", name, err)
		}
		if err := st.Validate(); err != nil {
			t.Fatalf("%s: statement: %v", name, err)
		}
		if st.GetType() != ita1.StatementTypeUri || st.GetPredicateType() != attestfmt.PredicateType {
			t.Fatalf("%s: _type %q predicateType %q", name, st.GetType(), st.GetPredicateType())
		}
		for _, s := range st.GetSubject() {
			if got, disk := s.GetDigest()["sha256"], sha256File(t, filepath.Join(root, s.GetName())); got != disk {
				t.Errorf("%s: subject %s: %s, on disk %s", name, s.GetName(), got, disk)
			}
		}
		t.Logf("%s: verified, %d subjects match the files on disk", name, len(st.GetSubject()))
	}
	n := 0
	for _, p := range filepath.SplitList(os.Getenv("QUALKIT_INTEROP_ENVELOPES")) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := attest.VerifyEnvelope(raw, pub)
		if err != nil {
			t.Fatalf("cosign envelope %s: %v", p, err)
		}
		check(t, p, payload)
		if _, err := attest.VerifyEnvelope(tamper(t, raw), pub); !errors.Is(err, attest.ErrSignature) {
			t.Errorf("tampered cosign envelope %s: error %v, want ErrSignature", p, err)
		}
		n++
	}
	for _, p := range filepath.SplitList(os.Getenv("QUALKIT_INTEROP_BUNDLES")) {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		payload, err := attest.VerifyBundle(raw, pub)
		if err != nil {
			t.Fatalf("cosign bundle %s: %v", p, err)
		}
		check(t, p, payload)
		n++
	}
	if n == 0 {
		t.Fatal("no cosign envelope or bundle given")
	}
}

// tamper flips the statement's "clean" claim inside a plain envelope's payload.
func tamper(t *testing.T, envelope []byte) []byte {
	t.Helper()
	var env map[string]any
	if err := json.Unmarshal(envelope, &env); err != nil {
		t.Fatal(err)
	}
	payload, err := decodeB64(env["payload"].(string))
	if err != nil {
		t.Fatal(err)
	}
	changed := bytes.Replace(payload, []byte(`"clean":true`), []byte(`"clean":false`), 1)
	if bytes.Equal(changed, payload) {
		changed = append(payload, ' ')
	}
	env["payload"] = encodeB64(changed)
	out, _ := json.Marshal(env)
	return out
}
