// Package verify is qualkit's offline verification: schemas, hashes, signatures, cleanup, tolerances,
// comparability and scope. Auditors trust its dependency closure, so it imports schemas and signature
// verification only: never runner, attest, net/http, os/exec or cue.
package verify
