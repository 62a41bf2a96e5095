// Package metrics computes the numbers of a serving row from its request records, exactly as
// docs/metrics.md defines them: TTFT, TTFT_sched, TTFB, E2E, E2E_sched, TPOT, decode rate,
// client-visible inter-event latency, the request window and the throughputs over it, SLO
// goodput, dispatch spread, schedule lag and the client's fidelity. Every metric carries its
// formula id, unit, aggregation, direction and sample count. Percentiles interpolate linearly
// between closest ranks (Hyndman-Fan type 7). Tokens come only from each response's single usage
// record, never from counting events.
//
// Row and Case are pure functions of their arguments, so a verifier holding the request records
// recomputes every number a receipt states. TelemetryDeltas turns two /metrics scrapes into
// diagnostic counter deltas.
package metrics
