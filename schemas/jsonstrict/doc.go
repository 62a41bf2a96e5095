// Package jsonstrict parses untrusted JSON strictly (duplicate keys, non-finite or lossy numbers,
// bad UTF-8, depth and size are refused, with RFC 6901 pointers in every error), decodes it into Go
// values without unknown fields, formats numbers, and computes the canonical forms qualkit hashes:
// RFC 8785 JSON, Kiln's literal-preserving form, self-hashes and the source tree hash.
// It imports the standard library and go-digest only.
package jsonstrict
