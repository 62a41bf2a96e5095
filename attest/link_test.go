package attest_test

import (
	"context"
	"crypto"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/in-toto/in-toto-golang/in_toto"
	"github.com/qualkit/qualkit/attest"
	"github.com/qualkit/qualkit/schemas/attestfmt"
)

// TestWriteLinkVerifiesWithInToto: the campaign link is signed with the attestation key, and
// in-toto-golang's own loader and verifier accept it with the key id in-toto computes from the
// public key file; materials are the bound inputs, products the receipt and its evidence.
func TestWriteLinkVerifiesWithInToto(t *testing.T) {
	c := newCampaign(t, nil)
	s, prefix := newKey(t, t.TempDir(), nil)
	linkRel, err := attest.WriteLink(context.Background(), c.root, receiptRel, s)
	if err != nil {
		t.Fatal(err)
	}
	var k in_toto.Key
	if err := k.LoadKeyDefaults(prefix + ".pub"); err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(receiptRel, ".json") + ".in-toto/qualkit-campaign." + k.KeyID[:8] + ".link"
	if linkRel != want {
		t.Fatalf("link at %s, want %s", linkRel, want)
	}
	md, err := in_toto.LoadMetadata(filepath.Join(c.root, linkRel))
	if err != nil {
		t.Fatal(err)
	}
	if err := md.VerifySignature(k); err != nil {
		t.Fatalf("in-toto refuses the link's signature: %v", err)
	}
	link := md.GetPayload().(in_toto.Link)
	products := keys(link.Products)
	wantProducts := append([]string{receiptRel}, c.artifactsOfKind("case_result", "request_records", "lifecycle_record", "server_log")...)
	sort.Strings(wantProducts)
	if !sameStrings(products, wantProducts) {
		t.Fatalf("products %v, want %v", products, wantProducts)
	}
	if got := link.Products[receiptRel]["sha256"]; got != sha256File(t, filepath.Join(c.root, receiptRel)) {
		t.Fatalf("receipt product digest %s", got)
	}
	for _, p := range []string{"workloads/demo.json", "workloads/launch/qualsim.json"} {
		if link.Materials[p]["sha256"] != sha256File(t, filepath.Join(c.root, p)) {
			t.Fatalf("material %s: %v", p, link.Materials[p])
		}
	}
	if _, ok := link.Products["workloads/demo.json"]; ok {
		t.Fatal("a bound input is listed as a product")
	}
	// Never replaced.
	if _, err := attest.WriteLink(context.Background(), c.root, receiptRel, s); err == nil || !strings.Contains(err.Error(), "never replaced") {
		t.Fatalf("second WriteLink: %v", err)
	}
}

// TestLayoutInTotoVerify runs in_toto.InTotoVerify over a signed layout and the campaign link,
// with the inspection's command replaced by `true` (the real qualverify inspection runs in the
// tools testscript intoto_link_verified_and_tampered_refused): the untouched campaign verifies;
// a changed evidence file is refused by the layout's MATCH rules.
func TestLayoutInTotoVerify(t *testing.T) {
	c := newCampaign(t, nil)
	dir := t.TempDir()
	s, prefix := newKey(t, dir, nil)
	owner, err := attestKey(t, filepath.Join(dir, "owner"))
	if err != nil {
		t.Fatal(err)
	}
	linkRel, err := attest.WriteLink(context.Background(), c.root, receiptRel, s)
	if err != nil {
		t.Fatal(err)
	}
	l, err := attest.Layout(attest.LayoutOptions{Functionaries: []crypto.PublicKey{s.PublicKey()}, Expires: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	l.Inspect[0].Run = []string{"true"}
	signed, err := attest.SignMetablock(context.Background(), *l, owner)
	if err != nil {
		t.Fatal(err)
	}
	layoutPath := filepath.Join(dir, "root.layout")
	writeFile(t, layoutPath, signed)
	ownerKey, err := attest.FunctionaryKey(owner.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	evidence := path.Dir(c.artifactsOfKind("lifecycle_record")[0])
	params := map[string]string{attestfmt.ParamReceipt: receiptRel, attestfmt.ParamEvidence: evidence, attestfmt.ParamPubKey: prefix + ".pub"}
	verify := func() error {
		md, err := in_toto.LoadMetadata(layoutPath)
		if err != nil {
			t.Fatal(err)
		}
		_, err = in_toto.InTotoVerify(md, map[string]in_toto.Key{ownerKey.KeyID: ownerKey}, filepath.Join(c.root, path.Dir(linkRel)), "", params, nil, false)
		return err
	}
	t.Chdir(c.root)
	if err := verify(); err != nil {
		t.Fatalf("InTotoVerify refuses the untouched campaign: %v", err)
	}
	os.Remove("qualverify.link")
	log := c.artifactsOfKind("server_log")[0]
	writeFile(t, filepath.Join(c.root, log), []byte("tampered\n"))
	err = verify()
	t.Logf("tampered: %v", err)
	if err == nil || !strings.Contains(err.Error(), log) {
		t.Fatalf("InTotoVerify with a tampered %s: %v, want a refusal naming it", log, err)
	}
}

func attestKey(t *testing.T, prefix string) (attest.Signer, error) {
	t.Helper()
	if err := attest.GenerateKeyPair(prefix, nil); err != nil {
		return nil, err
	}
	return attest.LoadSigner(prefix+".key", nil)
}

func keys(m map[string]in_toto.HashObj) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
