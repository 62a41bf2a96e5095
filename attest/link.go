package attest

import (
	"context"
	"crypto"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/in-toto/in-toto-golang/in_toto"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/secure-systems-lab/go-securesystemslib/cjson"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// LinkPath returns where AttestReceipt writes the in-toto link of the receipt receiptRel signed
// by pub: DIR/NAME.in-toto/qualkit-campaign.KEYID8.link, relative to the root.
func LinkPath(receiptRel string, pub crypto.PublicKey) (string, error) {
	k, err := FunctionaryKey(pub)
	if err != nil {
		return "", err
	}
	return LinkDir(receiptRel) + "/" + fmt.Sprintf(in_toto.LinkNameFormat, attestfmt.StepName, k.KeyID), nil
}

// LinkDir is the directory beside receiptRel that holds its in-toto link.
func LinkDir(receiptRel string) string {
	return strings.TrimSuffix(receiptRel, ".json") + attestfmt.LinkDirSuffix
}

// FunctionaryKey is pub as an in-toto public key: keytype ecdsa, scheme ecdsa-sha2-nistp256,
// keyval.public the PKIX PEM, and the key id in-toto computes from them (the same id the stock
// in-toto tools compute for that PEM file).
func FunctionaryKey(pub crypto.PublicKey) (in_toto.Key, error) {
	if err := checkPublicKey(pub); err != nil {
		return in_toto.Key{}, err
	}
	pemBytes, err := cryptoutils.MarshalPublicKeyToPEM(pub)
	if err != nil {
		return in_toto.Key{}, fmt.Errorf("encode public key: %w", err)
	}
	var k in_toto.Key
	if err := k.LoadKeyReaderDefaults(strings.NewReader(string(pemBytes))); err != nil {
		return in_toto.Key{}, fmt.Errorf("in-toto key: %w", err)
	}
	return k, nil
}

// CampaignLink builds the in-toto link of the receipt root/receiptRel (checked as Statement
// checks it): materials are the receipt's bound inputs (every artifact that is not a per-run
// output, as in the predicate), products the receipt and every evidence file it binds (the
// attestation's subjects, and the captured case output streams), each by its sha256 as the
// receipt records it (the files on disk are re-hashed and must agree).
func CampaignLink(root, receiptRel string) (*in_toto.Link, error) {
	st, err := Statement(root, receiptRel)
	if err != nil {
		return nil, err
	}
	link := &in_toto.Link{Type: "link", Name: attestfmt.StepName, Materials: map[string]in_toto.HashObj{},
		Products: map[string]in_toto.HashObj{}, ByProducts: map[string]any{}, Command: []string{},
		Environment: map[string]any{"receipt_id": st.Predicate.ReceiptID, "qualrun_version": st.Predicate.Qualrun.Version}}
	for _, s := range st.InToto.GetSubject() {
		link.Products[s.GetName()] = in_toto.HashObj{"sha256": s.GetDigest()["sha256"]}
	}
	for _, a := range st.Predicate.Artifacts {
		link.Materials[a.Path] = in_toto.HashObj{"sha256": strings.TrimPrefix(a.Digest, "sha256:")}
	}
	// The case output streams are products too: the Statement binds them through the case results.
	data, err := evidence.ReadFileLimited(filepath.Join(root, filepath.FromSlash(st.Receipt)), MaxReceiptBytes)
	if err != nil {
		return nil, fmt.Errorf("read receipt %s: %w", st.Receipt, err)
	}
	rc, err := parseReceipt(st.Receipt, data)
	if err != nil {
		return nil, err
	}
	for i, a := range rc.Artifacts {
		// the per-run evidence that is not a subject (contract.Kinds): the case output streams.
		if !contract.Kinds[a.Kind].Evidence || contract.Kinds[a.Kind].Subject {
			continue
		}
		h, err := hashSubject(root, a)
		if err != nil {
			return nil, fmt.Errorf("artifacts[%d]: %w", i, err)
		}
		link.Products[a.Path] = in_toto.HashObj{"sha256": h}
	}
	return link, nil
}

// SignMetablock signs signed (an in_toto.Link or in_toto.Layout) with s in in-toto's classic
// metadata format: {"signed": ..., "signatures": [{"keyid", "sig"}]}, the signature an ECDSA P-256
// ASN.1 signature (hex) over the canonical JSON of signed, as in-toto's ecdsa-sha2-nistp256
// scheme defines it. It checks the signature with in-toto-golang's own verifier and returns the
// indented, newline-terminated JSON.
func SignMetablock(ctx context.Context, signed any, s Signer) ([]byte, error) {
	k, err := FunctionaryKey(s.PublicKey())
	if err != nil {
		return nil, err
	}
	canonical, err := cjson.EncodeCanonical(signed)
	if err != nil {
		return nil, fmt.Errorf("canonical JSON: %w", err)
	}
	sig, err := s.Sign(ctx, canonical)
	if err != nil {
		return nil, fmt.Errorf("sign in-toto metadata: %w", err)
	}
	mb := in_toto.Metablock{Signed: signed, Signatures: []in_toto.Signature{{KeyID: k.KeyID, Sig: hex.EncodeToString(sig)}}}
	if err := mb.VerifySignature(k); err != nil {
		return nil, fmt.Errorf("check the new in-toto signature: %w: %v", ErrSignature, err)
	}
	out, err := json.MarshalIndent(mb, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode in-toto metadata: %w", err)
	}
	return append(out, '\n'), nil
}

// WriteLink signs the campaign link of root/receiptRel with s and writes it to LinkPath (its
// directory is created; neither may exist: links are never replaced). It returns the link's path
// relative to root.
func WriteLink(ctx context.Context, root, receiptRel string, s Signer) (string, error) {
	link, err := CampaignLink(root, receiptRel)
	if err != nil {
		return "", err
	}
	rel, err := cleanRel(receiptRel)
	if err != nil {
		return "", err
	}
	linkRel, err := LinkPath(rel, s.PublicKey())
	if err != nil {
		return "", err
	}
	dir := path.Dir(linkRel)
	if err := evidence.CheckNoSymlink(root, dir); err != nil {
		return "", err
	}
	if _, err := os.Lstat(filepath.Join(root, filepath.FromSlash(dir))); err == nil {
		return "", fmt.Errorf("%w: %s already exists; links are never replaced", ErrPath, dir)
	}
	signed, err := SignMetablock(ctx, *link, s)
	if err != nil {
		return "", err
	}
	if err := os.Mkdir(filepath.Join(root, filepath.FromSlash(dir)), 0o755); err != nil {
		return "", fmt.Errorf("%w: %v", ErrPath, err)
	}
	if err := writeNew(root, linkRel, signed, 0o644); err != nil {
		os.Remove(filepath.Join(root, filepath.FromSlash(dir)))
		return "", err
	}
	return linkRel, nil
}

// LayoutOptions are what a project owner decides in a layout.
type LayoutOptions struct {
	// Functionaries are the public keys allowed to sign campaign links (threshold 1).
	Functionaries []crypto.PublicKey
	// Expires is when the layout stops being valid (UTC, seconds).
	Expires time.Time
	// VerifyArgs are extra arguments of the inspection's qualverify verify (e.g. a --policy),
	// placed before --key {PUBKEY} {RECEIPT}.
	VerifyArgs []string
	// Readme is the layout's human-readable description.
	Readme string
	// Params fix layout parameters (RECEIPT, EVIDENCE, PUBKEY) in the signed layout, for verifiers
	// that substitute none (the stock in-toto-golang verify CLI passes no parameters).
	Params map[string]string
}

// Layout builds the in-toto layout of a qualkit campaign: one step, attestfmt.StepName, signed by one of the
// functionaries, whose products may be anything (the receipt decides what they are), and one
// inspection, attestfmt.InspectionName, that runs `qualverify verify --key {PUBKEY} {RECEIPT}` in the
// repository and whose materials (every file in the repository at verification time) must MATCH
// the campaign link: the receipt and every file under the evidence directory must equal the link's
// products (which qualverify checks are the attestation's subjects; the effective run
// configuration there is a material), else they are DISALLOWed;
// the bound inputs must equal the link's materials where present. RECEIPT, EVIDENCE and PUBKEY are
// layout parameters the verifier gives.
func Layout(o LayoutOptions) (*in_toto.Layout, error) {
	if len(o.Functionaries) == 0 {
		return nil, fmt.Errorf("a layout needs at least one functionary key")
	}
	l := &in_toto.Layout{Type: "layout", Keys: map[string]in_toto.Key{}, Expires: o.Expires.UTC().Format(in_toto.ISO8601DateSchema),
		Readme: o.Readme, Inspect: []in_toto.Inspection{}}
	var ids []string
	for _, pub := range o.Functionaries {
		k, err := FunctionaryKey(pub)
		if err != nil {
			return nil, err
		}
		l.Keys[k.KeyID] = k
		ids = append(ids, k.KeyID)
	}
	receipt, evid := "{"+attestfmt.ParamReceipt+"}", "{"+attestfmt.ParamEvidence+"}"
	l.Steps = []in_toto.Step{{Type: "step", PubKeys: ids, Threshold: 1, ExpectedCommand: []string{},
		SupplyChainItem: in_toto.SupplyChainItem{Name: attestfmt.StepName,
			ExpectedMaterials: [][]string{{"ALLOW", "*"}},
			ExpectedProducts:  [][]string{{"CREATE", receipt}, {"ALLOW", evid + "/*"}, {"ALLOW", receipt}, {"DISALLOW", "*"}},
		}}}
	run := append([]string{"qualverify", "verify"}, o.VerifyArgs...)
	run = append(run, "--key", "{"+attestfmt.ParamPubKey+"}", receipt)
	l.Inspect = []in_toto.Inspection{{Type: "inspection", Run: run, SupplyChainItem: in_toto.SupplyChainItem{Name: attestfmt.InspectionName,
		ExpectedMaterials: [][]string{
			{"MATCH", receipt, "WITH", "PRODUCTS", "FROM", attestfmt.StepName},
			{"MATCH", evid + "/*", "WITH", "PRODUCTS", "FROM", attestfmt.StepName},
			// the effective run configuration the campaign wrote is a bound input (a material)
			{"MATCH", evid + "/*", "WITH", "MATERIALS", "FROM", attestfmt.StepName},
			{"DISALLOW", receipt},
			{"DISALLOW", evid + "/*"},
			{"MATCH", "*", "WITH", "MATERIALS", "FROM", attestfmt.StepName},
			{"ALLOW", "*"},
		},
		ExpectedProducts: [][]string{{"ALLOW", "*"}},
	}}}
	if len(o.Params) > 0 {
		for name := range o.Params {
			if name != attestfmt.ParamReceipt && name != attestfmt.ParamEvidence && name != attestfmt.ParamPubKey {
				return nil, fmt.Errorf("unknown layout parameter %q (want %s, %s or %s)", name, attestfmt.ParamReceipt, attestfmt.ParamEvidence, attestfmt.ParamPubKey)
			}
		}
		fixed, err := in_toto.SubstituteParameters(*l, o.Params)
		if err != nil {
			return nil, fmt.Errorf("layout parameters: %w", err)
		}
		l = &fixed
	}
	return l, nil
}
