// Package verify is qualkit's offline verification: schemas, source, hashes, signatures, cleanup,
// tolerances, comparability and scope, in that order (docs/verification.md).
//
// Verify checks one receipt and its evidence against a Policy and returns a Result: findings
// (each wrapping one *Reason sentinel, matched with errors.Is), one CheckResult per check, the
// scope statement and the verdict. Its error means verification could not be carried out; a
// rejection is never an error. Compare applies a workload's comparison policy to two receipts.
// Options that weaken a check say so: AllowUnsignedUnsafe, AllowUnpublishedUnsafe.
//
// The package is the API; the work is done below it, one folder per responsibility (docs/verification.md,
// "Where things live"): internal/load reads and bounds the evidence into one snapshot,
// internal/check and internal/check/rowcheck are the checks (functions of the snapshot),
// internal/compare and internal/fleet compare receipts and bind fleets, internal/gitobj reads git
// objects and internal/record parses request records. Their types are re-exported here as aliases.
//
// Auditors trust its dependency closure, so it imports the contracts (schemas) and the
// verification side of sigstore only: never runner, attest, net/http, os/exec or cue
// (TestDependencyDirection allow-lists every package it links).
package verify
