package verify

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/check"
	"github.com/qualkit/qualkit/verify/internal/load"
)

// linkFor writes the in-toto link a campaign would write for s's receipt (products: the receipt
// and its evidence; materials: the bound inputs), edited by edit, signed with key.
func linkFor(t *testing.T, s *load.Snapshot, key *ecdsa.PrivateKey, edit func(products, materials map[string]map[string]string)) *load.InTotoLink {
	t.Helper()
	products := map[string]map[string]string{s.Receipt.Path: {"sha256": strings.TrimPrefix(s.Receipt.Digest, "sha256:")}}
	materials := map[string]map[string]string{}
	for _, a := range s.RC.Artifacts {
		h := map[string]string{"sha256": strings.TrimPrefix(a.Digest, "sha256:")}
		if contract.Kinds[a.Kind].Evidence {
			products[a.Path] = h
		} else {
			materials[a.Path] = h
		}
	}
	if edit != nil {
		edit(products, materials)
	}
	signed, err := json.Marshal(map[string]any{"_type": "link", "name": attestfmt.StepName, "materials": materials, "products": products,
		"byproducts": map[string]any{}, "command": []string{}, "environment": map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	canonical, err := jsonstrict.CanonicalJSON(signed)
	if err != nil {
		t.Fatal(err)
	}
	d := sha256.Sum256(canonical)
	sig, err := ecdsa.SignASN1(rand.Reader, key, d[:])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"signed": json.RawMessage(signed), "signatures": []map[string]string{{"keyid": strings.Repeat("ab", 32), "sig": hex.EncodeToString(sig)}}})
	if err != nil {
		t.Fatal(err)
	}
	return &load.InTotoLink{Path: strings.TrimSuffix(s.Receipt.Path, ".json") + attestfmt.LinkDirSuffix + "/" + attestfmt.StepName + ".abababab.link", Raw: raw}
}

// TestCheckSignatureInTotoLink: a link beside the receipt must bind exactly the receipt's evidence
// (products) and bound inputs (materials) by digest, signed by a pinned key.
func TestCheckSignatureInTotoLink(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	with := func(k *ecdsa.PrivateKey, edit func(p, m map[string]map[string]string)) func(s *load.Snapshot) {
		return func(s *load.Snapshot) {
			s.Policy.Keys = append(slices.Clone(s.Policy.Keys), &key.PublicKey)
			s.Links = []*load.InTotoLink{linkFor(t, s, k, edit)}
		}
	}
	firstOf := func(m map[string]map[string]string, not string) string {
		names := make([]string, 0, len(m))
		for n := range m {
			if n != not {
				names = append(names, n)
			}
		}
		slices.Sort(names)
		return names[0]
	}
	runCheckTable(t, check.Signature, []checkCase{
		{"no link", func(s *load.Snapshot) { s.Links = nil }, nil, StatusPassed},
		{"the link binds the receipt", with(key, nil), nil, StatusPassed},
		{"signed by an unpinned key", with(other, nil), ErrLinkMismatch, ""},
		{"a product's digest differs", with(key, func(p, m map[string]map[string]string) {
			p[firstOf(p, "")]["sha256"] = strings.Repeat("0", 64)
		}), ErrLinkMismatch, ""},
		{"a product is missing", with(key, func(p, m map[string]map[string]string) { delete(p, firstOf(p, "")) }), ErrLinkMismatch, ""},
		{"an extra product", with(key, func(p, m map[string]map[string]string) {
			p["elsewhere/x.json"] = map[string]string{"sha256": strings.Repeat("1", 64)}
		}), ErrLinkMismatch, ""},
		{"a bound input listed as a product", with(key, func(p, m map[string]map[string]string) {
			n := firstOf(m, "")
			p[n] = m[n]
			delete(m, n)
		}), ErrLinkMismatch, ""},
		{"not link metadata", func(s *load.Snapshot) {
			s.Links = []*load.InTotoLink{{Path: "x.link", Raw: []byte(`{"payloadType":"x"}`)}}
		}, ErrLinkMismatch, ""},
	})
}
