package check

import (
	"encoding/hex"
	"encoding/json"
	"sort"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// In-toto link names (the attest module writes them; in-toto-golang is not linked here: the link
// is parsed with the standard library and checked with the same verifier as the attestation).

// inTotoLinksMatch adds findings for every campaign link that does not bind this receipt: its
// products must be exactly the receipt and its evidence files, its materials exactly the bound
// inputs, each by the receipt's sha256; with pinned keys, a signature (ECDSA over the canonical
// JSON of "signed") must verify with one of them.
func inTotoLinksMatch(s *load.Snapshot, c *finding.Collector) {
	if s.RC == nil {
		return
	}
	wantProducts := map[string]string{s.Receipt.Path: s.Receipt.Digest}
	wantMaterials := map[string]string{}
	for _, a := range s.RC.Artifacts {
		if contract.Kinds[a.Kind].Evidence {
			wantProducts[a.Path] = a.Digest
		} else {
			wantMaterials[a.Path] = a.Digest
		}
	}
	for _, l := range s.Links {
		if l.ReadErr != nil {
			c.Add(l.Path, "", reason.ErrLinkMismatch, "%v", l.ReadErr)
			continue
		}
		var mb struct {
			Signed     json.RawMessage `json:"signed"`
			Signatures []struct {
				KeyID string `json:"keyid"`
				Sig   string `json:"sig"`
			} `json:"signatures"`
		}
		var link struct {
			Type      string                       `json:"_type"`
			Name      string                       `json:"name"`
			Materials map[string]map[string]string `json:"materials"`
			Products  map[string]map[string]string `json:"products"`
		}
		if err := jsonstrict.DecodeInto(l.Raw, &mb); err != nil || len(mb.Signed) == 0 {
			c.Add(l.Path, "", reason.ErrLinkMismatch, "not in-toto link metadata ({\"signed\", \"signatures\"}): %v", err)
			continue
		}
		if err := json.Unmarshal(mb.Signed, &link); err != nil || link.Type != "link" || link.Name != attestfmt.StepName {
			c.Add(l.Path, "/signed", reason.ErrLinkMismatch, "not the link of step %s (_type %q, name %q, %v)", attestfmt.StepName, link.Type, link.Name, err)
			continue
		}
		if len(s.Policy.Keys) > 0 {
			canonical, err := jsonstrict.CanonicalJSON(mb.Signed)
			ok := false
			for _, sig := range mb.Signatures {
				raw, herr := hex.DecodeString(sig.Sig)
				for _, k := range s.Policy.Keys {
					ok = ok || (err == nil && herr == nil && load.VerifySig(k, raw, canonical))
				}
			}
			if !ok {
				c.Add(l.Path, "/signatures", reason.ErrLinkMismatch, "none of %d signatures verifies with the %d pinned keys", len(mb.Signatures), len(s.Policy.Keys))
			}
		}
		linkArtifactsMatch(c, l.Path, "products", link.Products, wantProducts)
		linkArtifactsMatch(c, l.Path, "materials", link.Materials, wantMaterials)
	}
}

func linkArtifactsMatch(c *finding.Collector, file, field string, got map[string]map[string]string, want map[string]string) {
	names := make([]string, 0, len(got)+len(want))
	for n := range got {
		names = append(names, n)
	}
	for n := range want {
		if _, ok := got[n]; !ok {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		g, inLink := got[n]
		w, inReceipt := want[n]
		switch {
		case !inReceipt:
			c.Add(file, "/signed/"+field, reason.ErrLinkMismatch, "%s lists %s, which the receipt does not bind as one of its %s", field, n, linkRole(field))
		case !inLink:
			c.Add(file, "/signed/"+field, reason.ErrLinkMismatch, "the receipt's %s is missing from the link's %s", n, field)
		case "sha256:"+g["sha256"] != w:
			c.Add(file, "/signed/"+field, reason.ErrLinkMismatch, "%s binds %s as sha256:%s, the receipt as %s", field, n, g["sha256"], w)
		}
	}
}

func linkRole(field string) string {
	if field == "products" {
		return "evidence files"
	}
	return "bound inputs"
}
