// Package sim is qualsim, qualkit's reference OpenAI-compatible server: a real HTTP/1.1 server on a
// loopback socket whose output, timing and failures are declared in advance, so that a client can
// be measured against known ground truth and broken on purpose.
//
// The completion text is a pure function of the model seed, the request seed, the prompt and
// max_tokens (see Generate): every output token is five zero-padded decimal digits and a space,
// counting up from a hashed start. Timing follows a declared model (Timing): a startup delay, a
// decode-slot limit, TTFT, a per-token interval, tokens per SSE event and seeded jitter. Faults
// (Faults, ParseFault) turn on one real misbehaviour each: never ready, crash mid-stream, malformed
// SSE, missing or inconsistent usage, stalls, huge events, HTTP 429/500, slow shutdown and the
// process-level faults that the qualsim command carries out.
//
// The package is silent: it logs only through the *slog.Logger given with WithLogger. An optional
// ground-truth log (WithGroundTruth) records the CLOCK_MONOTONIC time at which each SSE event's
// bytes were flushed to the socket, so another process on the same host can compare its own
// receive stamps with what was sent. docs/qualsim.md is the user guide.
package sim
