// Package record is the verifier's request-record parser and the metric inputs made from its
// records: Read streams one JSON Lines file of request records (hashing every byte, validating
// every line: the hand-written fast path Parse, else schemas.CheckDocument), and the formulas
// (formulas.go) turn records and rows into the inputs of schemas/metric, the one catalogue the
// runner computes with, to recompute every number a receipt states.
package record
