// Package evidence holds the rules for touching evidence files: only regular files are read (a FIFO
// or device is refused without blocking), reads are bounded, paths resolve beneath a root without
// symlinks or "..", new files are created exclusively and never overwrite, and file digests.
package evidence
