package campaign

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/qualkit/qualkit/runner/artifact"
	"github.com/qualkit/qualkit/runner/lifecycle"
	"github.com/qualkit/qualkit/schemas"
	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/evidence"
	"github.com/qualkit/qualkit/schemas/jsonstrict"
)

// ResultEnv is the environment variable that tells a command case where to write its case result.
const ResultEnv = "QUALKIT_CASE_RESULT"

// caseEnv builds a command case's closed environment: a minimal base, the declared values with
// placeholders substituted, and the result path.
func (p *Plan) caseEnv(c contract.Case, resultPath string) ([]string, error) {
	env := map[string]string{"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
	for _, k := range []string{"PATH", "HOME", "TMPDIR"} {
		if v, ok := os.LookupEnv(k); ok {
			env[k] = v
		}
	}
	for k, v := range c.Environment {
		s, err := substitute(v, p.placeholder)
		if err != nil {
			return nil, err
		}
		env[k] = s
	}
	env[ResultEnv] = resultPath
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out, nil
}

func (r *run) command(ctx context.Context, c contract.Case, rep int, dir string) (contract.Result, error) {
	p := r.p
	argv := make([]string, len(c.Command))
	for i, a := range c.Command {
		s, err := substitute(a, p.placeholder)
		if err != nil {
			return failedResult(c, rep, err.Error()), nil
		}
		argv[i] = s
	}
	resultRel := dir + "/result.json"
	if err := os.MkdirAll(r.abs(dir), 0o755); err != nil {
		return contract.Result{}, err
	}
	env, err := p.caseEnv(c, r.abs(resultRel))
	if err != nil {
		return failedResult(c, rep, err.Error()), nil
	}
	outRel, errRel := dir+"/stdout.log", dir+"/stderr.log"
	res, err := lifecycle.RunCommand(ctx, lifecycle.Command{
		Argv: argv, Dir: filepath.Join(p.root, c.WorkingDirectory), Env: env,
		Timeout: time.Duration(c.TimeoutSeconds) * time.Second, Grace: TerminationGrace,
		StdoutPath: r.abs(outRel), StderrPath: r.abs(errRel), CaptureLimit: CaptureLimit,
		Keeper: p.cfg.Keeper, RunID: p.receiptID,
	})
	if err != nil {
		return failedResult(c, rep, "start: "+err.Error()), nil
	}
	r.evidence = append(r.evidence,
		artifact.File{Kind: contract.ArtifactKindCaseStdout, Path: outRel, Abs: r.abs(outRel)},
		artifact.File{Kind: contract.ArtifactKindCaseStderr, Path: errRel, Abs: r.abs(errRel)})
	for _, u := range res.Unsupported {
		if !slices.Contains(r.unsup, u) {
			r.unsup = append(r.unsup, u)
		}
	}

	var problems []string
	switch {
	case res.TimedOut:
		problems = append(problems, fmt.Sprintf("timed out after %d s", c.TimeoutSeconds))
	case res.Cancelled:
		problems = append(problems, "cancelled")
	}
	if !slices.Contains(c.ExpectedExitCodes, int64(res.ExitCode)) {
		problems = append(problems, fmt.Sprintf("exit code %d not in %v", res.ExitCode, c.ExpectedExitCodes))
	}
	if res.StdoutTruncated || res.StderrTruncated {
		problems = append(problems, fmt.Sprintf("output beyond %d bytes per stream was discarded", CaptureLimit))
	}
	if len(res.Residue) > 0 {
		var names []string
		for _, x := range res.Residue {
			names = append(names, fmt.Sprintf("%d (%s)", x.PID, x.Comm))
		}
		problems = append(problems, "command left descendant processes running: "+strings.Join(names, ", ")+" (killed)")
	}
	assertFailures := r.assertOutput(c, outRel, errRel)
	problems = append(problems, assertFailures...)

	status := contract.StatusPassed
	if len(problems) > 0 {
		status = contract.StatusFailed
	}
	rp := c.ResultProtocol
	var cr *contract.CaseResultDoc
	if rp != nil && rp.Producer == contract.ResultProtocolProducerCommand {
		got, why := r.readCommandResult(c, resultRel)
		if why != "" {
			problems = append(problems, why)
			status = contract.StatusFailed
		} else {
			cr = got
			if cr.Status != contract.StatusPassed {
				status = contract.StatusFailed
				problems = append(problems, "the command reported status "+string(cr.Status))
			}
		}
	}
	details := strings.Join(problems, "; ")
	if cr == nil {
		pass := 0.0
		if status == contract.StatusPassed {
			pass = 1
		}
		one := int64(1)
		cr = &contract.CaseResultDoc{Schema: contract.CaseResultSchema, CaseID: c.ID, Status: status, DurationSeconds: res.Duration.Seconds(),
			EffectiveConfig: p.variant.EffectiveConfig, Tolerances: []contract.Tolerance{}, Rows: []contract.Row{},
			Metrics: []contract.Metric{
				{Name: "case_pass", Value: pass, Unit: "bool", Aggregation: contract.AggregationExact, Direction: contract.DirectionHigherIsBetter, Formula: "runner.case_pass.v1", Samples: &one},
				{Name: "exit_code", Value: float64(res.ExitCode), Unit: "code", Aggregation: contract.AggregationExact, Direction: contract.DirectionNone, Formula: "runner.exit_code.v1", Samples: &one},
				{Name: "output_assertion_failures", Value: float64(len(assertFailures)), Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionLowerIsBetter, Formula: "runner.output_assertion_failures.v1", Samples: &one},
			}}
		if cr.EffectiveConfig == nil {
			cr.EffectiveConfig = contract.Config{}
		}
		if details != "" {
			cr.Details = clip(details)
		}
		ref, err := r.writeCaseResult(dir, cr)
		if err != nil {
			return contract.Result{}, err
		}
		return contract.Result{ID: c.ID, Repetition: int64(rep), Required: c.Required, Status: status, DurationSeconds: res.Duration.Seconds(),
			Metrics: cr.Metrics, CaseResult: ref, Details: cr.Details}, nil
	}
	// A command-produced, valid result: bind the file the command wrote.
	raw, _ := os.ReadFile(r.abs(resultRel))
	r.evidence = append(r.evidence, artifact.File{Kind: contract.ArtifactKindCaseResult, Path: resultRel, Abs: r.abs(resultRel)})
	out := contract.Result{ID: c.ID, Repetition: int64(rep), Required: c.Required, Status: status, DurationSeconds: res.Duration.Seconds(),
		Metrics: cr.Metrics, CaseResult: &contract.FileRef{Path: resultRel, Digest: evidence.DigestOf(raw)}}
	if details != "" {
		out.Details = clip(details)
	} else {
		out.Details = cr.Details
	}
	return out, nil
}

// assertOutput checks the stream assertions of a command case and returns one line per failure.
func (r *run) assertOutput(c contract.Case, outRel, errRel string) []string {
	stdout, _ := os.ReadFile(r.abs(outRel))
	stderr, _ := os.ReadFile(r.abs(errRel))
	var fails []string
	for i, a := range c.OutputAssertions {
		re, err := regexp.Compile("(?m)" + a.Pattern)
		if err != nil {
			fails = append(fails, fmt.Sprintf("output assertion %d: %v", i, err))
			continue
		}
		var text []byte
		switch a.Stream {
		case "stdout":
			text = stdout
		case "stderr":
			text = stderr
		default:
			text = append(append(append([]byte{}, stdout...), '\n'), stderr...)
		}
		found := re.Match(text)
		if a.Match == "required" && !found {
			fails = append(fails, fmt.Sprintf("output assertion %d: %s must match %q and does not", i, a.Stream, a.Pattern))
		}
		if a.Match == "forbidden" && found {
			fails = append(fails, fmt.Sprintf("output assertion %d: %s matches forbidden %q", i, a.Stream, a.Pattern))
		}
	}
	return fails
}

// readCommandResult reads, bounds and validates the case result a command wrote, and checks it
// is for this case and carries exactly the declared metrics. It returns a reason on failure.
func (r *run) readCommandResult(c contract.Case, rel string) (*contract.CaseResultDoc, string) {
	f, err := os.Open(r.abs(rel))
	if err != nil {
		return nil, fmt.Sprintf("result protocol: the command wrote no case result at $%s (%v)", ResultEnv, err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, MaxCaseResultBytes+1))
	if err != nil {
		return nil, "result protocol: " + err.Error()
	}
	if len(raw) > MaxCaseResultBytes {
		return nil, fmt.Sprintf("result protocol: case result larger than %d bytes", MaxCaseResultBytes)
	}
	if err := schemas.CheckAs(raw, rel, contract.CaseResult); err != nil {
		return nil, "result protocol: invalid case result: " + err.Error()
	}
	var cr contract.CaseResultDoc
	if err := jsonstrict.DecodeInto(raw, &cr); err != nil {
		return nil, "result protocol: " + err.Error()
	}
	if cr.CaseID != c.ID {
		return nil, fmt.Sprintf("result protocol: %s: /case_id: %q, want %q", rel, cr.CaseID, c.ID)
	}
	var got []string
	for _, m := range cr.Metrics {
		got = append(got, m.Name)
	}
	sort.Strings(got)
	want := append([]string{}, c.ResultProtocol.DeclaredMetrics...)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return nil, fmt.Sprintf("result protocol: %s: /metrics: names %v, declared %v", rel, got, want)
	}
	return &cr, ""
}
