package verify

import "github.com/qualkit/qualkit/verify/internal/reason"

// Reason is a sentinel error with a stable, machine-readable code. Every Finding wraps exactly one
// Reason (match it with errors.Is); the code is what the verification report's findings carry.
// Code returns the stable code, e.g. "digest_mismatch".
type Reason = reason.Reason

// Reasons of the schemas check.
var (
	// ErrInvalidJSON: the file is not strict JSON (duplicate keys, NaN, trailing data, bad UTF-8, ...).
	ErrInvalidJSON = reason.ErrInvalidJSON
	// ErrSchemaViolation: the file does not satisfy its contract's exported JSON Schema.
	ErrSchemaViolation = reason.ErrSchemaViolation
	// ErrSemanticViolation: the file breaks a rule of its contract that the schema cannot express.
	ErrSemanticViolation = reason.ErrSemanticViolation
	// ErrHistoricalEvidence: version-1 evidence with a machine-specific temperature policy.
	ErrHistoricalEvidence = reason.ErrHistoricalEvidence
	// ErrUnknownContract: the file names no known contract.
	ErrUnknownContract = reason.ErrUnknownContract
	// ErrWrongContract: the file is a valid document of another contract than its role needs.
	ErrWrongContract = reason.ErrWrongContract
	// ErrSelfHash: a self-hashed document (a driver result's result_sha256) differs from the hash
	// of its canonical form: it was changed after it was written.
	ErrSelfHash = reason.ErrSelfHash
)

// Reasons of the source check.
var (
	// ErrSourceFormat: a commit, tree or tree hash is not in its required format.
	ErrSourceFormat = reason.ErrSourceFormat
	// ErrDirtySource: the campaign ran from a worktree with uncommitted changes.
	ErrDirtySource = reason.ErrDirtySource
	// ErrUnpublished: publication is required and the receipt is not publishable (HEAD was not
	// origin/main, or the receipt says so).
	ErrUnpublished = reason.ErrUnpublished
	// ErrNotOriginMain: publication is required and the checkout's origin/main is another commit
	// than the one the receipt was made from.
	ErrNotOriginMain = reason.ErrNotOriginMain
	// ErrTreeHashMismatch: the receipt's tree or tree hash differs from the one recomputed from
	// the checkout's git objects for its commit.
	ErrTreeHashMismatch = reason.ErrTreeHashMismatch
	// ErrInputNotInCommit: a bound input the checks read (the workload, a launch recipe, a corpus
	// file) is not the blob the receipt's commit holds at its path: the receipt names a source it
	// did not run.
	ErrInputNotInCommit = reason.ErrInputNotInCommit
)

// Reasons of the hashes check.
var (
	// ErrMissingFile: a referenced evidence file does not exist.
	ErrMissingFile = reason.ErrMissingFile
	// ErrUnreadableFile: a referenced file exists but cannot be read safely (not a regular file,
	// outside the repository, too large, permission).
	ErrUnreadableFile = reason.ErrUnreadableFile
	// ErrDigestMismatch: a file's sha256 differs from the digest that binds it.
	ErrDigestMismatch = reason.ErrDigestMismatch
	// ErrSizeMismatch: a file's size differs from the recorded bytes.
	ErrSizeMismatch = reason.ErrSizeMismatch
	// ErrSubjectMismatch: an attestation subject's digest differs from the file it names.
	ErrSubjectMismatch = reason.ErrSubjectMismatch
	// ErrReferenceMismatch: two bindings of one file disagree (a result's case_result, the
	// lifecycle reference, a row's records, the artifact list).
	ErrReferenceMismatch = reason.ErrReferenceMismatch
	// ErrUnboundFile: a file below the receipt's run directory is not bound by the receipt (and so
	// by no attestation): everything there is evidence that must match the receipt.
	ErrUnboundFile = reason.ErrUnboundFile
	// ErrMissingInput: a bound input whose content the checks read (the workload, a launch recipe,
	// a corpus file) is not present: the checks it decides cannot be carried out.
	ErrMissingInput = reason.ErrMissingInput
	// ErrIdentityMismatch: the receipt id is not the one its own start, backend, host id, workload
	// and variant name, or an evidence file is not below the run directory the id names.
	ErrIdentityMismatch = reason.ErrIdentityMismatch
)

// Reasons of the signature check.
var (
	// ErrUnsigned: no attestation (DSSE envelope or Sigstore bundle) was found for the receipt.
	ErrUnsigned = reason.ErrUnsigned
	// ErrMalformedAttestation: an envelope, bundle or statement cannot be read as the format requires.
	ErrMalformedAttestation = reason.ErrMalformedAttestation
	// ErrBadSignature: no signature verifies with a pinned public key.
	ErrBadSignature = reason.ErrBadSignature
	// ErrStatementMismatch: the signed statement does not bind this receipt (subjects or predicate differ).
	ErrStatementMismatch = reason.ErrStatementMismatch
	// ErrAttestationsDiffer: the envelope and the bundle carry different statements.
	ErrAttestationsDiffer = reason.ErrAttestationsDiffer
	// ErrSignaturePolicy: the attestation verifies, but not as the policy's signatures rule
	// requires (fewer distinct pinned keys than its threshold, or a signature that does not
	// verify where every one must).
	ErrSignaturePolicy = reason.ErrSignaturePolicy
)

// Reasons of a keyless (certificate) bundle, decided by Policy.Keyless.
var (
	// ErrUntrustedRoot: the bundle's certificate does not chain to a certificate authority of the
	// trusted root (a bundle from another Sigstore instance).
	ErrUntrustedRoot = reason.ErrUntrustedRoot
	// ErrInclusionProof: no transparency log entry of the trusted root with a valid inclusion proof.
	ErrInclusionProof = reason.ErrInclusionProof
	// ErrSignedTimestamp: an RFC 3161 timestamp does not verify with the trusted root's authorities.
	ErrSignedTimestamp = reason.ErrSignedTimestamp
	// ErrCertificateValidity: the certificate was not valid when the log or a timestamp authority saw the signature.
	ErrCertificateValidity = reason.ErrCertificateValidity
	// ErrCertificateSCT: the certificate has no valid SCT of a CT log of the trusted root.
	ErrCertificateSCT = reason.ErrCertificateSCT
	// ErrCertificateIssuer: the certificate's OIDC issuer is not the policy's.
	ErrCertificateIssuer = reason.ErrCertificateIssuer
	// ErrCertificateIdentity: the certificate's subject is not the policy's identity.
	ErrCertificateIdentity = reason.ErrCertificateIdentity
)

// Reasons of the cleanup check (lifecycle and listener ownership).
var (
	// ErrNoLifecycle: serving cases ran but the receipt binds no lifecycle record.
	ErrNoLifecycle = reason.ErrNoLifecycle
	// ErrLifecycleIncomplete: the lifecycle record lacks launch, readiness, listener or shutdown evidence.
	ErrLifecycleIncomplete = reason.ErrLifecycleIncomplete
	// ErrNotReady: the server never became ready.
	ErrNotReady = reason.ErrNotReady
	// ErrReadyLate: readiness was observed after the startup deadline.
	ErrReadyLate = reason.ErrReadyLate
	// ErrPortTaken: something listened on the port before launch.
	ErrPortTaken = reason.ErrPortTaken
	// ErrListenerNotOwned: the listening socket was not held by the owned process tree.
	ErrListenerNotOwned = reason.ErrListenerNotOwned
	// ErrForcedShutdown: SIGKILL was needed.
	ErrForcedShutdown = reason.ErrForcedShutdown
	// ErrExitNotAcceptable: the server's exit status is not an acceptable exit code.
	ErrExitNotAcceptable = reason.ErrExitNotAcceptable
	// ErrResidue: a process or listener of the owned server remained after shutdown.
	ErrResidue = reason.ErrResidue
	// ErrLifecycleFailed: the lifecycle record's verdict is failed.
	ErrLifecycleFailed = reason.ErrLifecycleFailed
	// ErrLifecycleMismatch: the lifecycle record disagrees with the receipt, the recipe or the log.
	ErrLifecycleMismatch = reason.ErrLifecycleMismatch
	// ErrLifecycleImplausible: the lifecycle record cannot be what the runner measured: an elapsed
	// time that is not the difference of its own offsets, events out of order, a graceful shutdown
	// longer than the recipe's deadline, more readiness probes than fit in the time, a leader that
	// does not lead its process group.
	ErrLifecycleImplausible = reason.ErrLifecycleImplausible
)

// Reasons of the tolerances check (correctness and numerical tolerances).
var (
	// ErrVerdictFailed: the receipt's verdict is failed.
	ErrVerdictFailed = reason.ErrVerdictFailed
	// ErrInterrupted: the receipt's verdict is interrupted: a signal stopped qualrun mid-campaign,
	// and the receipt binds a partial campaign (qualification.interruption says when).
	ErrInterrupted = reason.ErrInterrupted // not a contract value: a reason code
	// ErrRequestFailed: a measured request of a passed result failed or broke an assertion.
	ErrRequestFailed = reason.ErrRequestFailed
	// ErrResultMismatch: the receipt's summary of a result disagrees with its case result.
	ErrResultMismatch = reason.ErrResultMismatch
	// ErrRowMismatch: a row's counts, window or output set disagree with its request records.
	ErrRowMismatch = reason.ErrRowMismatch
	// ErrCapacityMismatch: a capacity search's rows are not the probes the search would run, or a
	// recorded decision or outcome differs from its replay from the rows.
	ErrCapacityMismatch = reason.ErrCapacityMismatch
	// ErrParetoMismatch: a case's Pareto front differs from its recomputation from the rows.
	ErrParetoMismatch = reason.ErrParetoMismatch
	// ErrIntervalMismatch: a case's confidence intervals differ from their recomputation from the
	// records.
	ErrIntervalMismatch = reason.ErrIntervalMismatch
	// ErrMetricMismatch: a recorded metric differs from its recomputation beyond the tolerance,
	// or is missing, or should not be there.
	ErrMetricMismatch = reason.ErrMetricMismatch
	// ErrDeclaredMetrics: a case result does not carry exactly the declared metrics, or the
	// runner metrics contradict the status.
	ErrDeclaredMetrics = reason.ErrDeclaredMetrics
	// ErrUnknownTolerance: a declared tolerance names no metric of its result.
	ErrUnknownTolerance = reason.ErrUnknownTolerance
	// ErrToleranceDeclared: a driver result's tolerance outcomes do not come from the tolerances
	// the workload declares for its case (other rules, limits, subjects or order).
	ErrToleranceDeclared = reason.ErrToleranceDeclared
	// ErrToleranceOutcome: a driver result's recorded tolerance outcome (observed number or
	// passed) differs from its recomputation from the result's numbers.
	ErrToleranceOutcome = reason.ErrToleranceOutcome
	// ErrToleranceFailed: a declared numerical tolerance of a driver case does not hold.
	ErrToleranceFailed = reason.ErrToleranceFailed
	// ErrDriverVerdict: a driver result's verdict (status, argmax candidate, attribution, largest
	// error growth) differs from its recomputation.
	ErrDriverVerdict = reason.ErrDriverVerdict
	// ErrVerdictMismatch: a runner-written verdict field (a result's required flag or status, the
	// campaign verdict, publishable) differs from its derivation from the workload and the evidence.
	ErrVerdictMismatch = reason.ErrVerdictMismatch
	// ErrDegradedRow: a degraded row (the client could not keep its schedule) in a receipt that
	// must be publishable, or under a comparison's performance rule, and its case does not declare
	// measures_saturation.
	ErrDegradedRow = reason.ErrDegradedRow
	// ErrLoadNotReached: a row did not measure its declared load: a closed-loop row never had its
	// concurrency in flight, or an open-loop row records another offered rate than its case's,
	// or t_sched times off the arrival schedule its workload seed gives.
	ErrLoadNotReached = reason.ErrLoadNotReached
	// ErrTimeoutExceeded: a serving case's records span more than its timeout_seconds, or it
	// says it stopped by its timeout before the timeout.
	ErrTimeoutExceeded = reason.ErrTimeoutExceeded
)

// Reasons of the comparability check and of Compare.
var (
	// ErrWorkloadMismatch: workload identity differs (id, digest, variant, kind, seed, variables).
	ErrWorkloadMismatch = reason.ErrWorkloadMismatch
	// ErrConfigMismatch: an effective configuration differs where no difference is allowed.
	ErrConfigMismatch = reason.ErrConfigMismatch
	// ErrCorpusMismatch: the prompt set differs from the corpus (or between compared rows).
	ErrCorpusMismatch = reason.ErrCorpusMismatch
	// ErrBodyMismatch: a request record's body_digest differs from the sha256 of the body the
	// case, the model and the prompt the record names render: the record claims to have asked
	// something else.
	ErrBodyMismatch = reason.ErrBodyMismatch
	// ErrFormulaMismatch: one metric name carries two formula ids (or units, aggregations,
	// directions); a request-window throughput is never compared with a decode rate.
	ErrFormulaMismatch = reason.ErrFormulaMismatch
	// ErrUnlikeRows: compared rows differ in their shape (loop, offered rate, missing row).
	ErrUnlikeRows = reason.ErrUnlikeRows
	// ErrEnvironmentMismatch: the environment differs where the mode needs it identical.
	ErrEnvironmentMismatch = reason.ErrEnvironmentMismatch
	// ErrDeviceMismatch: the receipts' devices differ in model, driver or another identity field
	// the mode needs equal (by position in environment.devices; provenance-only ids never count).
	ErrDeviceMismatch = reason.ErrDeviceMismatch
	// ErrSourceMismatch: the source tree hash differs.
	ErrSourceMismatch = reason.ErrSourceMismatch
	// ErrArtifactMismatch: a bound input (model, tokenizer, corpus, recipe) differs.
	ErrArtifactMismatch = reason.ErrArtifactMismatch
	// ErrModeRefused: the comparison policy does not allow this comparison.
	ErrModeRefused = reason.ErrModeRefused
	// ErrRuleFailed: a metric rule's tolerance was exceeded.
	ErrRuleFailed = reason.ErrRuleFailed
	// ErrCacheRegimeMismatch: compared rows declare different prefix-cache regimes, or their
	// servers reported different ones (docs/caching.md).
	ErrCacheRegimeMismatch = reason.ErrCacheRegimeMismatch
	// ErrOutputMismatch: a row's outputs differ in a correctness comparison.
	ErrOutputMismatch = reason.ErrOutputMismatch
	// ErrTooFewSamples: a statistical rule refused: a side has fewer per-request samples than
	// metric.MinSamplesSignificance.
	ErrTooFewSamples = reason.ErrTooFewSamples
)

// Reasons of the scope check.
var (
	// ErrScopeBackend: the receipt's backend is not the variant's backend.
	ErrScopeBackend = reason.ErrScopeBackend
	// ErrScopeDevice: an accelerator backend with no identified device driver.
	ErrScopeDevice = reason.ErrScopeDevice
)

// ErrLinkMismatch: the campaign's in-toto link does not match the receipt (its materials are not
// exactly the bound inputs, or its products not exactly the receipt and its evidence files, by
// digest), or it is malformed, or no signature verifies with a pinned key.
var ErrLinkMismatch = reason.ErrLinkMismatch

// ErrFindingsTruncated marks the last finding of a check that had more than MaxFindingsPerCheck.
var ErrFindingsTruncated = reason.ErrFindingsTruncated

// Reasons lists every Reason, grouped by check in protocol order (then Compare's, then the
// truncation marker).
func Reasons() []*Reason { return reason.Reasons() }
