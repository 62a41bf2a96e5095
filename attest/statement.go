package attest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	ita1 "github.com/in-toto/attestation/go/v1"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/attestfmt"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
)

// Sentinel errors; match them with errors.Is.
var (
	// ErrReceipt: the receipt is not a valid qualkit.receipt.v1 document.
	ErrReceipt = errors.New("invalid receipt")
	// ErrSubject: a file the Statement must bind is missing, unreadable, outside the repository,
	// or differs from the digest the receipt records for it.
	ErrSubject = errors.New("subject refused")
	// ErrPath: a path breaks the evidence path rules (absolute, a .. element, a symlink component,
	// or a file that already exists: evidence is never replaced).
	ErrPath = evidence.ErrPath
)

// Predicate is the qualification predicate (attestfmt.PredicateType): what the campaign bound, copied from
// the receipt. Its JSON keys are fixed by the verify module.
type Predicate struct {
	ReceiptID string `json:"receipt_id"`
	// Source is the receipt's source identity: repository, commit, tree, tree hash, origin/main, clean.
	Source contract.Source `json:"source"`
	// Artifacts are the receipt's bound inputs in receipt order (model files, tokenizer, config,
	// server binary, launch recipe, runtime manifest, workload, corpus, effective run config): every
	// artifact whose kind is not a per-run output.
	Artifacts []contract.Artifact `json:"artifacts"`
	// Workload is the receipt's workload reference: id, path, digest, variant, variables, seed.
	Workload contract.WorkloadRef `json:"workload"`
	HostID   string               `json:"host_id"`
	// Qualrun identifies the binary that wrote the receipt (version and digest).
	Qualrun contract.BinaryInfo `json:"qualrun"`
}

// InTotoStatement is the in-toto Statement v1 of one receipt and the exact bytes that get signed.
// (Go does not allow the function Statement and a type of the same name in one package.)
type InTotoStatement struct {
	// Receipt is the receipt's path relative to the repository root, with forward slashes.
	Receipt string
	// InToto is the validated Statement: the receipt and its evidence files as subjects, then
	// attestfmt.PredicateType and the predicate.
	InToto *ita1.Statement
	// Predicate is the predicate as Go values (InToto carries the same as a structpb.Struct).
	Predicate Predicate
	// Payload is the compact JSON encoding of InToto: the DSSE payload.
	Payload []byte
}

// Statement reads the receipt root/receiptRel strictly (it must validate as qualkit.receipt.v1),
// hashes it and every evidence file it binds (case results, request records, lifecycle record,
// server log) under root, and returns the Statement. Each file's sha256 must equal the digest the
// receipt records for it; subject names are the paths relative to root, as the receipt writes them.
func Statement(root, receiptRel string) (*InTotoStatement, error) {
	rel, err := cleanRel(receiptRel)
	if err != nil {
		return nil, err
	}
	if err := evidence.CheckNoSymlink(root, rel); err != nil {
		return nil, err
	}
	data, err := evidence.ReadFileLimited(filepath.Join(root, filepath.FromSlash(rel)), MaxReceiptBytes)
	if err != nil {
		return nil, fmt.Errorf("read receipt %s: %w", rel, err)
	}
	rc, err := parseReceipt(rel, data)
	if err != nil {
		return nil, err
	}
	n := 1
	for _, a := range rc.Artifacts {
		if contract.Kinds[a.Kind].Subject {
			n++
		}
	}
	if n > MaxSubjects {
		return nil, fmt.Errorf("%w: %d subjects, more than %d (sigstore verifiers refuse such statements)", ErrSubject, n, MaxSubjects)
	}
	sum := sha256.Sum256(data)
	subjects := []*ita1.ResourceDescriptor{{Name: rel, Digest: map[string]string{"sha256": hex.EncodeToString(sum[:])}}}
	pred := Predicate{ReceiptID: rc.ReceiptID, Source: rc.Source, Artifacts: []contract.Artifact{}, Workload: rc.Workload,
		HostID: rc.Environment.HostID, Qualrun: rc.Qualification.Qualrun}
	seen := map[string]bool{rel: true}
	// The contracts declare each artifact kind's role (contract.Kinds): the subjects follow the
	// receipt in receipt order; the per-run evidence (the subjects and the captured case output
	// streams) stays out of the predicate.
	for i, a := range rc.Artifacts {
		if !contract.Kinds[a.Kind].Evidence {
			pred.Artifacts = append(pred.Artifacts, a)
		}
		if !contract.Kinds[a.Kind].Subject {
			continue
		}
		hexDigest, err := hashSubject(root, a)
		if err != nil {
			return nil, fmt.Errorf("artifacts[%d]: %w", i, err)
		}
		if seen[a.Path] {
			return nil, fmt.Errorf("%w: artifacts[%d]: %s is bound twice", ErrSubject, i, a.Path)
		}
		seen[a.Path] = true
		subjects = append(subjects, &ita1.ResourceDescriptor{Name: a.Path, Digest: map[string]string{"sha256": hexDigest}})
	}
	predJSON, err := json.Marshal(pred)
	if err != nil {
		return nil, fmt.Errorf("encode predicate: %w", err)
	}
	ps := &structpb.Struct{}
	if err := protojson.Unmarshal(predJSON, ps); err != nil {
		return nil, fmt.Errorf("encode predicate: %w", err)
	}
	st := &ita1.Statement{Type: attestfmt.StatementType, Subject: subjects, PredicateType: attestfmt.PredicateType, Predicate: ps}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("in-toto statement: %w", err)
	}
	raw, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("encode statement: %w", err)
	}
	// protojson varies its whitespace on purpose; the signed bytes are the compact form.
	var payload bytes.Buffer
	if err := json.Compact(&payload, raw); err != nil {
		return nil, fmt.Errorf("encode statement: %w", err)
	}
	return &InTotoStatement{Receipt: rel, InToto: st, Predicate: pred, Payload: payload.Bytes()}, nil
}

// parseReceipt checks data as a receipt (strict JSON, schema, semantic rules) and decodes it.
func parseReceipt(rel string, data []byte) (*contract.ReceiptDoc, error) {
	out, err := schemas.CheckDocument(data)
	if err != nil {
		return nil, fmt.Errorf("check receipt %s: %w", rel, err)
	}
	if !out.Valid() {
		lines := make([]string, len(out.Violations))
		for i, v := range out.Violations {
			lines[i] = v.Error()
		}
		return nil, fmt.Errorf("%w: %s: %s", ErrReceipt, rel, strings.Join(lines, "; "))
	}
	if out.Contract.Name != contract.Receipt {
		return nil, fmt.Errorf("%w: %s is a %s document, not a receipt", ErrReceipt, rel, out.Contract.SchemaID)
	}
	var rc contract.ReceiptDoc
	if err := jsonstrict.DecodeInto(data, &rc); err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrReceipt, rel, err)
	}
	return &rc, nil
}

// hashSubject hashes the evidence file a binds and checks it against the receipt's digest.
func hashSubject(root string, a contract.Artifact) (string, error) {
	rel, err := cleanRel(a.Path)
	if err != nil || rel != a.Path {
		return "", fmt.Errorf("%w: %s %q must be a clean path relative to the repository root", ErrSubject, a.Kind, a.Path)
	}
	if err := evidence.CheckNoSymlink(root, rel); err != nil {
		return "", fmt.Errorf("%w: %s: %w", ErrSubject, a.Path, err)
	}
	d, _, err := evidence.DigestFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		return "", fmt.Errorf("%w: %s %s: %w", ErrSubject, a.Kind, a.Path, err)
	}
	if d != a.Digest {
		return "", fmt.Errorf("%w: %s %s is %s on disk, the receipt records %s", ErrSubject, a.Kind, a.Path, d, a.Digest)
	}
	return strings.TrimPrefix(d, "sha256:"), nil
}

// cleanRel turns p into a clean slash-separated path relative to a root, refusing absolute paths
// and .. elements.
func cleanRel(p string) (string, error) {
	s := filepath.ToSlash(p)
	if s == "" || strings.HasPrefix(s, "/") || filepath.IsAbs(p) {
		return "", fmt.Errorf("%w: %q must be relative to the repository root", ErrPath, p)
	}
	for _, part := range strings.Split(s, "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q contains a .. element", ErrPath, p)
		}
	}
	c := path.Clean(s)
	if c == "." {
		return "", fmt.Errorf("%w: %q names the repository root, not a file", ErrPath, p)
	}
	return c, nil
}
