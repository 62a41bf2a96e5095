package metric

import (
	"testing"

	"github.com/qualkit/qualkit/schemas/contract"
)

// TestStopReplay: the error fraction fires only past its minimum count and strictly above its
// fraction; consecutive failures fire on the streak, a success resets it; no rules, no stop.
func TestStopReplay(t *testing.T) {
	three := int64(3)
	frac := &contract.StopRules{ErrorFraction: &contract.ErrorFractionRule{Above: 0.5, MinRequests: 4}}
	cons := &contract.StopRules{ConsecutiveFailures: &three}
	sat := &contract.StopRules{Saturation: &contract.SaturationRule{LagMs: 5, Consecutive: 4}}
	F, S := true, false
	cases := []struct {
		name     string
		rules    *contract.StopRules
		outcomes []bool
		want     contract.RowEndReason
		at       int
	}{
		{"fraction before its minimum", frac, []bool{F, F, F}, "", 0},
		{"fraction at its minimum", frac, []bool{F, F, F, S}, contract.RowEndReasonErrorFraction, 4},
		{"fraction exactly at the bound", frac, []bool{F, S, F, S, S, S}, "", 0},
		{"fraction later", frac, []bool{S, S, S, S, F, F, F, F, F}, contract.RowEndReasonErrorFraction, 9},
		{"streak", cons, []bool{F, F, S, F, F, F, S}, contract.RowEndReasonConsecutiveFailures, 6},
		{"streak broken", cons, []bool{F, F, S, F, F, S, F, F}, "", 0},
		{"no rules", nil, []bool{F, F, F, F, F}, "", 0},
		{"saturation", sat, []bool{S, S, S, S, S, S}, contract.RowEndReasonSaturation, 5},
		{"saturation broken by an unsent request", sat, []bool{S, S, S, F, S, S}, "", 0},
		{"no saturation at the bound", sat, []bool{S, S, S, S, S, S}, "", 0},
	}
	// lags are each request's schedule lag in ms (-1: never sent); 0.1 ms where not listed.
	lags := map[string][]float64{
		"saturation":                             {1, 6, 7, 8, 9, 1},
		"saturation broken by an unsent request": {6, 7, 8, -1, 9, 9},
		"no saturation at the bound":             {5, 5, 5, 5, 5, 5},
	}
	for _, tc := range cases {
		var outs []StopOutcome
		for i, f := range tc.outcomes {
			o := StopOutcome{Failed: f, LagMs: 0.1, HasLag: true}
			if l, ok := lags[tc.name]; ok {
				o.LagMs, o.HasLag = l[i], l[i] >= 0
			}
			outs = append(outs, o)
		}
		got, at := StopReplay(tc.rules, outs)
		if got != tc.want || at != tc.at {
			t.Errorf("%s: %q after %d, want %q after %d", tc.name, got, at, tc.want, tc.at)
		}
	}
}
