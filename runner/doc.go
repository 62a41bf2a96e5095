// Package runner holds everything qualrun does on a benchmark host: source identity, artifact hashing,
// owned server process groups, readiness, load generation, metrics, cases and receipts.
package runner
