package report

import (
	"fmt"
	"path"
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/verify"
	"github.com/qualkit/qualkit/verify/report/internal/format"
)

// The parts of a driver section are the contract's types. A Driver is a driver case's evidence
// result (docs/drivers.md): its verdict, how the worker was contained, what it ran on, the
// tolerance outcomes and the contract's numbers, all as the result file verify read and re-checked
// records them (floats unrounded). Exactly one of NextToken, PathAttribution and LayerAttribution
// is set.
type (
	Driver           = contract.ViewDriver
	Containment      = contract.ViewContainment
	DriverVerdict    = contract.ViewDriverVerdict
	Growth           = contract.ViewGrowth
	Implementation   = contract.ViewImplementation
	DriverRequest    = contract.ViewDriverRequest
	DriverModel      = contract.ViewDriverModel
	Tolerance        = contract.ViewTolerance
	NextToken        = contract.ViewNextToken
	TopToken         = contract.ViewTopToken
	CandidateToken   = contract.ViewCandidateToken
	PathAttribution  = contract.ViewPathAttribution
	PathRow          = contract.ViewPathRow
	LayerAttribution = contract.ViewLayerAttribution
	BoundaryRow      = contract.ViewBoundaryRow
)

// isolated says whether the probe saw what a passing result needs: only lo, the outside and the
// host's loopback unreachable, a loopback socket bindable.
func isolated(c Containment) bool {
	return len(c.Interfaces) == 1 && c.Interfaces[0] == "lo" && c.OutsideUnreachable && c.HostLoopbackUnreachable && c.LoopbackBind
}

// contractTitles name the driver contracts for people.
var contractTitles = map[string]contract.DriverTitle{
	contract.NextTokenResultSchema:  contract.DriverTitleNextTokenResult,
	contract.PathAttributionSchema:  contract.DriverTitlePathAttribution,
	contract.LayerAttributionSchema: contract.DriverTitleLayerAttribution,
}

// driverOf builds a driver case's section from its evidence; artifacts are the receipt's (the
// worker output and log are found beside the result).
func driverOf(de *verify.DriverEvidence, artifacts []Artifact) *Driver {
	h := de.Header()
	d := &Driver{Contract: contract.ResultContract(de.Contract), Title: contractTitles[de.Contract], Result: de.Path, ResultDigest: de.Digest,
		ResultSHA256: h.ResultSHA256, CreatedAt: h.CreatedAt, DurationSeconds: h.DurationSeconds,
		Tolerances: []Tolerance{}, Mismatches: []string{}}
	dir := path.Dir(de.Path)
	for _, a := range artifacts {
		if path.Dir(a.Path) != dir {
			continue
		}
		switch a.Kind {
		case contract.ArtifactKindDriverWorkerOutput:
			d.WorkerOutput = a.Path
		case contract.ArtifactKindDriverLog:
			d.WorkerLog = a.Path
		}
	}
	c := h.Containment
	d.Containment = Containment{Network: c.Network, Mechanism: c.Mechanism, Interfaces: nonNil(c.Probe.Interfaces),
		OutsideUnreachable: c.Probe.OutsideUnreachable, LoopbackBind: c.Probe.LoopbackBind, HostLoopbackUnreachable: c.Probe.HostLoopbackUnreachable,
		StartGate: c.StartGate, HashBoundExec: c.HashBoundExec, EnvironmentNames: nonNil(c.EnvironmentNames), TimeoutSeconds: c.TimeoutSeconds,
		ElapsedSeconds: c.ElapsedSeconds, ExitCode: c.ExitCode, TimedOut: c.TimedOut, Forced: c.Forced, Residue: nonNil(c.Residue)}
	im := h.Implementation
	d.Implementation = Implementation{Executable: im.Executable.Path, ExecutableDigest: im.Executable.Digest, Script: im.Script.Path,
		ScriptDigest: im.Script.Digest, QualrunVersion: im.Qualrun.Version, QualrunDigest: im.Qualrun.Digest}
	d.Request = DriverRequest{ID: h.Request.ID, Path: h.Request.Path, Digest: h.Request.Digest, InputTokenCount: h.Request.InputTokenCount,
		InputTokenIDsSHA256: h.Request.InputTokenIDsSHA256}
	d.Model = DriverModel{ID: h.Model.ID, Path: h.Model.Path, Digest: h.Model.Digest}
	failed := map[string][]string{} // subject -> metrics failed
	for _, o := range h.Tolerances {
		d.Tolerances = append(d.Tolerances, Tolerance{Metric: o.Metric, Subject: o.Subject, Op: o.Op, Limit: o.Limit, Observed: o.Observed, Passed: o.Passed})
		if !o.Passed {
			failed[o.Subject] = append(failed[o.Subject], string(o.Metric))
		}
	}
	if de.Recomputed == nil && len(h.Tolerances) > 0 {
		d.Mismatches = append(d.Mismatches, "the tolerance outcomes could not be recomputed from the result's numbers")
	}
	for k, w := range de.Recomputed {
		if k >= len(h.Tolerances) {
			break
		}
		g := h.Tolerances[k]
		same := (g.Observed == nil) == (w.Observed == nil) && (g.Observed == nil || *g.Observed == *w.Observed)
		if !same || g.Passed != w.Passed {
			d.Mismatches = append(d.Mismatches, clip(fmt.Sprintf("%s %s %s for %s: recorded observed %s passed %v, recomputed observed %s passed %v",
				g.Metric, g.Op, format.Exact(g.Limit), g.Subject, format.ExactPtr(g.Observed), g.Passed, format.ExactPtr(w.Observed), w.Passed), maxDriverMismatch))
		}
	}
	switch {
	case de.NextToken != nil:
		doc := de.NextToken
		d.Verdict = verdictOf(doc.Verdict.Status, doc.Verdict.Reasons)
		ac, complete := doc.Verdict.ArgmaxCandidate, doc.Verdict.CandidateAttributionComplete
		d.Verdict.ArgmaxCandidate, d.Verdict.CandidateAttributionComplete = &ac, &complete
		d.NextToken = nextTokenOf(doc.Oracle)
	case de.PathAttribution != nil:
		doc := de.PathAttribution
		d.Verdict = verdictOf(doc.Verdict.Status, doc.Verdict.Reasons)
		attr := doc.Verdict.Attribution
		d.Verdict.Attribution = &attr
		pa := &PathAttribution{ReferencePath: doc.ReferencePath, ReferenceArgmax: doc.ReferenceArgmax, Paths: []PathRow{}}
		for _, p := range doc.Paths {
			pa.Paths = append(pa.Paths, PathRow{ID: p.ID, Argmax: p.Argmax, ArgmaxEqual: p.ArgmaxEqual, CosineSimilarity: p.CosineSimilarity,
				MaxAbsError: p.MaxAbsError, MeanAbsError: p.MeanAbsError, Top10Overlap: p.Top10Overlap, LogitsSHA256: p.LogitsSHA256,
				ReferenceLogitsSHA256: p.ReferenceLogitsSHA256, Failed: nonNil(contract.Enums[contract.DriverMetric](failed[p.ID])), Attributed: p.ID == attr})
		}
		d.PathAttribution = pa
	case de.LayerAttribution != nil:
		doc := de.LayerAttribution
		d.Verdict = verdictOf(doc.Verdict.Status, doc.Verdict.Reasons)
		g := doc.LargestRelativeErrorGrowth
		growth := Growth{Index: g.Index, Name: g.Name, Delta: g.RelativeRootMeanSquareErrorDelta}
		d.Verdict.LargestGrowth = &growth
		la := &LayerAttribution{Boundaries: []BoundaryRow{}, LargestGrowth: growth}
		limits := map[string]float64{}
		for _, o := range h.Tolerances {
			if o.Metric == rules.MetricRelativeRMSE && o.Op == rules.OpAtMost {
				limits[o.Subject] = o.Limit
			}
		}
		for i, b := range doc.Boundaries {
			delta := b.RelativeRootMeanSquareError
			if i > 0 {
				delta -= doc.Boundaries[i-1].RelativeRootMeanSquareError
			}
			row := BoundaryRow{Index: b.Index, Name: b.Name, CosineSimilarity: b.CosineSimilarity, MaxAbsError: b.MaxAbsError,
				MeanAbsError: b.MeanAbsError, RootMeanSquareError: b.RootMeanSquareError, ReferenceRootMeanSquare: b.ReferenceRootMeanSquare,
				RelativeRootMeanSquareError: b.RelativeRootMeanSquareError, ReferenceSHA256: b.ReferenceSHA256, CandidateSHA256: b.CandidateSHA256,
				Growth: delta, Largest: b.Index == g.Index && b.Name == g.Name, Failed: nonNil(contract.Enums[contract.DriverMetric](failed[b.Name]))}
			if l, ok := limits[b.Name]; ok {
				row.Limit = &l
			} else if l, ok := limits[rules.SubjectAll]; ok {
				row.Limit = &l
			}
			la.Boundaries = append(la.Boundaries, row)
		}
		d.LayerAttribution = la
	}
	return d
}

func verdictOf(status contract.DriverStatus, reasons []string) DriverVerdict {
	return DriverVerdict{Status: status, Reasons: nonNil(reasons)}
}

func nextTokenOf(o contract.Oracle) *NextToken {
	nt := &NextToken{Dtype: contract.NextTokenDtype(o.Dtype), Vocab: o.Vocab, ArgmaxTokenID: o.ArgmaxTokenID, TopLogitMargin: o.TopLogitMargin,
		TopTokens: []TopToken{}, CandidateTokens: []CandidateToken{}, LogitsSHA256: o.LogitsSHA256, LogitsBytes: o.LogitsBytes}
	for _, t := range o.TopTokens {
		// Every logit larger than a top token's is itself a top token: its rank is exact.
		rank := int64(1)
		for _, u := range o.TopTokens {
			if u.Logit > t.Logit {
				rank++
			}
		}
		tt := TopToken{Rank: rank, TokenID: t.TokenID, Logit: t.Logit, Candidates: []string{}}
		for _, c := range o.CandidateTokens {
			if c.TokenID == t.TokenID {
				tt.Candidates = append(tt.Candidates, c.Label)
			}
		}
		nt.TopTokens = append(nt.TopTokens, tt)
	}
	for _, c := range o.CandidateTokens {
		nt.CandidateTokens = append(nt.CandidateTokens, CandidateToken{Label: c.Label, TokenID: c.TokenID, Logit: c.Logit, Rank: c.Rank,
			Argmax: c.TokenID == o.ArgmaxTokenID})
	}
	return nt
}

// verdictLine is the driver verdict's contract-specific member, for people.
func verdictLine(d *Driver) string {
	v := d.Verdict
	var parts []string
	if v.ArgmaxCandidate != nil {
		s := "argmax candidate " + *v.ArgmaxCandidate
		if v.CandidateAttributionComplete != nil {
			if *v.CandidateAttributionComplete {
				s += ", attribution complete"
			} else {
				s += ", attribution incomplete"
			}
		}
		parts = append(parts, s)
	}
	if v.Attribution != nil {
		parts = append(parts, "attribution "+*v.Attribution)
	}
	if g := v.LargestGrowth; g != nil {
		parts = append(parts, fmt.Sprintf("largest relative error growth at %s (index %d, %s)", g.Name, g.Index, format.SignedExact(g.Delta)))
	}
	return strings.Join(parts, "; ")
}
