// Package attest builds in-toto Statement v1 attestations of qualkit receipts and signs them as DSSE
// envelopes through sigstore signers.
//
// For a receipt DIR/NAME.json, AttestReceipt writes two new files beside it: DIR/NAME.intoto.dsse.json,
// a plain DSSE envelope (payload type application/vnd.in-toto+json, one ECDSA P-256 signature,
// empty keyid), and DIR/NAME.sigstore.json, the same envelope in a Sigstore bundle v0.3 that names
// the public key by hint only (no certificate, no transparency log entry). Both verify with stock
// cosign and a public key, offline. The Statement's subjects are the receipt and its per-run
// evidence files (case results, request records, the lifecycle record, the server log); its
// predicate (attestfmt.PredicateType) binds the source identity, every bound input by digest, the workload,
// variant and variables, the host id and the qualrun binary.
//
// With the same key, WriteLink writes the campaign's in-toto link (in-toto-golang's classic
// metadata: materials the bound inputs, products the receipt and its evidence) to
// DIR/NAME.in-toto/qualkit-campaign.KEYID8.link, and Layout builds the layout a project owner signs
// (SignMetablock) for in-toto's own verifier.
//
// Keys are ECDSA P-256 only: LoadSigner reads cosign's encrypted key files and unencrypted PKCS#8,
// and refuses Ed25519 (ErrEd25519). Any sigstore signature.Signer (a KMS key, say) becomes a Signer
// through NewSigner. The package never prints; failures are errors wrapping the sentinels below.
package attest
