// Package schemas is qualkit's contract registry and checker: the embedded JSON Schemas exported
// from the CUE contracts under cue/, contract lookup by schema id, and one check of a document
// against its JSON Schema and then its contract's semantic rules (CheckDocument, CheckAs, and
// Decode, which validates and decodes in one call).
//
// The module's other packages hold one responsibility each:
//   - jsonstrict: the strict JSON parser (JSON-pointer errors, bounded input), number formatting,
//     canonical forms (RFC 8785 and Kiln's literal-preserving form), self-hashes, the source tree hash;
//   - contract: the Go types, enums and artifact-kind table of every contract, and the contract
//     names and schema ids (generated from cue/ by tools/schemagen), with a few hand-written helpers;
//   - rules: the semantic rules a schema cannot express (the shell rule, driver evaluation, ...);
//   - evidence: the rules for reading and writing evidence files (regular files only, bounded,
//     beneath a root without symlinks, never overwritten) and file digests;
//   - metric: the one metric catalogue, used by the runner to compute and by verify to recompute.
//
// The module depends on the standard library and the JSON Schema validator only; every other
// qualkit module imports it, and it imports none of them.
package schemas
