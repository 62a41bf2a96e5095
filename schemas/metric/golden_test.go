package metric

import (
	"encoding/json"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// goldenRequest is a request of testdata/golden.json: nil times are absent, usage is
// [completion, prompt] or null, error is the class or null.
type goldenRequest struct {
	Sched   int64   `json:"sched"`
	Send    *int64  `json:"send"`
	Hdr     *int64  `json:"hdr"`
	End     *int64  `json:"end"`
	Close   *int64  `json:"close"`
	Content []int64 `json:"content"`
	Usage   []int64 `json:"usage"`
	Error   *string `json:"error"`
	Cached  *int64  `json:"cached"`
	// Session is [id, turn] of a session row's request.
	Session []any `json:"session"`
	// ReasoningEvents of the content events come first and are reasoning; Reasoning is usage's
	// reasoning_tokens (absent: not stated).
	ReasoningEvents int    `json:"reasoning_events"`
	Reasoning       *int64 `json:"reasoning"`
	// ToolFirst is the index of the first of the content events that are tool-call deltas (all
	// from it on); Calls is [calls, valid] of the record's tool_calls.
	ToolFirst *int    `json:"tool_first"`
	Calls     []int64 `json:"calls"`
}

type goldenMetric struct {
	Name        string  `json:"name"`
	Value       float64 `json:"value"`
	Unit        string  `json:"unit"`
	Aggregation string  `json:"aggregation"`
	Direction   string  `json:"direction"`
	Formula     string  `json:"formula"`
	Samples     int     `json:"samples"`
}

type golden struct {
	Percentiles []struct {
		Samples []float64          `json:"samples"`
		Want    map[string]float64 `json:"want"`
	} `json:"percentiles"`
	Rows []struct {
		Name string `json:"name"`
		Spec struct {
			Loop        string             `json:"loop"`
			Concurrency int64              `json:"concurrency"`
			SLO         map[string]float64 `json:"slo"`
		} `json:"spec"`
		Requests []goldenRequest `json:"requests"`
		Want     struct {
			WindowSeconds float64        `json:"window_seconds"`
			Requests      int64          `json:"requests"`
			Successes     int64          `json:"successes"`
			Metrics       []goldenMetric `json:"metrics"`
			Fidelity      struct {
				LagP50       float64  `json:"schedule_lag_p50_ms"`
				LagP99       float64  `json:"schedule_lag_p99_ms"`
				LagMax       float64  `json:"schedule_lag_max_ms"`
				AchievedRate float64  `json:"achieved_rate"`
				Degraded     bool     `json:"degraded"`
				InFlightPeak *int64   `json:"in_flight_peak"`
				InFlightMean *float64 `json:"in_flight_mean"`
			} `json:"fidelity"`
		} `json:"want"`
	} `json:"rows"`
}

func (g goldenRequest) request() Request {
	r := Request{Sched: g.Sched, Content: g.Content}
	if g.Error != nil {
		r.Failed, r.ErrorClass = true, *g.Error
	}
	for _, t := range []struct {
		from *int64
		to   *int64
		has  *bool
	}{{g.Send, &r.Send, &r.HasSend}, {g.Hdr, &r.Hdr, &r.HasHdr}, {g.End, &r.End, &r.HasEnd}, {g.Close, &r.Close, &r.HasClose}} {
		if t.from != nil {
			*t.to, *t.has = *t.from, true
		}
	}
	if g.Cached != nil {
		r.HasCached, r.Cached = true, *g.Cached
	}
	if len(g.Session) == 2 {
		r.Session, r.Turn = g.Session[0].(string), int64(g.Session[1].(float64))
	}
	if g.Usage != nil {
		r.HasUsage, r.Completion, r.Prompt = true, g.Usage[0], g.Usage[1]
	}
	r.Reasoned = g.ReasoningEvents > 0
	if len(g.Content) > g.ReasoningEvents {
		r.FirstContent, r.HasFirstContent = g.Content[g.ReasoningEvents], true
	}
	if g.Reasoning != nil {
		r.HasReasoning, r.Reasoning = true, *g.Reasoning
	}
	if g.ToolFirst != nil {
		r.FirstToolCall, r.HasFirstToolCall = g.Content[*g.ToolFirst], true
	}
	if len(g.Calls) == 2 {
		AddToolCalls(&r, g.Calls[0], g.Calls[1])
	}
	return r
}

// close enough for two implementations of one definition (Python's fsum-based mean and its
// quantile arithmetic round differently in the last bits).
func closeTo(got, want float64) bool {
	return math.Abs(got-want) <= max(1e-12, 1e-9*math.Abs(want))
}

// TestGolden compares the catalogue with testdata/golden.json, which testdata/reference.py
// computed independently (Python's statistics module, written from docs/metrics.md): every
// percentile, every row metric with its identity and samples, the window and the fidelity. It
// also checks that the golden rows exercise every row formula the catalogue computes.
func TestGolden(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Percentiles) == 0 || len(g.Rows) == 0 {
		t.Fatal("golden.json has no cases")
	}
	for _, p := range g.Percentiles {
		s := Summarize(p.Samples)
		for agg, want := range p.Want {
			got, ok := s.Of(contract.Aggregation(agg))
			if !ok || !closeTo(got, want) {
				t.Errorf("%d samples: %s = %v (%v), Python says %v", len(p.Samples), agg, got, ok, want)
			}
		}
		if _, ok := p.Want["p99.9"]; ok != s.HasP999 {
			t.Errorf("%d samples: HasP999 %v", len(p.Samples), s.HasP999)
		}
	}
	covered := map[string]bool{}
	for _, row := range g.Rows {
		reqs := make([]Request, len(row.Requests))
		for i, r := range row.Requests {
			reqs[i] = r.request()
		}
		slo := SLO{TTFTMs: row.Spec.SLO["ttft_ms"], ICLMs: row.Spec.SLO["icl_ms"], E2EMs: row.Spec.SLO["e2e_ms"]}
		res := Row(RowSpec{Concurrency: row.Spec.Concurrency, Loop: contract.RowLoop(row.Spec.Loop), SLO: &slo}, reqs)
		w := row.Want
		if res.Requests != w.Requests || res.Successes != w.Successes || !closeTo(res.WindowSeconds, w.WindowSeconds) {
			t.Errorf("%s: requests %d successes %d window %v, Python says %d %d %v", row.Name, res.Requests, res.Successes, res.WindowSeconds, w.Requests, w.Successes, w.WindowSeconds)
		}
		if len(res.Values) != len(w.Metrics) {
			t.Errorf("%s: %d metrics, Python says %d", row.Name, len(res.Values), len(w.Metrics))
		}
		got := map[string]Value{}
		for _, v := range res.Values {
			got[v.Name] = v
		}
		for _, m := range w.Metrics {
			v, ok := got[m.Name]
			wantID := Identity{m.Unit, contract.Aggregation(m.Aggregation), contract.Direction(m.Direction), m.Formula}
			switch {
			case !ok:
				t.Errorf("%s: %s missing", row.Name, m.Name)
			case v.Identity() != wantID || v.Samples != m.Samples:
				t.Errorf("%s: %s is %+v, Python says %+v", row.Name, m.Name, v, m)
			case !closeTo(v.Value, m.Value):
				t.Errorf("%s: %s = %v, Python says %v", row.Name, m.Name, v.Value, m.Value)
			default:
				covered[m.Formula] = true
			}
		}
		f, wf := res.Fidelity, w.Fidelity
		if !closeTo(f.ScheduleLagP50Ms, wf.LagP50) || !closeTo(f.ScheduleLagP99Ms, wf.LagP99) || !closeTo(f.ScheduleLagMaxMs, wf.LagMax) ||
			!closeTo(f.AchievedRate, wf.AchievedRate) || f.Degraded != wf.Degraded {
			t.Errorf("%s: fidelity %+v, Python says %+v", row.Name, f, wf)
		}
		if f.HasInFlight != (wf.InFlightPeak != nil) || (f.HasInFlight && (f.InFlightPeak != *wf.InFlightPeak || !closeTo(f.InFlightMean, *wf.InFlightMean))) {
			t.Errorf("%s: in flight %d %v (%v), Python says %v %v", row.Name, f.InFlightPeak, f.InFlightMean, f.HasInFlight, wf.InFlightPeak, wf.InFlightMean)
		}
		if f.Degraded {
			covered["degraded"] = true
		}
	}
	for _, f := range Catalogue {
		if f.Scope == RowScope && !f.Diagnostic && !covered[f.ID] {
			t.Errorf("golden.json never exercises %s", f.ID)
		}
	}
	if !covered["degraded"] {
		t.Error("golden.json has no degraded row")
	}
}

// TestGoldenDevice compares the device formulas with the device cases of testdata/golden.json
// (testdata/reference.py, written from docs/metrics.md "Device telemetry").
func TestGoldenDevice(t *testing.T) {
	raw, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		Devices []struct {
			Samples []struct {
				Device     int64    `json:"device"`
				T          int64    `json:"t"`
				EnergyJ    *float64 `json:"energy_j"`
				PowerW     *float64 `json:"power_w"`
				Throttled  bool     `json:"throttled"`
				Xid        bool     `json:"xid"`
				CallFailed bool     `json:"call_failed"`
				ECC        *int64   `json:"ecc"`
			} `json:"samples"`
			Start, End, Tokens int64
			Want               struct {
				Values map[string]float64 `json:"values"`
				Flags  []string           `json:"flags"`
			} `json:"want"`
		} `json:"devices"`
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if len(g.Devices) == 0 {
		t.Fatal("golden.json has no device cases")
	}
	energy := 0
	for k, c := range g.Devices {
		xs := make([]DeviceSample, len(c.Samples))
		for i, x := range c.Samples {
			xs[i] = DeviceSample{Device: x.Device, TNs: x.T, EnergyJ: x.EnergyJ, PowerW: x.PowerW, Throttled: x.Throttled, XidEvent: x.Xid, CallFailed: x.CallFailed, ECCUncorrected: x.ECC}
		}
		s := Device(xs, c.Start, c.End, c.Tokens)
		if len(s.Values) != len(c.Want.Values) {
			t.Errorf("case %d: %d values, Python says %d (%v)", k, len(s.Values), len(c.Want.Values), c.Want.Values)
		}
		for _, v := range s.Values {
			if w, ok := c.Want.Values[v.Name]; !ok || !closeTo(v.Value, w) {
				t.Errorf("case %d: %s = %v, Python says %v (%v)", k, v.Name, v.Value, w, ok)
			}
			if v.Name == "device_energy_j" {
				energy++
			}
		}
		if strings.Join(contract.Strings(s.Flags), ",") != strings.Join(c.Want.Flags, ",") {
			t.Errorf("case %d: flags %v, Python says %v", k, s.Flags, c.Want.Flags)
		}
	}
	if energy == 0 || energy == len(g.Devices) {
		t.Errorf("golden.json's device cases should have energy in some and not in others (%d of %d)", energy, len(g.Devices))
	}
}
