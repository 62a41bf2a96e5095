package load

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// floatToInt lists every conversion of a non-constant float to an integer type (int, int64,
// uint64, time.Duration, ...) in the schedule, stage and trace code, as "package file
// function: expression". Go gives an implementation-defined value for a float out of the
// integer's range (an overflowed trace schedule became -9.2e18 ns and was sent at once), so each
// one here was reviewed: its float is bounded before it is converted, and the comment says
// how. A new conversion fails TestFloatToIntConversionsReviewed until it is added with its bound.
var floatToInt = map[string]string{
	// schemas/trace
	"trace trace.go OffsetNs: int64(f)":                           "f is checked to be 0 to 2^62 (NaN and Inf refused) on the line before",
	"trace bailian.go ImportBailian: int64(math.Round(ts * 1e3))": "ts is checked to be a number from 0 with ts × 1e3 at most MaxTimestampMs (2^40; NaN and +Inf refused) before it",
	"trace weka.go ImportWEKA: int64(math.Round(t * 1e3))":        "t is checked to be a number from 0 with t × 1e3 at most MaxTimestampMs (2^40) minus the conversation's start (NaN and +Inf refused) on the lines before",
	// schemas/metric fidelity: the calibration quantile interpolates between two of the samples,
	// each an int64 of at most 256 timed sends clamped to >= 0, so it lies between two int64
	// values; the judged cost is capped at 100 µs after.
	"metric fidelity.go SendCostNs: int64(math.Round(Percentile(xs, CalibrationQuantile)))": "a quantile of int64 samples lies between two of them (0 to max sample)",
	"metric fidelity.go lagBoundNs: int64(math.Round(ms * 1e6))":                            "ms is checked to be in (0, 60000] on the line before (else the 1 ms default)",
	// schemas/metric: stage starts and lengths are the workload's (each stage 0 to 86400 s, at
	// most 64 stages: under 6e15 ns); arrivals lie inside the horizon.
	"metric arrival.go Arrivals: int64(t * 1e9)":                                        "t is the n-th arrival of a rate row (n at most the case's requests), each gap at most 37/rate s (a 53-bit uniform draw) at the schema's least rate",
	"metric stages.go RowStage: int64((st.Start + st.Seconds) * 1e9)":                   "a stage's end: at most 64 × 86400 s",
	"metric stages.go RowStage: int64(st.Start * 1e9)":                                  "a stage's start: at most 63 × 86400 s",
	"metric stages.go ScheduleArrivals: int64((st.Start + min(tau, st.Seconds)) * 1e9)": "inside a stage: at most 64 × 86400 s",
	"metric stages.go StageAt: int64((st.Start + st.Seconds) * 1e9)":                    "a stage's end: at most 64 × 86400 s",
	// schemas/metric statistics: indexes into sample slices, from a quantile of their length.
	"metric significance.go BootstrapQuantile: int(math.Floor(h))":                            "h = (n-1)q, q in [0, 1]: 0 to n-1",
	"metric significance.go HodgesLehmann: int(math.Floor(float64(n) / 2 + 0.5 - z * sigma))": "z × sigma is a few × n^1.5 at most (n samples, z finite): far inside int, and clamped to 1 to (n+1)/2 on the same line",
	"metric significance.go HodgesLehmann: int(math.Floor(h))":                                "h = (n-1)q, q in [0, 1]: 0 to n-1",
	"metric significance.go MannWhitneyU: int(math.Round(far))":                               "a count of pairs: 0 to n×m",
	"metric significance.go MinSamplesQuantile: int(math.Ceil(10 / (1 - q) - 1e-9))":          "q is a declared quantile below 1 (at most 0.9999 by the schema): at most 1e5",
	"metric stats.go Percentile: int(math.Floor(h))":                                          "h = (n-1)p/100, p in [0, 100]: 0 to n-1",
	// runner/load: seconds the workload declares, bounded by the schema.
	"load rowend.go begin: time.Duration(rc.dur.Seconds * float64(time.Second))":                "duration.seconds: at most 86400",
	"load rowend.go stop: time.Duration(rc.dur.GraceSeconds * float64(time.Second))":            "duration.grace_seconds: at most 3600",
	"load run.go request: time.Duration(cs.RequestTimeoutSeconds * float64(time.Second))":       "request_timeout_seconds: at most 86400",
	"load schedule.go closedGate: time.Duration((next - el) * 1e9)":                             "a closed schedule's next stage boundary less the time elapsed: 0 to 64 × 86400 s",
	"load schedule.go report: int64(metric.Horizon(sc) * 1e9)":                                  "a schedule's horizon: at most 64 × 86400 s",
	"load schedule.go scheduledCap: int64(math.Ceil(metric.ExpectedArrivals(p.Case.Schedule)))": "the expected arrivals are at most 64 stages × 86400 s × the schema's greatest rate (far inside int64), then capped at requests",
	"load session.go session: time.Duration(t.ThinkMs * float64(time.Millisecond))":             "a think time drawn from think_ms: at most the schema's maximum",
	// schemas/synth: a trace's lengths in words, for TracePrompts, PlanTrace and the verifier.
	"synth synth.go TraceBlockWords: int(math.Round(float64(blockTokens) * wordsPerToken))": "block_tokens (at most the schema's) × words_per_token (0.1 to 10)",
	"synth synth.go TraceWords: int(math.Round(float64(inputLength) * wordsPerToken))":      "input_length (1 to 2^20, trace.Check) × words_per_token (0.1 to 10)",
}

// floatIntPackages are the packages whose float-to-integer conversions are reviewed: the trace
// format, the schedules and stages (schemas/metric), a trace's lengths in words (schemas/synth)
// and the load generator that replays them.
var floatIntPackages = []string{"../../schemas/trace", "../../schemas/metric", "../../schemas/synth", "."}

// TestFloatToIntConversionsReviewed type-checks floatIntPackages (from source, with the build
// cache's export data for their imports) and finds every conversion of a non-constant float to an
// integer type: each must be one floatToInt lists as bounded, and each listed must still exist.
func TestFloatToIntConversionsReviewed(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks packages with go list")
	}
	found := map[string]string{}
	for _, dir := range floatIntPackages {
		for k, pos := range floatIntConversions(t, dir) {
			found[k] = pos
		}
	}
	for k, pos := range found {
		if _, ok := floatToInt[k]; !ok {
			t.Errorf("%s: %q converts a float to an integer without a reviewed bound: check its range first (see trace.OffsetNs) and list it in floatToInt", pos, k)
		}
	}
	for k := range floatToInt {
		if _, ok := found[k]; !ok {
			t.Errorf("floatToInt lists %q, which no longer exists: remove it", k)
		}
	}
}

// floatIntConversions returns the float-to-integer conversions of the package in dir, keyed as
// floatToInt is, with their positions.
func floatIntConversions(t *testing.T, dir string) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}\t{{.Export}}", dir).Output()
	if err != nil {
		t.Fatalf("go list -export %s: %v", dir, err)
	}
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if path, file, ok := strings.Cut(sc.Text(), "\t"); ok && file != "" {
			exports[path] = file
		}
	}
	files, err := exec.Command("go", "list", "-f", "{{.Name}}\t{{range .GoFiles}}{{.}} {{end}}", dir).Output()
	if err != nil {
		t.Fatal(err)
	}
	name, list, _ := strings.Cut(strings.TrimSpace(string(files)), "\t")
	fset := token.NewFileSet()
	var asts []*ast.File
	for _, f := range strings.Fields(list) {
		af, err := parser.ParseFile(fset, filepath.Join(dir, f), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		asts = append(asts, af)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	info := &types.Info{Types: map[ast.Expr]types.TypeAndValue{}}
	if _, err := (&types.Config{Importer: imp}).Check(name, fset, asts, info); err != nil {
		t.Fatalf("type-check %s: %v", dir, err)
	}
	found := map[string]string{}
	for _, af := range asts {
		fn := ""
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				fn = n.Name.Name
			case *ast.CallExpr:
				tv, ok := info.Types[n.Fun]
				if !ok || !tv.IsType() || len(n.Args) != 1 {
					return true
				}
				to, ok := tv.Type.Underlying().(*types.Basic)
				if !ok || to.Info()&types.IsInteger == 0 {
					return true
				}
				arg := info.Types[n.Args[0]]
				from, ok := arg.Type.Underlying().(*types.Basic)
				if !ok || from.Info()&types.IsFloat == 0 || arg.Value != nil {
					return true
				}
				var b strings.Builder
				b.WriteString(types.ExprString(n))
				pos := fset.Position(n.Pos())
				key := fmt.Sprintf("%s %s %s: %s", name, filepath.Base(pos.Filename), fn, b.String())
				found[key] = pos.String()
			}
			return true
		})
	}
	return found
}
