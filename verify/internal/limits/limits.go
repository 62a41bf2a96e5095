// Package limits holds every bound the verifier puts on untrusted input, in one place; package
// verify re-exports each constant under the same name.
package limits

import (
	"github.com/qualkit/qualkit/schemas/jsonstrict"
	"github.com/qualkit/qualkit/schemas/promtext"
	"github.com/qualkit/qualkit/schemas/rules"
	"github.com/qualkit/qualkit/schemas/synth"
	"github.com/qualkit/qualkit/schemas/trace"
	"github.com/qualkit/qualkit/verify/internal/gitobj"
)

// Limits on untrusted evidence, in one place. Evidence beyond them is a finding (or, for the
// receipt itself, an error), never a crash or an unbounded read.
const (
	// MaxDocumentBytes caps one JSON evidence file (receipt, case result, lifecycle record,
	// workload, launch recipe, runtime manifest, corpus) and one line of a JSON Lines file.
	MaxDocumentBytes = jsonstrict.MaxDocumentBytes
	// MaxCorpusFileBytes caps a file a case binds as its corpus: the runner's bound on what it
	// replays (a JSONL corpus or a trace), so that no corpus the runner accepted is refused here.
	MaxCorpusFileBytes = max(synth.MaxCorpusBytes, trace.MaxBytes)
	// MaxAttestationBytes caps a DSSE envelope or Sigstore bundle file.
	MaxAttestationBytes = 64 << 20
	// MaxPolicyBytes caps a policy file.
	MaxPolicyBytes = 1 << 20
	// MaxKeyBytes caps a public key file.
	MaxKeyBytes = 64 << 10
	// MaxRecordsPerFile caps the request records of one JSON Lines file (the contract's bound on a
	// serving case's requests).
	MaxRecordsPerFile = rules.MaxServingRequests
	// MaxRecordsFileBytes caps one request records file (MaxRecordsPerFile records of about 4 KiB):
	// a larger file is refused by fstat before a byte is read.
	MaxRecordsFileBytes = 4 << 30
	// MaxSubjects caps the subjects of an attestation statement: the signer writes at most 1,024
	// (sigstore-go, and so cosign v3, refuse more).
	MaxSubjects = 1024
	// MaxSignatures caps the signatures of one DSSE envelope (each is tried with every pinned key).
	MaxSignatures = 64
	// MaxFindingsPerCheck caps the findings one check reports; the last one says how many more.
	MaxFindingsPerCheck = 1000
	// MaxRunDirEntries caps the files listed below a run directory (every one must be bound).
	MaxRunDirEntries = 1_000_000
	// MaxGitRefBytes caps a git ref file or packed-refs file read to find HEAD and origin/main.
	MaxGitRefBytes = gitobj.MaxRefBytes
	// MaxLinkBytes caps an in-toto link file.
	MaxLinkBytes = MaxAttestationBytes
	// MaxTelemetryBytes bounds one row's device telemetry file.
	MaxTelemetryBytes = 256 << 20
	// MaxScrapeBytes bounds one kept /metrics page: the parser's bound, under which the runner
	// keeps every page.
	MaxScrapeBytes = promtext.MaxPageBytes
)

// Default tolerance of a recomputed number: max(absolute, |recorded| x relative).
const (
	DefaultRecomputeAbsolute = 1e-9
	DefaultRecomputeRelative = 1e-9
)
