// Package oci moves receipts through an OCI registry: Publish pushes a receipt with its evidence
// tree as one OCI artifact (one layer per file, its path in the layer's title annotation) and the
// receipt's Sigstore bundle as a referrer of that artifact, laid out as cosign lays out bundles;
// Pull fetches an artifact into a fresh directory under bounds (manifest size, layer count and
// size, clean relative paths, regular files only, every byte checked against its digest), so
// that the verifier reads it offline like any evidence tree.
//
// It lives in tools, not in verify: verify may not import a network client (verify/deps_test.go),
// so the CLI pulls here and hands verify a directory.
package oci
