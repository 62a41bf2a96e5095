// Package keyless signs qualkit statements the way release pipelines sign (Sigstore "keyless"):
// an OIDC identity token of the CI job buys a short-lived Fulcio certificate for an ephemeral
// key, the DSSE signature is logged in Rekor (the bundle keeps the inclusion proof and its signed
// checkpoint), an RFC 3161 timestamp is optional, and the result is a Sigstore bundle v0.3 beside
// the plain DSSE envelope, as attest.AttestReceipt writes them for a key.
//
// Verify checks such a bundle offline against a trusted_root.json and an identity policy
// (certificate subject and OIDC issuer, exact or regular expression), and names the reason of a
// refusal with the sentinel errors below, in the order they are checked: the bundle's form, the
// certificate chain (a bundle from another trusted root), the transparency log inclusion proof,
// the RFC 3161 timestamps, the certificate's validity at the logged signing time, the SCT, the
// issuer, the subject, and last the signature itself (sigstore-go's verifier over everything).
//
// This package links net/http (the Fulcio, Rekor and timestamp clients, through sigstore-go);
// the attest package itself does not.
package keyless
