// Package metrics computes the numbers of a serving row from its request records, exactly as
// docs/metrics.md defines them: TTFT, TTFT_sched, TTFB, E2E, E2E_sched, TPOT, decode rate,
// client-visible inter-event latency, the request window and the throughputs over it, SLO
// goodput, dispatch spread, schedule lag and the client's fidelity. The formulas themselves are
// the catalogue's (package schemas/metric, which verify recomputes with): this package turns
// request records into the catalogue's inputs (Request) and its values into the receipt's row
// and case metrics, and hashes the prompt and output sets.
//
// Row and Case are pure functions of their arguments, so a verifier holding the request records
// recomputes every number a receipt states. (The server's /metrics scrapes become diagnostic
// counter deltas in schemas/metric, ServerTelemetry, which the verifier recomputes with.)
package metrics
