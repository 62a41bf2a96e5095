// Package load is qualkit's load generator: it resolves a serving case's corpus, sends its
// requests to an OpenAI-compatible server on loopback in closed-loop rows (concurrency slots
// released together) or open-loop rows (a constant, seeded Poisson or seeded gamma schedule,
// metric.Arrivals), sized by a request count or a duration (with a grace deadline that cuts the
// requests still in flight) and ended early by declared stop rules (rowend.go), and turns every
// request into a request record (qualkit.request-record.v1) and every row into a row summary
// (row.go: the catalogue's formulas of package schemas/metric over metric.RequestOf of each
// record).
//
// # Client
//
// Client speaks HTTP/1.1 over keep-alive connections (as many idle ones as the largest row has
// streams) and parses responses itself: a push parser reads the status line, headers and chunked
// or Content-Length framing, an SSE parser follows the WHATWG rules (CRLF, CR or LF line ends,
// comments, multi-line data, a bounded line length with a named error instead of
// bufio.Scanner's 64 KiB stop), and a validating JSON scanner reads each chunk. Connections are
// non-blocking sockets read by reactor threads (locked OS threads blocked in epoll_wait), so an
// arriving event wakes one thread that reads it and stamps the read with the monotonic clock
// before any parsing; every event is stamped by the read that completed it. The stamp error
// against qualsim's ground truth is measured by `make bench` (docs/performance.md).
//
// With a bearer token (Plan.TokenEnv, or WithBearerToken) every request and /metrics scrape
// carries "Authorization: Bearer <token>"; the token is never recorded, and a server answer that
// quotes it is recorded with [REDACTED] in its place.
//
// A request fails, with a named error class (ClassConnection, ...), on: a connection or HTTP
// framing error, a non-2xx status, the request timeout, a stream that ends before data: [DONE] or
// mid-event, an over-long SSE line, an event that is not a valid completion chunk (invalid JSON,
// an unknown SSE field or event type, an in-stream error, anything after [DONE]), zero or several
// usage records or one whose total is not prompt + completion, a failed output assertion, or
// cancellation. A failed request never yields a guessed number. An all-zero usage object on a
// chunk that carries a choice is a placeholder (ollama's streamed completions), not a record.
//
// # Corpus and determinism
//
// Resolve reads inline prompts, a JSONL file bound by digest, or the synthetic generator
// qualkit.synthetic-words.v1 (SyntheticWords documents its word list and algorithm). Each row's
// requests are its warmups (indexes 0..W-1, synthetic prompts shaped like the corpus's, see
// warmupPrompts) then the corpus in declared order (W..W+N-1); request i sends
// seed = (sampling.seed + i) mod 2^53 when the case declares a sampling seed. The bytes of each
// body are a function of the case, the model id, the prompt and that seed (Body), and their
// digest is recorded.
//
// # Timestamps
//
// Every *_ns field is nanoseconds since Plan.Epoch on Go's monotonic clock (CLOCK_MONOTONIC on
// Linux): t_sched is the scheduled send (in closed loop, the moment a worker takes the request),
// t_send is taken immediately before the one write(2) that carries the whole request, t_hdr by the
// read that completed the headers, each event's t_ns by the read that completed it, t_end is the
// last content event and t_close the end of the HTTP response.
//
// The package is silent: it logs only to the *slog.Logger given with WithLogger.
package load
