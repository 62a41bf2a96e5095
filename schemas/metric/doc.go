// Package metric is the one catalogue of the metric formulas of docs/metrics.md: every formula id
// with its unit, aggregation, direction and computation. The runner computes a row's and a
// case's numbers with it and the verifier recomputes them with it, so a formula exists once.
//
// The formulas take plain values (Request, RowSpec, CaseRow, DeviceSample) that each caller
// builds from its own view of the evidence, and give Values; contract.go bridges those to the
// contract types (MetricsOf, CaseRowsOf, DeviceSamplesOf). Besides the standard library the
// package imports only schemas/contract, which imports nothing else. Percentiles
// interpolate linearly between closest ranks (Hyndman-Fan type 7, numpy's default). Tokens come
// only from each response's single usage record, never from counting events.
//
// Independence from this code comes from testdata/golden.json, computed by
// testdata/reference.py with Python's statistics module (regenerate with `go generate`), from
// hand-computed cases in the tests, and from the examples of docs/metrics.md, which a test runs.
// The statistics of significance.go are checked against testdata/significance.json, written by
// testdata/significance_reference.py with SciPy (Debian's python3-scipy) and exact enumeration.
package metric

//go:generate python3 testdata/reference.py testdata/golden.json
//go:generate python3 testdata/significance_reference.py testdata/significance.json
