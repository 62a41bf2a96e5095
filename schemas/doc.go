// Package schemas is qualkit's contract layer: the embedded JSON Schemas exported from the CUE
// contracts under cue/, strict JSON decoding with JSON-pointer errors, validation against the
// schemas plus the semantic rules a schema cannot express, the Go types of every contract, and
// canonical JSON and self-hash helpers (RFC 8785, and Kiln's historical literal-preserving form).
//
// It depends on the standard library and the JSON Schema validator only; every other qualkit
// module imports it, and it imports none of them.
package schemas
