package verify

import "github.com/qualkit/qualkit/verify/internal/limits"

// Limits on untrusted evidence, in one place. Evidence beyond them is a finding (or, for the
// receipt itself, an error), never a crash or an unbounded read.
const (
	// MaxDocumentBytes caps one JSON evidence file (receipt, case result, lifecycle record,
	// workload, launch recipe, runtime manifest, corpus) and one line of a JSON Lines file.
	MaxDocumentBytes = limits.MaxDocumentBytes
	// MaxAttestationBytes caps a DSSE envelope or Sigstore bundle file.
	MaxAttestationBytes = limits.MaxAttestationBytes
	// MaxCorpusFileBytes caps a file a case binds as its corpus (a JSONL corpus or a trace).
	MaxCorpusFileBytes = limits.MaxCorpusFileBytes
	// MaxPolicyBytes caps a policy file.
	MaxPolicyBytes = limits.MaxPolicyBytes
	// MaxKeyBytes caps a public key file.
	MaxKeyBytes = limits.MaxKeyBytes
	// MaxRecordsPerFile caps the request records of one JSON Lines file (the contract's bound on a
	// serving case's requests).
	MaxRecordsPerFile = limits.MaxRecordsPerFile
	// MaxRecordsFileBytes caps one request records file (MaxRecordsPerFile records of about 4 KiB):
	// a larger file is refused by fstat before a byte is read.
	MaxRecordsFileBytes = limits.MaxRecordsFileBytes
	// MaxSubjects caps the subjects of an attestation statement: the signer writes at most 1,024
	// (sigstore-go, and so cosign v3, refuse more).
	MaxSubjects = limits.MaxSubjects
	// MaxSignatures caps the signatures of one DSSE envelope (each is tried with every pinned key).
	MaxSignatures = limits.MaxSignatures
	// MaxFindingsPerCheck caps the findings one check reports; the last one says how many more.
	MaxFindingsPerCheck = limits.MaxFindingsPerCheck
	// MaxRunDirEntries caps the files listed below a run directory (every one must be bound).
	MaxRunDirEntries = limits.MaxRunDirEntries
	// MaxGitRefBytes caps a git ref file or packed-refs file read to find HEAD and origin/main.
	MaxGitRefBytes = limits.MaxGitRefBytes
	// MaxLinkBytes caps an in-toto link file.
	MaxLinkBytes = limits.MaxLinkBytes
	// MaxTelemetryBytes bounds one row's device telemetry file.
	MaxTelemetryBytes = limits.MaxTelemetryBytes
	// MaxScrapeBytes bounds one row's kept /metrics page.
	MaxScrapeBytes = limits.MaxScrapeBytes
)

// Default tolerance of a recomputed number: max(absolute, |recorded| x relative).
const (
	DefaultRecomputeAbsolute = limits.DefaultRecomputeAbsolute
	DefaultRecomputeRelative = limits.DefaultRecomputeRelative
)
