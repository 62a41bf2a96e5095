// Package contract holds the Go side of every CUE contract under cue/: the document types, typed
// enums with their constants, the artifact-kind table, and the contract names and schema ids.
// The zz_generated_*.go files are written by tools/schemagen from the CUE source (`make generate`;
// `make check-generate` fails on drift): the contract names and schema ids, a typed string enum
// with its constants for every CUE disjunction of strings, the single-valued strings, the
// artifact-kind table declared once by the @kind attributes of #ArtifactKinds in
// cue/common/common.cue, and the document types. Hand-written helpers beside them (helpers.go)
// derive values the contracts define (receipt ids, secret-looking names, a driver case's spec).
// It imports the standard library only.
package contract
