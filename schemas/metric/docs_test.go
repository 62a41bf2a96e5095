package metric

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// docsExamples returns the bodies of docs/metrics.md's ```text metric-example blocks.
func docsExamples(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	rest := string(raw)
	for {
		_, after, ok := strings.Cut(rest, "```text metric-example\n")
		if !ok {
			return out
		}
		body, tail, ok := strings.Cut(after, "```")
		if !ok {
			t.Fatal("docs/metrics.md: a metric-example block is not closed")
		}
		out, rest = append(out, body), tail
	}
}

// msToNs parses a time in ms as the record's nanoseconds.
func msToNs(t *testing.T, s string) int64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("time %q: %v", s, err)
	}
	return int64(math.Round(v * 1e6))
}

// runExample parses one example (spec, req, want and absent lines; # comments) and checks it.
func runExample(t *testing.T, body string) (checked int) {
	var spec RowSpec
	var slo SLO
	var reqs []Request
	type want struct {
		name   string
		v      float64
		absent bool
		line   int
	}
	var wants []want
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		kw, rest, _ := strings.Cut(line, " ")
		switch kw {
		case "spec":
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "loop":
					spec.Loop = contract.RowLoop(v)
				case "concurrency":
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("line %d: %v", i+1, err)
					}
					spec.Concurrency = n
				case "slo.ttft_ms", "slo.e2e_ms", "slo.icl_ms":
					x, err := strconv.ParseFloat(v, 64)
					if err != nil {
						t.Fatalf("line %d: %v", i+1, err)
					}
					*map[string]*float64{"slo.ttft_ms": &slo.TTFTMs, "slo.e2e_ms": &slo.E2EMs, "slo.icl_ms": &slo.ICLMs}[k] = x
				default:
					t.Fatalf("line %d: unknown spec field %q", i+1, k)
				}
			}
		case "req":
			var r Request
			for _, kv := range strings.Fields(rest) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "sched":
					r.Sched = msToNs(t, v)
				case "send":
					r.Send, r.HasSend = msToNs(t, v), true
				case "hdr":
					r.Hdr, r.HasHdr = msToNs(t, v), true
				case "end":
					r.End, r.HasEnd = msToNs(t, v), true
				case "close":
					r.Close, r.HasClose = msToNs(t, v), true
				case "content":
					for _, c := range strings.Split(v, ",") {
						r.Content = append(r.Content, msToNs(t, c))
					}
				case "N", "P":
					n, err := strconv.ParseInt(v, 10, 64)
					if err != nil {
						t.Fatalf("line %d: %v", i+1, err)
					}
					r.HasUsage = true
					if k == "N" {
						r.Completion = n
					} else {
						r.Prompt = n
					}
				case "error":
					r.Failed, r.ErrorClass = true, v
				default:
					t.Fatalf("line %d: unknown request field %q", i+1, k)
				}
			}
			reqs = append(reqs, r)
		case "want":
			name, v, ok := strings.Cut(rest, " = ")
			x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if !ok || err != nil {
				t.Fatalf("line %d: want NAME = NUMBER, got %q", i+1, line)
			}
			wants = append(wants, want{name: strings.TrimSpace(name), v: x, line: i + 1})
		case "absent":
			wants = append(wants, want{name: strings.TrimSpace(rest), absent: true, line: i + 1})
		default:
			t.Fatalf("line %d: unknown line %q", i+1, line)
		}
	}
	spec.SLO = &slo
	res := Row(spec, reqs)
	got := map[string]float64{}
	for _, v := range res.Values {
		got[v.Name] = v.Value
		// NAME.samples, and for a distribution FAMILY.samples.
		got[v.Name+".samples"] = float64(v.Samples)
		got[strings.TrimSuffix(v.Name, "."+string(v.Aggregation))+".samples"] = float64(v.Samples)
	}
	f := res.Fidelity
	got["fidelity.schedule_lag_p50_ms"], got["fidelity.schedule_lag_p99_ms"], got["fidelity.schedule_lag_max_ms"] = f.ScheduleLagP50Ms, f.ScheduleLagP99Ms, f.ScheduleLagMaxMs
	got["fidelity.achieved_rate"] = f.AchievedRate
	got["fidelity.degraded"] = map[bool]float64{false: 0, true: 1}[f.Degraded]
	if f.HasInFlight {
		got["fidelity.in_flight_peak"], got["fidelity.in_flight_mean"] = float64(f.InFlightPeak), f.InFlightMean
	}
	for _, w := range wants {
		v, ok := got[w.name]
		switch {
		case w.absent && ok:
			t.Errorf("docs/metrics.md example line %d: %s is emitted (%v), the page says it is not", w.line, w.name, v)
		case w.absent:
		case !ok:
			t.Errorf("docs/metrics.md example line %d: %s is not emitted", w.line, w.name)
		case math.Abs(v-w.v) > max(1e-12, 1e-10*math.Abs(w.v)):
			t.Errorf("docs/metrics.md example line %d: %s = %.13g, the page says %v", w.line, w.name, v, w.v)
		}
		checked++
	}
	return checked
}

// TestDocsExample runs the worked examples of docs/metrics.md through the catalogue.
func TestDocsExample(t *testing.T) {
	blocks := docsExamples(t)
	if len(blocks) == 0 {
		t.Fatal("docs/metrics.md has no metric-example block")
	}
	n := 0
	for _, b := range blocks {
		n += runExample(t, b)
	}
	if n < 20 {
		t.Fatalf("the examples check only %d numbers", n)
	}
}
