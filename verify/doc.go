// Package verify is qualkit's offline verification: schemas, source, hashes, signatures, cleanup,
// tolerances, comparability and scope, in that order (docs/verification.md).
//
// Verify checks one receipt and its evidence against a Policy and returns a Result: findings
// (each wrapping one *Reason sentinel, matched with errors.Is), one CheckResult per check, the
// scope statement and the verdict. Its error means verification could not be carried out; a
// rejection is never an error. Compare applies a workload's comparison policy to two receipts.
// Options that weaken a check say so: AllowUnsignedUnsafe, AllowUnpublishedUnsafe.
//
// Auditors trust its dependency closure, so it imports the contracts (schemas) and the
// verification side of sigstore only: never runner, attest, net/http, os/exec or cue
// (TestDependencyDirection allow-lists every package it links).
package verify
