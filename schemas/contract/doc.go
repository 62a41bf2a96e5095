// Package contract holds the Go of qualkit's contracts. The zz_generated_*.go files are written by
// tools/schemagen from the CUE source under cue/ (`make generate`; `make check-generate` fails on
// drift): the contract names and schema ids, a typed string enum with its constants for every CUE
// disjunction of strings, the single-valued strings, and the artifact-kind table declared once by
// the @kind attributes of #ArtifactKinds in cue/common/common.cue. The package is stdlib-only.
package contract
