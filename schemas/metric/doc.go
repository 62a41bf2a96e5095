// Package metric is the one catalogue of the metric formulas of docs/metrics.md: every formula id
// with its unit, aggregation, direction and computation. The runner computes a row's and a
// case's numbers with it and the verifier recomputes them with it, so a formula exists once.
//
// The package imports only the standard library and knows no contract type: its inputs are plain
// values (Request, RowSpec, CaseRow) that each caller builds from its own view of the request
// records, and its outputs are Values the caller turns into the receipt's metrics. Percentiles
// interpolate linearly between closest ranks (Hyndman-Fan type 7, numpy's default). Tokens come
// only from each response's single usage record, never from counting events.
//
// Independence from this code comes from testdata/golden.json, computed by
// testdata/reference.py with Python's statistics module (regenerate with `go generate`), from
// hand-computed cases in the tests, and from the examples of docs/metrics.md, which a test runs.
package metric

//go:generate python3 testdata/reference.py testdata/golden.json
