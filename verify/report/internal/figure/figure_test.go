package figure

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
	"github.com/qualkit/qualkit/schemas/metric"
)

import ()

func TestNiceTicks(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		want   []float64
	}{
		{0, 10, []float64{0, 5, 10}},
		{1.2, 3.9, []float64{1, 2, 3, 4}},
		{0.0012, 0.0049, []float64{0.001, 0.002, 0.003, 0.004, 0.005}},
		{5, 5, []float64{4.998, 5, 5.002}},
	} {
		got := niceTicks(c.lo, c.hi, 4)
		if c.lo == c.hi {
			if got[0] > c.lo || got[len(got)-1] < c.hi || len(got) < 2 {
				t.Errorf("niceTicks(%v, %v) = %v", c.lo, c.hi, got)
			}
			continue
		}
		if len(got) != len(c.want) {
			t.Errorf("niceTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-c.want[i]) > 1e-12 {
				t.Errorf("niceTicks(%v, %v) = %v, want %v", c.lo, c.hi, got, c.want)
			}
		}
	}
}

// TestCDFLargeSampleIsBounded: a CDF of a million samples draws a bounded path.
func TestCDFLargeSampleIsBounded(t *testing.T) {
	xs := make([]float64, 1_000_000)
	for i := range xs {
		xs[i] = float64(i) / 1000
	}
	s := CDF("TTFT", "ms", xs, metric.Percentile(xs, 0.5), metric.Percentile(xs, 0.99))
	if len(s) > 40_000 || !strings.Contains(s, "p99 990.0") {
		t.Fatalf("%d bytes; %q", len(s), s[:200])
	}
	if e := CDF("TTFT", "ms", nil, 0, 0); !strings.Contains(e, "no samples") {
		t.Fatal(e)
	}
}

// TestLayerChartBounds: a chart of no boundary says so; one of many labels a bounded number of
// them (the largest growth always) and draws every point.
func TestLayerChartBounds(t *testing.T) {
	if s := Layers(&contract.ViewLayerAttribution{}); !strings.Contains(s, "no boundaries") {
		t.Fatal(s)
	}
	la := &contract.ViewLayerAttribution{}
	limit := 0.5
	for i := range 300 {
		b := contract.ViewBoundaryRow{Index: int64(i), Name: fmt.Sprintf("layer_%d", i), RelativeRootMeanSquareError: float64(i%17) / 100, Limit: &limit}
		if i == 157 {
			b.Largest, b.RelativeRootMeanSquareError = true, 0.42
			la.LargestGrowth = contract.ViewGrowth{Index: 157, Name: b.Name, Delta: 0.4}
		}
		la.Boundaries = append(la.Boundaries, b)
	}
	s := Layers(la)
	labels := regexp.MustCompile(`rotate\(-35 `).FindAllString(s, -1)
	if len(labels) > maxBoundaryLabels+1 || len(labels) < maxBoundaryLabels/2 {
		t.Errorf("%d boundary labels", len(labels))
	}
	if !strings.Contains(s, ">layer_157</text>") || !strings.Contains(s, `data-largest-growth="layer_157"`) || !strings.Contains(s, "tolerance ≤ 0.5") {
		t.Error("the largest growth or the tolerance is not drawn")
	}
	if n := strings.Count(s, "<circle"); n != 300 {
		t.Errorf("%d points", n)
	}
	if len(s) > 120_000 {
		t.Errorf("%d bytes for 300 boundaries", len(s))
	}
}
