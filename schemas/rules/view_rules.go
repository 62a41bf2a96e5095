package rules

import "github.com/qualkit/qualkit/schemas/contract"

// CheckReportView applies the report view's rules that its schema cannot express.
func CheckReportView(v *contract.ReportViewDoc) []Problem {
	r := &rules{}
	allVerified := true
	for i, rc := range v.Receipts {
		vf := rc.Verification
		if vf.Verdict != contract.VerificationVerdictVerified {
			allVerified = false
		}
		if (vf.Verdict == contract.VerificationVerdictVerified) != (len(vf.Findings) == 0) {
			r.add(ptr("receipts", i, "verification", "verdict"), "verdict %s does not match %d findings", vf.Verdict, len(vf.Findings))
		}
		for j, c := range rc.Cases {
			if c.Driver != nil {
				r.viewDriver(ptr("receipts", i, "cases", j, "driver"), c.Driver)
			}
		}
	}
	if v.Verified != allVerified {
		r.add("/verified", "verified is %v but %s", v.Verified, map[bool]string{true: "every receipt verified", false: "a receipt was rejected"}[allVerified])
	}
	if v.Unverified && v.Verified {
		r.add("/unverified", "a view of evidence that verified is not unverified")
	}
	if len(v.Receipts) > 0 && len(v.Comparisons) != len(v.Receipts)-1 {
		r.add("/comparisons", "%d comparisons for %d receipts: each later receipt is compared with the first", len(v.Comparisons), len(v.Receipts))
	}
	for i, c := range v.Comparisons {
		if i+1 >= len(v.Receipts) {
			break
		}
		if c.Baseline != v.Receipts[0].Path {
			r.add(ptr("comparisons", i, "baseline"), "baseline %q is not the first receipt %q", c.Baseline, v.Receipts[0].Path)
		}
		if c.Candidate != v.Receipts[i+1].Path {
			r.add(ptr("comparisons", i, "candidate"), "candidate %q is not receipt %d %q", c.Candidate, i+1, v.Receipts[i+1].Path)
		}
		if c.OK && !c.Compatible {
			r.add(ptr("comparisons", i, "ok"), "an incompatible comparison is not ok")
		}
		if c.Compatible && len(c.Rejected) > 0 {
			r.add(ptr("comparisons", i, "compatible"), "a comparison with %d rejected differences is not compatible", len(c.Rejected))
		}
	}
	return r.out
}

// viewDriver: a driver section carries the body and the verdict members of its contract, and
// only those.
func (r *rules) viewDriver(base string, d *contract.ViewDriver) {
	want := map[string]string{
		"qualkit." + contract.NextTokenResult:  "next_token",
		"qualkit." + contract.PathAttribution:  "path_attribution",
		"qualkit." + contract.LayerAttribution: "layer_attribution",
	}[string(d.Contract)]
	v := d.Verdict
	has := func(at string, set, wanted bool) {
		switch {
		case set && !wanted:
			r.add(at, "a %s section has no %s", d.Contract, at[len(base)+1:])
		case !set && wanted:
			r.add(at, "a %s section needs %s", d.Contract, at[len(base)+1:])
		}
	}
	has(base+"/next_token", d.NextToken != nil, want == "next_token")
	has(base+"/path_attribution", d.PathAttribution != nil, want == "path_attribution")
	has(base+"/layer_attribution", d.LayerAttribution != nil, want == "layer_attribution")
	has(base+"/verdict/argmax_candidate", v.ArgmaxCandidate != nil, want == "next_token")
	has(base+"/verdict/candidate_attribution_complete", v.CandidateAttributionComplete != nil, want == "next_token")
	has(base+"/verdict/attribution", v.Attribution != nil, want == "path_attribution")
	has(base+"/verdict/largest_relative_error_growth", v.LargestGrowth != nil, want == "layer_attribution")
}
