// Package artifact binds files to a campaign by content: it hashes model files, launch recipes,
// server binaries, configuration files, runtime manifests and workloads with SHA-256 (go-digest
// form, "sha256:<hex>"), in parallel across files, and re-hashes them at the end of a campaign to
// name any that changed or vanished.
//
// Files are opened with O_NOFOLLOW and must be regular files. Each file is read in 1 MiB chunks
// and hashed by one goroutine, up to GOMAXPROCS files at a time, so one file hashes at close to
// the machine's raw SHA-256 rate and several scale with the cores; docs/performance.md has the
// measured numbers.
package artifact
