// Package contract holds the Go side of every CUE contract under cue/: the document types, typed
// enums with their constants, the artifact-kind table, and the contract names and schema ids.
// Hand-written helpers beside the types (helpers.go) derive values the contracts define (receipt
// ids, secret-looking names, a driver case's spec). It imports the standard library only.
package contract
