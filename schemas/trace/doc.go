// Package trace is qualkit's timestamped request trace: JSONL, one request per line in timestamp
// order ({"timestamp": ms, "input_length": n, "output_length": n, "hash_ids"?: [...]}, the
// Mooncake trace's shape), read strictly and bounded by Read, written by Write, and the scheduled
// offset of each request (Offsets), which the runner replays and the verifier recomputes.
package trace
