// Package rowcheck holds what the tolerances check recomputes for one row or one case from its
// request records, one file per concern: the load a row offered (load.go), stages, ramps and trace
// replays (stages.go), sessions, the request ledger, the row's end, resets between rows, the
// prefix cache, capacity searches and their figures, device telemetry (row_telemetry.go), and the
// metric lists and identities they share with the comparability check (metrics.go). Each is a
// function adding findings to a finding.Collector; none reads anything but its arguments.
package rowcheck
