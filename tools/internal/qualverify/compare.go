package qualverify

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/tools/internal/cliapp"
	"github.com/qualkit/qualkit/tools/internal/exitcode"
	"github.com/qualkit/qualkit/verify"
	"github.com/urfave/cli/v2"
)

func compareCommand() *cli.Command {
	return &cli.Command{
		Name:      "compare",
		Usage:     "compare a candidate receipt with a baseline under their workload's comparison policy",
		ArgsUsage: "BASELINE CANDIDATE",
		Description: "Both receipts are verified first (signatures too when --key or the policy pins keys; publication is\n" +
			"not required unless the policy says so). The workload's comparison_policy decides the mode:\n" +
			"  same_environment_performance  one variant, identical environment and bound inputs\n" +
			"  declared_ab_variants          a declared (baseline, candidate) variant pair; the effective configs differ\n" +
			"                                exactly at the declared paths; a variant against itself is same-environment\n" +
			"  cross_backend_correctness     a declared backend pair; environment differences only at declared paths;\n" +
			"                                correctness rules only, plus equal outputs row by row\n" +
			"Rows are matched by (case, repetition, concurrency, row repetition) and must be like for like: same\n" +
			"prompt set, same schedule, one formula id per metric name (a request-window throughput is never\n" +
			"compared with a decode rate). Then each metric rule: tolerance = max(absolute, |baseline| x relative);\n" +
			"equal / not_greater / not_less compare the two recorded numbers exactly within it, and\n" +
			"not_worse_significantly (performance rules of scope row, a declared confidence, at least 20 samples a\n" +
			"side) tests the per-request samples recomputed from both sides' records (Mann-Whitney U) and fails\n" +
			"only on a significant change worse than the tolerance: use it for latencies, which flip an exact rule\n" +
			"on noise (docs/verification.md, Statistical rules).\n" +
			"Exit 0: compatible, both sides verified and every rule held; 1: not (differences and failures printed);\n" +
			"2: usage; 3: the comparison could not be carried out.",
		Flags: append(trustFlags(),
			&cli.BoolFlag{Name: "json", Usage: "print the comparison report (qualkit.comparison.v1) as JSON"},
		),
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return fmt.Errorf("%w: compare needs BASELINE and CANDIDATE, got %d arguments", exitcode.ErrUsage, c.NArg())
			}
			policy, opts, err := policyFromFlags(c, false)
			if err != nil {
				return err
			}
			base, err := locate(c.Args().Get(0), "")
			if err != nil {
				return err
			}
			cand, err := locate(c.Args().Get(1), "")
			if err != nil {
				return err
			}
			return runCompare(c.Context, base, cand, policy, opts, c.Bool("json"), c.App.Writer)
		},
	}
}

// comparisonJSON renders the comparison report (qualkit.comparison.v1) and checks it against its
// own contract: a report that does not validate is a qualverify bug, never printed as if it were one.
func comparisonJSON(cmp *verify.Comparison) ([]byte, error) {
	b, err := json.MarshalIndent(cmp.Report(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode comparison: %w", err)
	}
	if err := schemas.CheckAs(b, "the comparison report", contract.Comparison); err != nil {
		return nil, fmt.Errorf("the comparison report does not validate (a qualverify bug): %w", err)
	}
	return b, nil
}

func runCompare(ctx context.Context, base, cand verify.Evidence, policy verify.Policy, opts []verify.Option, asJSON bool, w io.Writer) error {
	cmp, err := verify.Compare(ctx, base, cand, policy, opts...)
	if err != nil {
		return verifyError(base.Receipt+" and "+cand.Receipt, err)
	}
	if asJSON {
		b, err := comparisonJSON(cmp)
		if err != nil {
			return err
		}
		fmt.Fprintln(w, string(b))
	} else {
		printComparison(w, cmp)
	}
	if !cmp.OK {
		return fmt.Errorf("%w: the comparison is not ok", exitcode.ErrRejected)
	}
	return nil
}

func printComparison(w io.Writer, cmp *verify.Comparison) {
	cliapp.Fprintf(w, "baseline   %s (%s, variant %s, backend %s, host %s)\n", cmp.Baseline.Receipt, cmp.Baseline.ReceiptID, cmp.Baseline.Variant, cmp.Baseline.Backend, cmp.Baseline.HostID)
	cliapp.Fprintf(w, "candidate  %s (%s, variant %s, backend %s, host %s)\n", cmp.Candidate.Receipt, cmp.Candidate.ReceiptID, cmp.Candidate.Variant, cmp.Candidate.Backend, cmp.Candidate.HostID)
	mode := string(cmp.Mode)
	if mode == "" {
		mode = "none" // not a contract value: the summary's word for no mode
	}
	cliapp.Fprintf(w, "mode       %s\n", mode)
	for _, d := range cmp.Rejected {
		cliapp.Fprintf(w, "rejected   %s: %v [%s] (baseline %s, candidate %s)\n", d.Path, d.Err, d.Code(), show(d.Baseline), show(d.Candidate))
	}
	for _, d := range cmp.Allowed {
		cliapp.Fprintf(w, "allowed    %s: %v (baseline %s, candidate %s)\n", d.Path, d.Err, show(d.Baseline), show(d.Candidate))
	}
	for _, e := range cmp.EvidenceErrors {
		cliapp.Fprintf(w, "evidence   %s: %v [%s]\n", e.Side, e.Finding, e.Code())
	}
	if len(cmp.Evaluations) > 0 {
		tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintln(tw, "SCOPE\tOPERATOR\tBASELINE\tCANDIDATE\tSTATUS\tREASON")
		for _, e := range cmp.Evaluations {
			cliapp.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Scope, e.Operator, num(e.Baseline), num(e.Candidate), e.Status, e.Reason)
		}
		tw.Flush()
	}
	for _, e := range cmp.Evaluations {
		if g := e.Significance; g != nil {
			change := "no significant change"
			if g.Significant {
				change = "significant"
			}
			cliapp.Fprintf(w, "test       %s: %s, baseline n %d, candidate n %d (minimum %d), shift %.4g %s [%.4g, %.4g] at confidence %.4g, p %.3g: %s at %.4g (minimum effect %.4g %s)\n",
				e.Scope, g.Test, g.BaselineSamples, g.CandidateSamples, g.MinimumSamples, g.Shift, e.Unit, g.ShiftLow, g.ShiftHigh, g.ShiftConfidence, g.PValue, change, g.Confidence, g.MinimumEffect, e.Unit)
			if g.IntervalMinimumSamples != nil {
				cliapp.Fprintf(w, "interval   %s: %s, %s (seeded percentile bootstrap)\n", e.Scope,
					sideInterval("baseline", e.Aggregation, g.BaselineSamples, *g.IntervalMinimumSamples, g.BaselineInterval, e.Unit),
					sideInterval("candidate", e.Aggregation, g.CandidateSamples, *g.IntervalMinimumSamples, g.CandidateInterval, e.Unit))
			}
		}
	}
	for _, wn := range cmp.Warnings {
		cliapp.Fprintf(w, "warning: %s\n", wn)
	}
	verdict := "ok"
	switch {
	case !cmp.Compatible:
		verdict = "not comparable"
	case !cmp.OK:
		verdict = "not ok"
	}
	cliapp.Fprintf(w, "result     %s\n", verdict)
}

// sideInterval prints one side's bootstrap interval of a percentile, or says it has too few
// samples for one.
func sideInterval(side, aggregation string, n, least int64, in *contract.ComparisonInterval, unit string) string {
	if in == nil {
		return fmt.Sprintf("%s %s: too few samples for an interval (%d < %d)", side, aggregation, n, least)
	}
	return fmt.Sprintf("%s %s %.4g %s [%.4g, %.4g] at %.4g", side, aggregation, in.Estimate, unit, in.Low, in.High, in.Confidence)
}

func show(v any) string {
	if v == nil {
		return "none" // not a contract value: the summary's word for an absent value
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func num(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.6g", *p)
}
