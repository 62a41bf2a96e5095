package check

import (
	"bytes"
	"errors"
	"slices"
	"strings"

	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/verify/internal/finding"
	"github.com/qualkit/qualkit/verify/internal/load"
	"github.com/qualkit/qualkit/verify/internal/policy"
	"github.com/qualkit/qualkit/verify/internal/reason"
)

// Signature: the DSSE envelope and/or Sigstore bundle verify with a pinned public key (keyid
// and key hint ignored), carry an in-toto Statement v1 of the qualification predicate, and bind
// this receipt: the receipt first, then exactly its case results, request records, lifecycle
// record and server log, with the receipt's digests, and a predicate equal to the receipt's
// fields. When both files exist, both must verify and carry the same statement.
func Signature(s *load.Snapshot) finding.CheckResult {
	c := &finding.Collector{Check: finding.CheckSignature}
	switch {
	case s.SkipSign && len(s.Policy.Keys) == 0 && s.Policy.Keyless == nil:
		return c.Skipped("signatures are not part of this comparison (no pinned key)")
	case len(s.Attestations) == 0 && s.Relax[policy.RelaxUnsigned]:
		return c.Skipped("no attestation: " + string(policy.RelaxUnsigned))
	case len(s.Attestations) == 0:
		c.Add(s.Receipt.Path, "", reason.ErrUnsigned, "neither %s nor %s exists beside the receipt", nameBeside(s.Receipt.Path, attestfmt.EnvelopeSuffix), nameBeside(s.Receipt.Path, attestfmt.BundleSuffix))
		return c.Result()
	case len(s.Policy.Keys) == 0 && s.Policy.Keyless == nil:
		return c.Skipped("no pinned public key: the attestation was not verified (" + string(policy.RelaxUnsigned) + ")")
	}
	for _, a := range s.Attestations {
		switch {
		case a.ReadErr != nil:
			c.Add(a.Path, "", reason.ErrMalformedAttestation, "%v", a.ReadErr)
			continue
		case a.Malformed != nil && a.Payload == nil:
			c.AddCause(a.Path, "", reason.ErrMalformedAttestation, a.Malformed)
			continue
		}
		if a.Signer == "" && a.KeylessErr != nil {
			keylessFinding(c, a)
			if a.Stmt == nil {
				continue
			}
		} else if a.Signer == "" {
			c.Add(a.Path, "/signatures", reason.ErrBadSignature, "none of %d signatures verifies with the %d pinned keys", a.SigCount, len(s.Policy.Keys))
		} else {
			signaturePolicy(s, c, a)
		}
		if a.Malformed != nil {
			c.AddCause(a.Path, "/payload", reason.ErrMalformedAttestation, a.Malformed)
			continue
		}
		statementMatches(s, c, a)
	}
	var payloads [][]byte
	for _, a := range s.Attestations {
		if a.Payload != nil {
			payloads = append(payloads, a.Payload)
		}
	}
	if len(payloads) == 2 && !bytes.Equal(payloads[0], payloads[1]) {
		c.Add(s.Attestations[1].Path, "/dsseEnvelope/payload", reason.ErrAttestationsDiffer, "the bundle's statement differs from the envelope's (%s)", s.Attestations[0].Path)
	}
	inTotoLinksMatch(s, c)
	return c.Result()
}

// signaturePolicy applies the policy's M-of-N and all-signatures rules to an attestation that
// has at least one valid signature.
func signaturePolicy(s *load.Snapshot, c *finding.Collector, a *load.Attestation) {
	sp := s.Policy.Signatures
	var keys []string
	for _, o := range a.Sigs {
		if o.Verified && !slices.Contains(keys, o.Key) {
			keys = append(keys, o.Key)
		}
	}
	if want := max(1, sp.Threshold); len(keys) < want {
		c.Add(a.Path, "/signatures", reason.ErrSignaturePolicy, "%d distinct pinned keys signed (%s), the policy requires %d of the %d pinned keys",
			len(keys), strings.Join(keys, ", "), want, len(s.Policy.Keys))
	}
	if sp.RequireAll {
		for _, o := range a.Sigs {
			if !o.Verified {
				c.Add(a.Path, finding.Pointer("signatures", o.Index), reason.ErrSignaturePolicy, "signature %d (keyid %q) %s; the policy requires every signature to verify with a pinned key", o.Index, o.KeyID, o.Problem)
			}
		}
	}
}

func nameBeside(receipt, suffix string) string {
	return receipt[:len(receipt)-len(".json")] + suffix
}

// statementMatches compares a statement with the receipt it must bind.
func statementMatches(s *load.Snapshot, c *finding.Collector, a *load.Attestation) {
	st := a.Stmt
	rc := s.RC
	first := st.Subjects[0]
	if first.Name != s.Receipt.Path {
		c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "the first subject is %q, want the receipt %q", first.Name, s.Receipt.Path)
	} else if first.Digest != s.Receipt.Digest {
		c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "the first subject binds the receipt as %s, the receipt is %s", first.Digest, s.Receipt.Digest)
	}
	want := map[string]string{}
	var wantOrder []string
	for _, art := range ArtifactsOfKind(rc, contract.SubjectKinds...) {
		if _, dup := want[art.Path]; !dup {
			wantOrder = append(wantOrder, art.Path)
		}
		want[art.Path] = art.Digest
	}
	got := map[string]bool{}
	for i, sub := range st.Subjects[1:] {
		if got[sub.Name] || sub.Name == s.Receipt.Path {
			c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "subject %d (%s) repeats", i+1, sub.Name)
			continue
		}
		got[sub.Name] = true
		switch d, ok := want[sub.Name]; {
		case !ok:
			c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "subject %d (%s) is not a case result, request records, lifecycle record or server log of the receipt", i+1, sub.Name)
		case d != sub.Digest:
			c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "subject %d (%s) binds %s, the receipt binds %s", i+1, sub.Name, sub.Digest, d)
		}
	}
	for _, p := range wantOrder {
		if !got[p] {
			c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "the receipt's %s is not a subject", p)
		}
	}
	// The predicate repeats the receipt's fields.
	tree := s.RCTree
	env, _ := tree["environment"].(map[string]any) // not a contract value: the receipt's member name
	qual, _ := tree["qualification"].(map[string]any)
	var arts []any
	if list, ok := tree["artifacts"].([]any); ok {
		for _, x := range list {
			if m, ok := x.(map[string]any); ok {
				if k, _ := m["kind"].(string); !contract.Kinds[contract.ArtifactKind(k)].Evidence {
					arts = append(arts, m)
				}
			}
		}
	}
	if arts == nil {
		arts = []any{}
	}
	expect := map[string]any{
		"receipt_id": tree["receipt_id"],
		"source":     tree["source"],
		"artifacts":  arts,
		"workload":   tree["workload"], // not a contract value: the receipt's member name
		"host_id":    env["host_id"],
		"qualrun":    qual["qualrun"],
	}
	for _, k := range load.PredicateFields {
		v, ok := st.Predicate[k]
		switch {
		case !ok:
			c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "the predicate has no %s", k)
		case !finding.CanonicalEqual(v, expect[k]):
			c.Add(a.Path, "/payload", reason.ErrStatementMismatch, "the predicate's %s differs from the receipt's", k)
		}
	}
}

// keylessFinding adds the finding of a keyless attestation that did not verify: its keyless
// reason, else bad_signature.
func keylessFinding(c *finding.Collector, a *load.Attestation) {
	for _, r := range reason.Keyless {
		if errors.Is(a.KeylessErr, r) {
			c.AddCause(a.Path, "/verificationMaterial", r, a.KeylessErr)
			return
		}
	}
	c.Add(a.Path, "", reason.ErrBadSignature, "%v", a.KeylessErr)
}
