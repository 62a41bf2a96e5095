// Package bench measures qualkit's load client on the host it runs on, against baselines it
// builds itself, in one run: the stamp error of every SSE event (the client's arrival stamp minus
// qualsim's send stamp from its ground-truth log, both CLOCK_MONOTONIC) at 1, 64 and 256
// concurrent streams for qualkit's client (package load), a minimal Go SSE reader
// (GoMinimalStreams) and a Python standard-library thread-per-stream reader
// (testdata/sse_reader.py); the SSE events per second each sustains against qualsim with no
// declared delay; and qualkit's short requests per second as a ratio to wrk against the same
// qualsim. Each reader runs in a process of its own, like the server.
//
// `make bench` runs TestClientFidelity with -report, which rewrites the "Client fidelity" section
// of docs/performance.md with what this host measured; without -report the test is skipped.
package bench
