// Package figure draws the report page's charts as inline SVG strings: CDFs of a row's latency
// distributions, throughput against load, the lifecycle timeline, capacity searches, Pareto fronts,
// intervals, per-second load series, device telemetry and per-layer errors. Each chart is a pure
// function of contract values (schemas/contract) with presentation attributes only: no style
// attribute, no script and no external reference, so the page's Content-Security-Policy can
// forbid everything the page does not carry itself. Every text it writes is escaped.
package figure
