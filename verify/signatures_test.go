package verify

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/verify/internal/record"
	"github.com/secure-systems-lab/go-securesystemslib/dsse"
)

// signMany seals the receipt's statement with every key in order, then appends the extra raw
// signatures (garbage), in both the envelope and the bundle.
func signMany(t *testing.T, root, receipt string, keys []testKey, extra ...[]byte) {
	t.Helper()
	payload, err := json.Marshal(statementFor(t, root, receipt))
	if err != nil {
		t.Fatal(err)
	}
	var sigs []any
	for i, k := range keys {
		sig, err := k.sv.SignMessage(bytes.NewReader(dsse.PAE(attestfmt.PayloadType, payload)))
		if err != nil {
			t.Fatal(err)
		}
		sigs = append(sigs, map[string]any{"keyid": "key-" + record.Itoa(int64(i)), "sig": base64.StdEncoding.EncodeToString(sig)})
	}
	for _, g := range extra {
		sigs = append(sigs, map[string]any{"keyid": "garbage", "sig": base64.StdEncoding.EncodeToString(g)})
	}
	env, _ := json.Marshal(map[string]any{"payloadType": attestfmt.PayloadType, "payload": base64.StdEncoding.EncodeToString(payload), "signatures": sigs})
	bundle, _ := json.Marshal(map[string]any{"mediaType": attestfmt.BundleMediaType,
		"verificationMaterial": map[string]any{"publicKey": map[string]any{"hint": "any"}},
		"dsseEnvelope":         map[string]any{"payloadType": attestfmt.PayloadType, "payload": base64.StdEncoding.EncodeToString(payload), "signatures": sigs}})
	base := filepath.Join(root, strings.TrimSuffix(receipt, ".json"))
	mustWrite(t, base+attestfmt.EnvelopeSuffix, append(env, '\n'))
	mustWrite(t, base+attestfmt.BundleSuffix, append(bundle, '\n'))
}

// TestSignaturesListed: one valid signature by a pinned key is enough (DSSE), and an extra garbage
// signature beside it does not change the verdict, but every signature is listed with the
// fingerprint of the key it verified with, or as not verified.
func TestSignaturesListed(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	root := copyTree(t, frozenRoot)
	k := newTestKey(t)
	reseal(t, root, receipt, k)
	signMany(t, root, receipt, []testKey{k}, []byte("garbage, not a signature"))
	res := verifyAt(t, root, receipt, k.policy())
	if res.Verdict != Verified {
		t.Fatalf("rejected:%s", findingsOf(res))
	}
	if len(res.Signatures) != 4 {
		t.Fatalf("%d signatures listed, want 4 (2 in the envelope, 2 in the bundle): %+v", len(res.Signatures), res.Signatures)
	}
	for _, o := range res.Signatures {
		switch o.Index {
		case 0:
			if !o.Verified || o.Key != KeyFingerprint(k.pub) {
				t.Errorf("signature 0 of %s: %+v, want verified by %s", o.File, o, KeyFingerprint(k.pub))
			}
		case 1:
			if o.Verified || o.Key != "" || o.KeyID != "garbage" || !strings.Contains(o.Problem, "verifies with none of the 1 pinned keys") {
				t.Errorf("garbage signature of %s: %+v", o.File, o)
			}
		}
	}
	// A policy that requires every signature to verify rejects the garbage.
	p := k.policy()
	p.Signatures.RequireAll = true
	res = verifyAt(t, root, receipt, p)
	if !hasFinding(res, CheckSignature, ErrSignaturePolicy, "signature 1 (keyid \"garbage\")") {
		t.Fatalf("require_all: no signature_policy finding for the garbage:%s", findingsOf(res))
	}
}

// TestSignatureThreshold: an M-of-N policy counts distinct pinned keys that signed.
func TestSignatureThreshold(t *testing.T) {
	const receipt = ".qualification/receipts/a-1.json"
	k1, k2, k3 := newTestKey(t), newTestKey(t), newTestKey(t)
	pinned := func(threshold int, keys ...testKey) Policy {
		p := DefaultPolicy()
		for _, k := range keys {
			p.Keys = append(p.Keys, crypto.PublicKey(k.pub))
		}
		p.Signatures.Threshold = threshold
		return p
	}
	cases := []struct {
		name    string
		signers []testKey
		policy  Policy
		ok      bool
	}{
		{"2 of 3, two signed", []testKey{k1, k2}, pinned(2, k1, k2, k3), true},
		{"2 of 3, one signed", []testKey{k1}, pinned(2, k1, k2, k3), false},
		{"2 of 3, one key signed twice", []testKey{k1, k1}, pinned(2, k1, k2, k3), false},
		{"2 of 3, two signed, one unpinned", []testKey{k1, newTestKey(t)}, pinned(2, k1, k2, k3), false},
		{"default: any one", []testKey{k3}, pinned(0, k1, k2, k3), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := copyTree(t, frozenRoot)
			reseal(t, root, receipt, k1)
			signMany(t, root, receipt, tc.signers)
			res := verifyAt(t, root, receipt, tc.policy)
			if tc.ok != (res.Verdict == Verified) {
				t.Fatalf("verdict %s:%s", res.Verdict, findingsOf(res))
			}
			if !tc.ok && !hasFinding(res, CheckSignature, ErrSignaturePolicy, "the policy requires 2 of the 3 pinned keys") {
				t.Fatalf("no signature_policy finding:%s", findingsOf(res))
			}
		})
	}
	// The policy file form.
	p, err := ParsePolicy([]byte(`{"signatures": {"require_all": true, "threshold": 2}}`), ".")
	if err != nil || !p.Signatures.RequireAll || p.Signatures.Threshold != 2 {
		t.Fatalf("ParsePolicy: %+v, %v", p.Signatures, err)
	}
	if _, err := ParsePolicy([]byte(`{"signatures": {"threshold": -1}}`), "."); !errors.Is(err, ErrPolicy) {
		t.Fatalf("a negative threshold: %v", err)
	}
}

func hasFinding(res *Result, c Check, r *Reason, also string) bool {
	for _, f := range res.Check(c).Findings {
		if errors.Is(f, r) && strings.Contains(f.Error(), also) {
			return true
		}
	}
	return false
}
