package driver

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/rules"
)

// ErrOutput: the worker's output cannot become a result (missing, not its contract, or not about
// the request it was given). Nothing of it is trusted.
var ErrOutput = errors.New("worker output refused")

// Provenance is what a result records besides the run itself.
type Provenance struct {
	// CaseID is the driver case's (or spec's) id.
	CaseID string
	// Source is the identity of the source tree the driver ran from.
	Source contract.DriverSource
	// Qualrun identifies the runner binary (also the guard's).
	Qualrun contract.BinaryInfo
	// Tolerances are the declared tolerances, evaluated against the worker's numbers.
	Tolerances []contract.DriverTolerance
	// CreatedAt stamps the result (defaults to now).
	CreatedAt time.Time
}

// Result is an evaluated run, ready to be written.
type Result struct {
	// Contract is the result contract name (e.g. "next-token-result.v2").
	Contract string
	// Doc is a *schemas.NextTokenResultDoc, *schemas.PathAttributionDoc or *schemas.LayerAttributionDoc.
	Doc any
	// Raw is the document as written: indented JSON with a final newline, self-hashed, valid.
	Raw []byte
	// Header is the members every result has (its Tolerances are the evaluated outcomes).
	Header contract.DriverResultHeader
	// Status and Reasons are the recomputed verdict's.
	Status  contract.DriverStatus
	Reasons []string
	// Summary says what the result shows, in one line (the argmax candidate, the attribution or
	// the largest error growth).
	Summary string
}

// ModelID names a model in results: the base name of its file or directory.
func ModelID(path string) string { return filepath.Base(filepath.Clean(path)) }

// Containment turns what a run observed into the result's containment section.
func Containment(job Job, out *Outcome) contract.Containment {
	c := contract.Containment{
		Network: rules.NetworkPrivateLoopback, Mechanism: Mechanism, StartGate: rules.StartGateAfterIsolation,
		Probe:            contract.Probe{Interfaces: []string{}},
		HashBoundExec:    out.HashBoundExec,
		EnvironmentNames: append([]string{}, out.EnvironmentNames...),
		TimeoutSeconds:   int64(job.Timeout / time.Second), ElapsedSeconds: out.Elapsed.Seconds(),
		TimedOut: out.TimedOut, Forced: out.Forced, Residue: []string{},
	}
	if p := out.Probe; p != nil {
		c.Probe = contract.Probe{Interfaces: append([]string{}, p.Interfaces...), OutsideUnreachable: p.OutsideUnreachable,
			LoopbackBind: p.LoopbackBind, HostLoopbackUnreachable: p.HostLoopbackUnreachable}
	}
	if out.ExitCode != nil && *out.ExitCode >= 0 && *out.ExitCode <= 255 {
		code := int64(*out.ExitCode)
		c.ExitCode = &code
	}
	for _, r := range out.Residue {
		c.Residue = append(c.Residue, clipRunes(r, 512))
	}
	if len(c.Residue) > 64 {
		c.Residue = append(c.Residue[:63], fmt.Sprintf("%d more processes", len(out.Residue)-63))
	}
	return c
}

func clipRunes(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-3]) + "..."
	}
	return s
}

// Evaluate turns a run's outcome into its version-2 result. The worker output must satisfy its
// contract (schemas.CheckDocument: every derived field in it is checked against its numbers), be
// for the job's contract, name the request's id and input token digest, and answer exactly the
// request's candidates (next-token) or paths (path attribution). The runner then evaluates the
// declared tolerances, recomputes the verdict (schemas.*VerdictOf, which also fails a run whose
// containment was not complete), self-hashes the document and validates it. An error wrapping
// ErrOutput means there is no result to write.
func Evaluate(job Job, out *Outcome, prov Provenance) (*Result, error) {
	if out.Output == nil {
		why := "no worker output"
		if len(out.Failures) > 0 {
			why += ": " + strings.Join(out.Failures, "; ")
		}
		return nil, fmt.Errorf("%w: %s", ErrOutput, why)
	}
	if out.RequestDoc == nil {
		return nil, fmt.Errorf("%w: no request", ErrOutput)
	}
	if err := validDocument(out.Output, "worker output", contract.DriverWorkerOutput); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	var wo contract.DriverWorkerOutputDoc
	if err := jsonstrict.DecodeInto(out.Output, &wo); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrOutput, err)
	}
	req := out.RequestDoc
	contractID := strings.TrimPrefix(job.Contract, "qualkit.")
	switch {
	case strings.TrimPrefix(string(wo.Contract), "qualkit.") != contractID:
		return nil, fmt.Errorf("%w: the worker wrote a %s, the case asks for %s", ErrOutput, wo.Contract, job.Contract)
	case wo.RequestID != req.ID:
		return nil, fmt.Errorf("%w: the worker answered request %q, it was given %q", ErrOutput, wo.RequestID, req.ID)
	case wo.InputTokenIDsSHA256 != rules.TokenIDsDigest(req.InputTokenIDs):
		return nil, fmt.Errorf("%w: input_token_ids_sha256 %s is not the request's %s", ErrOutput, wo.InputTokenIDsSHA256, rules.TokenIDsDigest(req.InputTokenIDs))
	}
	created := prov.CreatedAt
	if created.IsZero() {
		created = time.Now()
	}
	tolerances := prov.Tolerances
	if tolerances == nil {
		tolerances = []contract.DriverTolerance{}
	}
	h := contract.DriverResultHeader{
		CreatedAt: created.UTC().Format(time.RFC3339Nano), DurationSeconds: out.Elapsed.Seconds(),
		CaseID: prov.CaseID, Source: prov.Source,
		Implementation: contract.DriverImplementation{
			Executable: contract.FileRef{Path: out.Executable.Path, Digest: out.Executable.Digest},
			Script:     contract.FileRef{Path: out.Script.Path, Digest: out.Script.Digest},
			Qualrun:    prov.Qualrun,
		},
		Request: contract.DriverRequestRef{Path: job.Request.Path, Digest: job.Request.Digest, ID: req.ID,
			InputTokenCount: int64(len(req.InputTokenIDs)), InputTokenIDsSHA256: rules.TokenIDsDigest(req.InputTokenIDs)},
		Model:       contract.DriverModel{ID: ModelID(job.Model.Abs), Path: job.Model.Path, Digest: job.Model.Digest},
		Containment: Containment(job, out),
	}
	res := &Result{Contract: contractID}
	var doc any
	switch contractID {
	case contract.NextTokenResult:
		b, ok := wo.NextTokenBody()
		if !ok {
			return nil, fmt.Errorf("%w: no oracle in the body", ErrOutput)
		}
		if err := sameCandidates(req.Candidates, b.Oracle.CandidateTokens); err != nil {
			return nil, err
		}
		outcomes, err := rules.EvaluateTolerances(contractID, tolerances, b)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
		h.Tolerances = outcomes
		d := &contract.NextTokenResultDoc{Schema: contract.NextTokenResultSchema, DriverResultHeader: h, NextTokenBody: b, Verdict: rules.NextTokenVerdictOf(h.Containment, outcomes, b.Oracle)}
		res.Status, res.Reasons = d.Verdict.Status, d.Verdict.Reasons
		res.Summary = fmt.Sprintf("argmax token %d (margin %s), argmax candidate %s", b.Oracle.ArgmaxTokenID, rules.FormatNumber(b.Oracle.TopLogitMargin), d.Verdict.ArgmaxCandidate)
		doc = d
	case contract.PathAttribution:
		b, ok := wo.PathBody()
		if !ok {
			return nil, fmt.Errorf("%w: no reference path, reference argmax or paths in the body", ErrOutput)
		}
		ids := make([]string, len(b.Paths))
		for i, p := range b.Paths {
			ids[i] = p.ID
		}
		if !slices.Equal(ids, req.Paths) {
			return nil, fmt.Errorf("%w: the worker compared paths %v, the request asks for %v in that order", ErrOutput, ids, req.Paths)
		}
		outcomes, err := rules.EvaluateTolerances(contractID, tolerances, b)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
		h.Tolerances = outcomes
		d := &contract.PathAttributionDoc{Schema: contract.PathAttributionSchema, DriverResultHeader: h, PathBody: b, Verdict: rules.PathVerdictOf(h.Containment, outcomes, b)}
		res.Status, res.Reasons = d.Verdict.Status, d.Verdict.Reasons
		res.Summary = fmt.Sprintf("reference argmax %d, attribution %s", b.ReferenceArgmax, d.Verdict.Attribution)
		doc = d
	case contract.LayerAttribution:
		b, ok := wo.LayerBody()
		if !ok {
			return nil, fmt.Errorf("%w: no boundaries or largest growth in the body", ErrOutput)
		}
		outcomes, err := rules.EvaluateTolerances(contractID, tolerances, b)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrOutput, err)
		}
		h.Tolerances = outcomes
		b.LargestRelativeErrorGrowth = rules.LargestGrowth(b.Boundaries) // equal to the worker's (checked above)
		d := &contract.LayerAttributionDoc{Schema: contract.LayerAttributionSchema, DriverResultHeader: h, LayerBody: b, Verdict: rules.LayerVerdictOf(h.Containment, outcomes)}
		res.Status, res.Reasons = d.Verdict.Status, d.Verdict.Reasons
		g := b.LargestRelativeErrorGrowth
		res.Summary = fmt.Sprintf("largest relative error growth at %s (index %d, +%s)", g.Name, g.Index, rules.FormatNumber(g.RelativeRootMeanSquareErrorDelta))
		doc = d
	default:
		return nil, fmt.Errorf("%w: %s is not a driver result contract", ErrOutput, job.Contract)
	}
	sum, err := jsonstrict.SelfHash(doc, rules.ResultSelfHashField)
	if err != nil {
		return nil, err
	}
	switch d := doc.(type) {
	case *contract.NextTokenResultDoc:
		d.ResultSHA256 = sum
		res.Header = d.DriverResultHeader
	case *contract.PathAttributionDoc:
		d.ResultSHA256 = sum
		res.Header = d.DriverResultHeader
	case *contract.LayerAttributionDoc:
		d.ResultSHA256 = sum
		res.Header = d.DriverResultHeader
	}
	raw, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, err
	}
	raw = append(raw, '\n')
	if err := validDocument(raw, "driver result", contractID); err != nil {
		return nil, fmt.Errorf("the driver result does not validate (a qualkit bug): %w", err)
	}
	res.Doc, res.Raw = doc, raw
	return res, nil
}

// sameCandidates checks that the oracle answers exactly the request's candidates, in order.
func sameCandidates(want []contract.DriverCandidate, got []contract.CandidateToken) error {
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = want[i].Label == got[i].Label && want[i].TokenID == got[i].TokenID
	}
	if !ok {
		return fmt.Errorf("%w: the oracle's candidate tokens are not the request's candidates (%d asked, %d answered, or different labels, tokens or order)", ErrOutput, len(want), len(got))
	}
	return nil
}

// validDocument checks raw bytes against a contract: strict JSON, schema and semantic rules.
func validDocument(raw []byte, name, contractID string) error {
	out, err := schemas.CheckDocument(raw)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !out.Valid() {
		var lines []string
		for i, v := range out.Violations {
			if i == 8 {
				lines = append(lines, fmt.Sprintf("and %d more", len(out.Violations)-8))
				break
			}
			lines = append(lines, v.Error())
		}
		return fmt.Errorf("%s: %s", name, strings.Join(lines, "; "))
	}
	if out.Contract.Name != contractID {
		return fmt.Errorf("%s is a %s, not a %s", name, out.Contract.SchemaID, contractID)
	}
	return nil
}
