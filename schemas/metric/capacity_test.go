package metric

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// search runs CapacityNext against a server whose good fraction at concurrency c is good(c).
func search(spec contract.CapacitySearch, start int64, good func(int64) float64) []CapacityProbe {
	var probes []CapacityProbe
	for {
		st := CapacityNext(spec, start, probes)
		if st.Done {
			return probes
		}
		probes = append(probes, CapacityProbe{Concurrency: st.Next, GoodFraction: good(st.Next)})
	}
}

// slotsModel is the good fraction of a closed loop of c clients on s slots whose queued
// requests all miss the TTFT gate (docs/metrics.md "Capacity search"): 1 - (c - s)/s, at least 0.
func slotsModel(s int64) func(int64) float64 {
	return func(c int64) float64 { return max(0, min(1, 1-float64(c-s)/float64(s))) }
}

func TestCapacitySearch(t *testing.T) {
	spec := contract.CapacitySearch{Over: contract.CapacitySearchOver, MinGoodFraction: 0.95, Max: 64, Growth: 2, Resolution: 1, MaxSteps: 16}
	p := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name   string
		spec   contract.CapacitySearch
		start  int64
		good   func(int64) float64
		probes []int64
		ended  contract.CapacityEnded
		last   *int64
		first  *int64
	}{
		{"eight slots", spec, 1, slotsModel(8), []int64{1, 2, 4, 8, 16, 12, 10, 9}, contract.CapacityEndedResolution, p(8), p(9)},
		// S (2 - f) = 8 x 1.5 = 12 at f = 0.5.
		{"eight slots half good", func() contract.CapacitySearch { s := spec; s.MinGoodFraction = 0.5; return s }(), 1, slotsModel(8), []int64{1, 2, 4, 8, 16, 12, 14, 13}, contract.CapacityEndedResolution, p(12), p(13)},
		{"every probe passes", spec, 3, func(int64) float64 { return 1 }, []int64{3, 6, 12, 24, 48, 64}, contract.CapacityEndedMaxPassed, p(64), nil},
		{"the first probe fails", spec, 4, func(int64) float64 { return 0.5 }, []int64{4, 2, 1}, contract.CapacityEndedResolution, nil, p(1)},
		{"coarse resolution", func() contract.CapacitySearch { s := spec; s.Resolution = 4; return s }(), 1, slotsModel(8), []int64{1, 2, 4, 8, 16, 12}, contract.CapacityEndedResolution, p(8), p(12)},
		{"max steps", func() contract.CapacitySearch { s := spec; s.MaxSteps = 5; return s }(), 1, slotsModel(8), []int64{1, 2, 4, 8, 16}, contract.CapacityEndedMaxSteps, p(8), p(16)},
		// Exactly at the threshold passes (>=).
		{"threshold is inclusive", func() contract.CapacitySearch { s := spec; s.MinGoodFraction = 0.875; return s }(), 8, slotsModel(8), []int64{8, 16, 12, 10, 9}, contract.CapacityEndedResolution, p(9), p(10)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			probes := search(tc.spec, tc.start, tc.good)
			var got []int64
			for _, pr := range probes {
				got = append(got, pr.Concurrency)
			}
			if !slices.Equal(got, tc.probes) {
				t.Fatalf("probes %v, want %v", got, tc.probes)
			}
			c, err := Capacity(tc.spec, tc.start, probes)
			if err != nil {
				t.Fatal(err)
			}
			if c.Ended != tc.ended || !eqPtr(c.LastPassing, tc.last) || !eqPtr(c.FirstFailing, tc.first) || !eqPtr(c.Capacity, tc.last) {
				t.Fatalf("ended %s last %v first %v capacity %v, want %s %v %v", c.Ended, str(c.LastPassing), str(c.FirstFailing), str(c.Capacity), tc.ended, str(tc.last), str(tc.first))
			}
			if len(c.Probes) != len(probes) {
				t.Fatalf("%d probes in the outcome, want %d", len(c.Probes), len(probes))
			}
			for i, pr := range c.Probes {
				if pr.Passed != (tc.good(pr.Concurrency) >= tc.spec.MinGoodFraction) {
					t.Errorf("probe %d: passed %v", i, pr.Passed)
				}
			}
		})
	}
}

func TestCapacityReplayRefusesEditedProbes(t *testing.T) {
	spec := contract.CapacitySearch{Over: contract.CapacitySearchOver, MinGoodFraction: 0.95, Max: 64, Growth: 2, Resolution: 1, MaxSteps: 16}
	probes := search(spec, 1, slotsModel(8))
	for _, tc := range []struct {
		name string
		edit func([]CapacityProbe) []CapacityProbe
		want string
	}{
		// A failing probe edited to pass changes the next probe the search would run.
		{"a decision flipped", func(p []CapacityProbe) []CapacityProbe { p[5].GoodFraction = 1; return p }, "the search's next probe is 14"},
		{"a probe dropped", func(p []CapacityProbe) []CapacityProbe { return p[:len(p)-1] }, "had not ended"},
		{"a probe added", func(p []CapacityProbe) []CapacityProbe {
			return append(p, CapacityProbe{Concurrency: 3, GoodFraction: 1})
		}, "after the search ended"},
		{"a probe moved", func(p []CapacityProbe) []CapacityProbe { p[2].Concurrency = 5; return p }, "the search's next probe is 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Capacity(spec, 1, tc.edit(slices.Clone(probes)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
		})
	}
}

// TestCapacityNotMonotonic: a pass above the lowest failing probe does not raise the answer.
func TestCapacityNotMonotonic(t *testing.T) {
	spec := contract.CapacitySearch{Over: contract.CapacitySearchOver, MinGoodFraction: 0.9, Max: 16, Growth: 2, Resolution: 1, MaxSteps: 16}
	good := func(c int64) float64 {
		if c == 6 {
			return 0
		}
		return slotsModel(8)(c)
	}
	probes := search(spec, 1, good)
	c, err := Capacity(spec, 1, probes)
	if err != nil {
		t.Fatal(err)
	}
	if c.Capacity == nil || *c.Capacity != 8 || *c.FirstFailing != 9 {
		t.Fatalf("capacity %s first failing %s (probes %v)", str(c.Capacity), str(c.FirstFailing), probes)
	}
}

func eqPtr(a, b *int64) bool { return (a == nil && b == nil) || (a != nil && b != nil && *a == *b) }

func str(p *int64) string {
	if p == nil {
		return "null"
	}
	return itoa64(*p)
}

func itoa64(v int64) string { return strconv.FormatInt(v, 10) }

func TestParetoFront(t *testing.T) {
	row := func(c int64, thr, lat float64) contract.Row {
		return contract.Row{Concurrency: c, Metrics: []contract.Metric{{Name: "request_throughput", Value: thr}, {Name: "ttft_ms.p99", Value: lat}}}
	}
	rows := []contract.Row{
		row(1, 10, 20), row(2, 19, 21), row(4, 35, 30), row(8, 60, 45),
		row(16, 58, 90),  // dominated by c8 (less throughput, more latency)
		row(32, 60, 200), // same throughput as c8, more latency: dominated
		row(64, 61, 400),
		{Concurrency: 128, Metrics: []contract.Metric{{Name: "request_throughput", Value: 100}}}, // no latency: not a point
		row(3, 19, 21), // equal to c2: both stay
	}
	got := ParetoFront(contract.ParetoSpec{Throughput: contract.ParetoSpecThroughputRequestThroughput, Latency: "ttft_ms.p99"}, rows)
	var cs []int64
	for _, p := range got.Front {
		cs = append(cs, p.Concurrency)
	}
	if want := []int64{1, 2, 3, 4, 8, 64}; !slices.Equal(cs, want) {
		t.Fatalf("front %v, want %v", cs, want)
	}
	for _, name := range []string{"ttft_ms.p99", "e2e_ms.p50", "tpot_ms.p99.9"} {
		if !ParetoLatencyOK(name) {
			t.Errorf("%s refused as a latency", name)
		}
	}
	for _, name := range []string{"ttft_ms.mean", "decode_rate.p50", "request_throughput", "ttft_ms"} {
		if ParetoLatencyOK(name) {
			t.Errorf("%s accepted as a latency", name)
		}
	}
}

// TestMedianInterval: the order statistics of the distribution-free median interval, against
// hand computation of the binomial coverage 1 - 2 P(B <= j-1), B ~ Binomial(n, 1/2): n = 5 has
// none at 0.95 (j = 1 covers 1 - 2/32 = 0.9375); n = 6, j = 1 covers 1 - 2/64 = 0.96875; n = 10,
// j = 2 covers 1 - 2 x 11/1024 = 0.978515625 and j = 3 only 1 - 2 x 56/1024 = 0.890625; n = 20,
// j = 6 covers 1 - 2 x 21700/1048576 = 0.958610535 and j = 7 1 - 2 x 60460/1048576 = 0.884681702.
func TestMedianInterval(t *testing.T) {
	seq := func(n int) []float64 {
		xs := make([]float64, n)
		for i := range xs {
			xs[i] = float64((i*7)%n + 1) // 1..n, shuffled
		}
		return xs
	}
	for _, tc := range []struct {
		n        int
		ok       bool
		low, hig float64
	}{{5, false, 0, 0}, {6, true, 1, 6}, {10, true, 2, 9}, {20, true, 6, 15}} {
		iv, ok := MedianInterval(seq(tc.n), 0.95)
		if ok != tc.ok {
			t.Fatalf("n=%d: ok %v", tc.n, ok)
		}
		if ok && (iv.Low != tc.low || iv.High != tc.hig) {
			t.Errorf("n=%d: [%g, %g], want [%g, %g]", tc.n, iv.Low, iv.High, tc.low, tc.hig)
		}
		if want := float64(tc.n+1) / 2; iv.Estimate != want {
			t.Errorf("n=%d: median %g, want %g", tc.n, iv.Estimate, want)
		}
	}
	// Identical values: the interval is the value itself.
	iv, ok := MedianInterval([]float64{3, 3, 3, 3, 3, 3, 3}, 0.95)
	if !ok || iv.Low != 3 || iv.High != 3 {
		t.Fatalf("identical: %+v %v", iv, ok)
	}
	if _, ok := MedianInterval(nil, 0.95); ok {
		t.Fatal("an empty sample has an interval")
	}
}

func TestIntervals(t *testing.T) {
	small := Samples{TTFTMs: []float64{10, 11, 12}}
	big := Samples{}
	for i := range 600 {
		big.TTFTMs = append(big.TTFTMs, 20+float64(i%50)/10)
	}
	got := Intervals([]IntervalGroup{{Concurrency: 2, Repetitions: []Samples{small, small}}, {Concurrency: 4, Repetitions: []Samples{big, big}}})
	byKey := map[string]contract.Interval{}
	for _, iv := range got {
		byKey[itoa64(iv.Concurrency)+" "+iv.Metric] = iv
	}
	if len(got) != 4 {
		t.Fatalf("%d intervals, want 4 (ttft p50 and p99 of two groups): %+v", len(got), got)
	}
	s := byKey["2 ttft_ms.p50"]
	if !s.TooFewSamples || s.Low != nil || s.Samples != 6 || s.MinSamples != 20 || s.Estimate != 11 || s.Repetitions != 2 {
		t.Errorf("small p50: %+v", s)
	}
	b50 := byKey["4 ttft_ms.p50"]
	if b50.TooFewSamples || b50.Low == nil || *b50.Low > b50.Estimate || *b50.High < b50.Estimate || b50.Samples != 1200 {
		t.Errorf("big p50: %+v", b50)
	}
	b99 := byKey["4 ttft_ms.p99"]
	// 1200 samples reach the p99 minimum of 1000.
	if b99.MinSamples != 1000 || b99.TooFewSamples || b99.Low == nil || math.IsNaN(*b99.High) {
		t.Errorf("big p99: %+v", b99)
	}
	// The same inputs give the same intervals (seeded).
	again := Intervals([]IntervalGroup{{Concurrency: 4, Repetitions: []Samples{big, big}}})
	if *again[0].Low != *b50.Low || *again[0].High != *b50.High {
		t.Errorf("not reproducible: %+v vs %+v", again[0], b50)
	}
}

// TestCapacitySearchFindsThreshold: against every step function (good up to T, bad above) the
// search with resolution 1 names exactly T (or max when T >= max), never probes a value twice,
// and needs at most 2 log2(max) + 2 probes.
func TestCapacitySearchFindsThreshold(t *testing.T) {
	for _, start := range []int64{1, 3, 7} {
		for _, growth := range []int64{2, 3, 16} {
			spec := contract.CapacitySearch{Over: contract.CapacitySearchOver, MinGoodFraction: 0.9, Max: 256, Growth: growth, Resolution: 1, MaxSteps: 32}
			for T := int64(0); T <= 300; T++ {
				good := func(c int64) float64 {
					if c <= T {
						return 1
					}
					return 0
				}
				probes := search(spec, start, good)
				c, err := Capacity(spec, start, probes)
				if err != nil {
					t.Fatal(err)
				}
				want := min(T, spec.Max)
				if got := int64(0); c.Capacity != nil {
					got = *c.Capacity
					if got != want {
						t.Fatalf("start %d growth %d T %d: capacity %d (probes %v)", start, growth, T, got, probes)
					}
				} else if want != 0 {
					t.Fatalf("start %d growth %d T %d: no capacity (probes %v)", start, growth, T, probes)
				}
				if len(probes) > 18 {
					t.Errorf("start %d growth %d T %d: %d probes", start, growth, T, len(probes))
				}
				seen := map[int64]bool{}
				for _, p := range probes {
					if seen[p.Concurrency] {
						t.Fatalf("T %d: probe %d repeats (%v)", T, p.Concurrency, probes)
					}
					seen[p.Concurrency] = true
				}
			}
		}
	}
}
