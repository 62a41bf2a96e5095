// Package attest builds in-toto Statement v1 attestations of qualkit receipts and signs them as DSSE
// envelopes through sigstore signers.
package attest
