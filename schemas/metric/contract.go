package metric

import "github.com/qualkit/qualkit/schemas/contract"

// The bridge between the metric catalogue (package schemas/metric, which knows no contract type)
// and the receipt's metrics: the runner turns the catalogue's values into metrics with MetricsOf,
// and both it and the verifier hand a case's recorded rows to the case formulas with CaseRowsOf
// and device telemetry samples to the device formulas with DeviceSamplesOf.

// MetricsOf turns computed values into metrics (an empty list, never nil).
func MetricsOf(vs []Value) []contract.Metric {
	out := make([]contract.Metric, len(vs))
	for i, v := range vs {
		n := int64(v.Samples)
		out[i] = contract.Metric{Name: v.Name, Value: v.Value, Unit: v.Unit, Aggregation: v.Aggregation,
			Direction: v.Direction, Formula: v.Formula, Samples: &n, Diagnostic: v.Diagnostic}
	}
	return out
}

// CaseRowsOf reduces a case's rows, as recorded, to what the case formulas read (a row metric's
// samples do not enter them).
func CaseRowsOf(rows []contract.Row) []CaseRow {
	out := make([]CaseRow, len(rows))
	for i, r := range rows {
		vs := make([]Value, len(r.Metrics))
		for k, m := range r.Metrics {
			vs[k] = Value{Name: m.Name, Value: m.Value, Unit: m.Unit, Aggregation: m.Aggregation,
				Direction: m.Direction, Formula: m.Formula, Diagnostic: m.Diagnostic}
		}
		out[i] = CaseRow{Requests: r.Requests, Failures: r.Failures, Degraded: r.Fidelity.Degraded, Metrics: vs}
	}
	return out
}

// DeviceSamplesOf reduces telemetry samples to what the device formulas read.
func DeviceSamplesOf(xs []contract.TelemetrySampleDoc) []DeviceSample {
	out := make([]DeviceSample, len(xs))
	for i, x := range xs {
		out[i] = DeviceSample{Device: x.Device, TNs: x.TNs, EnergyJ: x.EnergyJ, PowerW: x.PowerW,
			Throttled: len(x.ThrottleReasons) > 0, XidEvent: x.XidEvents != nil && *x.XidEvents > 0, CallFailed: len(x.Errors) > 0,
			ECCUncorrected: x.ECCUncorrected}
	}
	return out
}
