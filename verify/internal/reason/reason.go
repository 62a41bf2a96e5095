// Package reason holds the verifier's finding reasons: each a sentinel error with a stable code,
// one block per check in protocol order. Package verify re-exports every one (verify.ErrX is
// reason.ErrX, the same pointer, so errors.Is works on either name).
package reason

import "errors"

// Reason is a sentinel error with a stable, machine-readable code. Every Finding wraps exactly one
// Reason (match it with errors.Is); the code is what the verification report's findings carry.
type Reason struct{ code, text string }

func (r *Reason) Error() string { return r.text }

// Code returns the stable code, e.g. "digest_mismatch".
func (r *Reason) Code() string { return r.code }

func define(code, text string) *Reason { return &Reason{code: code, text: text} }

// Reasons of the schemas check.
var (
	// ErrInvalidJSON: the file is not strict JSON (duplicate keys, NaN, trailing data, bad UTF-8, ...).
	ErrInvalidJSON = define("invalid_json", "not strict JSON")
	// ErrSchemaViolation: the file does not satisfy its contract's exported JSON Schema.
	ErrSchemaViolation = define("schema_violation", "schema violation")
	// ErrSemanticViolation: the file breaks a rule of its contract that the schema cannot express.
	ErrSemanticViolation = define("semantic_violation", "semantic rule violation")
	// ErrHistoricalEvidence: version-1 evidence with a machine-specific temperature policy.
	ErrHistoricalEvidence = define("historical_evidence", "historical evidence refused")
	// ErrUnknownContract: the file names no known contract.
	ErrUnknownContract = define("unknown_contract", "unknown contract")
	// ErrWrongContract: the file is a valid document of another contract than its role needs.
	ErrWrongContract = define("wrong_contract", "wrong contract")
	// ErrSelfHash: a self-hashed document (a driver result's result_sha256) differs from the hash
	// of its canonical form: it was changed after it was written.
	ErrSelfHash = define("self_hash_mismatch", "self-hash mismatch")
)

// Reasons of the source check.
var (
	// ErrSourceFormat: a commit, tree or tree hash is not in its required format.
	ErrSourceFormat = define("source_format", "source identity malformed")
	// ErrDirtySource: the campaign ran from a worktree with uncommitted changes.
	ErrDirtySource = define("dirty_source", "source tree not clean")
	// ErrUnpublished: publication is required and the receipt is not publishable (HEAD was not
	// origin/main, or the receipt says so).
	ErrUnpublished = define("unpublished", "not publishable")
	// ErrNotOriginMain: publication is required and the checkout's origin/main is another commit
	// than the one the receipt was made from.
	ErrNotOriginMain = define("not_origin_main", "receipt commit is not origin/main")
	// ErrTreeHashMismatch: the receipt's tree or tree hash differs from the one recomputed from
	// the checkout's git objects for its commit.
	ErrTreeHashMismatch = define("tree_hash_mismatch", "source tree hash differs from its recomputation")
	// ErrInputNotInCommit: a bound input the checks read (the workload, a launch recipe, a corpus
	// file) is not the blob the receipt's commit holds at its path: the receipt names a source it
	// did not run.
	ErrInputNotInCommit = define("input_not_in_commit", "bound input is not the commit's")
)

// Reasons of the hashes check.
var (
	// ErrMissingFile: a referenced evidence file does not exist.
	ErrMissingFile = define("missing_file", "evidence file missing")
	// ErrUnreadableFile: a referenced file exists but cannot be read safely (not a regular file,
	// outside the repository, too large, permission).
	ErrUnreadableFile = define("unreadable_file", "file cannot be read")
	// ErrDigestMismatch: a file's sha256 differs from the digest that binds it.
	ErrDigestMismatch = define("digest_mismatch", "digest mismatch")
	// ErrSizeMismatch: a file's size differs from the recorded bytes.
	ErrSizeMismatch = define("size_mismatch", "size mismatch")
	// ErrSubjectMismatch: an attestation subject's digest differs from the file it names.
	ErrSubjectMismatch = define("subject_mismatch", "attestation subject does not match the file")
	// ErrReferenceMismatch: two bindings of one file disagree (a result's case_result, the
	// lifecycle reference, a row's records, the artifact list).
	ErrReferenceMismatch = define("reference_mismatch", "references disagree")
	// ErrUnboundFile: a file below the receipt's run directory is not bound by the receipt (and so
	// by no attestation): everything there is evidence that must match the receipt.
	ErrUnboundFile = define("unbound_file", "file not bound by the receipt")
	// ErrMissingInput: a bound input whose content the checks read (the workload, a launch recipe,
	// a corpus file) is not present: the checks it decides cannot be carried out.
	ErrMissingInput = define("missing_input", "bound input missing")
	// ErrIdentityMismatch: the receipt id is not the one its own start, backend, host id, workload
	// and variant name, or an evidence file is not below the run directory the id names.
	ErrIdentityMismatch = define("identity_mismatch", "receipt identity inconsistent")
)

// Reasons of the signature check.
var (
	// ErrUnsigned: no attestation (DSSE envelope or Sigstore bundle) was found for the receipt.
	ErrUnsigned = define("unsigned", "no attestation")
	// ErrMalformedAttestation: an envelope, bundle or statement cannot be read as the format requires.
	ErrMalformedAttestation = define("malformed_attestation", "malformed attestation")
	// ErrBadSignature: no signature verifies with a pinned public key.
	ErrBadSignature = define("bad_signature", "signature does not verify with a pinned key")
	// ErrStatementMismatch: the signed statement does not bind this receipt (subjects or predicate differ).
	ErrStatementMismatch = define("statement_mismatch", "statement does not match the receipt")
	// ErrAttestationsDiffer: the envelope and the bundle carry different statements.
	ErrAttestationsDiffer = define("attestations_differ", "envelope and bundle differ")
	// ErrSignaturePolicy: the attestation verifies, but not as the policy's signatures rule
	// requires (fewer distinct pinned keys than its threshold, or a signature that does not
	// verify where every one must).
	ErrSignaturePolicy = define("signature_policy", "signature policy not met")
)

// Reasons of a keyless (certificate) bundle, decided by Policy.Keyless (load/keyless.go).
var (
	// ErrUntrustedRoot: the bundle's certificate does not chain to a certificate authority of the
	// trusted root (a bundle from another Sigstore instance).
	ErrUntrustedRoot = define("untrusted_root", "certificate does not chain to the trusted root")
	// ErrInclusionProof: no transparency log entry of the trusted root with a valid inclusion proof.
	ErrInclusionProof = define("inclusion_proof", "transparency log inclusion proof missing or invalid")
	// ErrSignedTimestamp: an RFC 3161 timestamp does not verify with the trusted root's authorities.
	ErrSignedTimestamp = define("signed_timestamp", "signed timestamp does not verify")
	// ErrCertificateValidity: the certificate was not valid when the log or a timestamp authority saw the signature.
	ErrCertificateValidity = define("certificate_validity", "certificate not valid at signing time")
	// ErrCertificateSCT: the certificate has no valid SCT of a CT log of the trusted root.
	ErrCertificateSCT = define("certificate_sct", "certificate transparency SCT missing or invalid")
	// ErrCertificateIssuer: the certificate's OIDC issuer is not the policy's.
	ErrCertificateIssuer = define("certificate_issuer", "certificate OIDC issuer not allowed")
	// ErrCertificateIdentity: the certificate's subject is not the policy's identity.
	ErrCertificateIdentity = define("certificate_identity", "certificate identity not allowed")
)

// Keyless are the keyless reasons, in the order a refusal is matched against them.
var Keyless = []*Reason{ErrUntrustedRoot, ErrInclusionProof, ErrSignedTimestamp, ErrCertificateValidity, ErrCertificateSCT, ErrCertificateIssuer, ErrCertificateIdentity}

// Reasons of the cleanup check (lifecycle and listener ownership).
var (
	// ErrNoLifecycle: serving cases ran but the receipt binds no lifecycle record.
	ErrNoLifecycle = define("no_lifecycle", "no lifecycle record")
	// ErrLifecycleIncomplete: the lifecycle record lacks launch, readiness, listener or shutdown evidence.
	ErrLifecycleIncomplete = define("lifecycle_incomplete", "lifecycle record incomplete")
	// ErrNotReady: the server never became ready.
	ErrNotReady = define("not_ready", "server not ready")
	// ErrReadyLate: readiness was observed after the startup deadline.
	ErrReadyLate = define("ready_late", "ready after the deadline")
	// ErrPortTaken: something listened on the port before launch.
	ErrPortTaken = define("port_taken", "port taken before launch")
	// ErrListenerNotOwned: the listening socket was not held by the owned process tree.
	ErrListenerNotOwned = define("listener_not_owned", "listener not owned")
	// ErrForcedShutdown: SIGKILL was needed.
	ErrForcedShutdown = define("forced_shutdown", "forced shutdown")
	// ErrExitNotAcceptable: the server's exit status is not an acceptable exit code.
	ErrExitNotAcceptable = define("exit_not_acceptable", "exit code not acceptable")
	// ErrResidue: a process or listener of the owned server remained after shutdown.
	ErrResidue = define("residue", "residue after shutdown")
	// ErrLifecycleFailed: the lifecycle record's verdict is failed.
	ErrLifecycleFailed = define("lifecycle_failed", "lifecycle failed")
	// ErrLifecycleMismatch: the lifecycle record disagrees with the receipt, the recipe or the log.
	ErrLifecycleMismatch = define("lifecycle_mismatch", "lifecycle record disagrees")
	// ErrLifecycleImplausible: the lifecycle record cannot be what the runner measured: an elapsed
	// time that is not the difference of its own offsets, events out of order, a graceful shutdown
	// longer than the recipe's deadline, more readiness probes than fit in the time, a leader that
	// does not lead its process group.
	ErrLifecycleImplausible = define("lifecycle_implausible", "lifecycle record implausible")
)

// Reasons of the tolerances check (correctness and numerical tolerances).
var (
	// ErrVerdictFailed: the receipt's verdict is failed.
	ErrVerdictFailed = define("verdict_failed", "verdict failed")
	// ErrInterrupted: the receipt's verdict is interrupted: a signal stopped qualrun mid-campaign,
	// and the receipt binds a partial campaign (qualification.interruption says when).
	ErrInterrupted = define("interrupted", "campaign interrupted") // not a contract value: a reason code
	// ErrRequestFailed: a measured request of a passed result failed or broke an assertion.
	ErrRequestFailed = define("request_failed", "request failed")
	// ErrResultMismatch: the receipt's summary of a result disagrees with its case result.
	ErrResultMismatch = define("result_mismatch", "result summary disagrees")
	// ErrRowMismatch: a row's counts, window or output set disagree with its request records.
	ErrRowMismatch = define("row_mismatch", "row disagrees with its records")
	// ErrCapacityMismatch: a capacity search's rows are not the probes the search would run, or a
	// recorded decision or outcome differs from its replay from the rows.
	ErrCapacityMismatch = define("capacity_mismatch", "capacity search differs from its replay")
	// ErrParetoMismatch: a case's Pareto front differs from its recomputation from the rows.
	ErrParetoMismatch = define("pareto_mismatch", "Pareto front differs from its recomputation")
	// ErrIntervalMismatch: a case's confidence intervals differ from their recomputation from the
	// records.
	ErrIntervalMismatch = define("interval_mismatch", "confidence interval differs from its recomputation")
	// ErrMetricMismatch: a recorded metric differs from its recomputation beyond the tolerance,
	// or is missing, or should not be there.
	ErrMetricMismatch = define("metric_mismatch", "metric differs from its recomputation")
	// ErrDeclaredMetrics: a case result does not carry exactly the declared metrics, or the
	// runner metrics contradict the status.
	ErrDeclaredMetrics = define("declared_metrics", "declared metrics not met")
	// ErrUnknownTolerance: a declared tolerance names no metric of its result.
	ErrUnknownTolerance = define("unknown_tolerance", "tolerance for an unknown metric")
	// ErrToleranceDeclared: a driver result's tolerance outcomes do not come from the tolerances
	// the workload declares for its case (other rules, limits, subjects or order).
	ErrToleranceDeclared = define("tolerance_declaration_mismatch", "tolerances differ from the workload's")
	// ErrToleranceOutcome: a driver result's recorded tolerance outcome (observed number or
	// passed) differs from its recomputation from the result's numbers.
	ErrToleranceOutcome = define("tolerance_outcome_mismatch", "tolerance outcome differs from its recomputation")
	// ErrToleranceFailed: a declared numerical tolerance of a driver case does not hold.
	ErrToleranceFailed = define("tolerance_failed", "tolerance failed")
	// ErrDriverVerdict: a driver result's verdict (status, argmax candidate, attribution, largest
	// error growth) differs from its recomputation.
	ErrDriverVerdict = define("driver_verdict_mismatch", "driver verdict differs from its recomputation")
	// ErrVerdictMismatch: a runner-written verdict field (a result's required flag or status, the
	// campaign verdict, publishable) differs from its derivation from the workload and the evidence.
	ErrVerdictMismatch = define("verdict_mismatch", "verdict differs from its derivation")
	// ErrDegradedRow: a degraded row (the client could not keep its schedule) in a receipt that
	// must be publishable, or under a comparison's performance rule, and its case does not declare
	// measures_saturation.
	ErrDegradedRow = define("degraded_row", "degraded row")
	// ErrLoadNotReached: a row did not measure its declared load: a closed-loop row never had its
	// concurrency in flight, or an open-loop row records another offered rate than its case's,
	// or t_sched times off the arrival schedule its workload seed gives.
	ErrLoadNotReached = define("load_not_reached", "declared load not reached")
	// ErrTimeoutExceeded: a serving case's records span more than its timeout_seconds, or it
	// says it stopped by its timeout before the timeout.
	ErrTimeoutExceeded = define("timeout_exceeded", "case timeout exceeded")
)

// Reasons of the comparability check and of Compare.
var (
	// ErrWorkloadMismatch: workload identity differs (id, digest, variant, kind, seed, variables).
	ErrWorkloadMismatch = define("workload_mismatch", "workload identity differs")
	// ErrConfigMismatch: an effective configuration differs where no difference is allowed.
	ErrConfigMismatch = define("config_mismatch", "effective configuration differs")
	// ErrCorpusMismatch: the prompt set differs from the corpus (or between compared rows).
	ErrCorpusMismatch = define("corpus_mismatch", "prompt set differs")
	// ErrBodyMismatch: a request record's body_digest differs from the sha256 of the body the
	// case, the model and the prompt the record names render (check/body.go): the record claims to
	// have asked something else.
	ErrBodyMismatch = define("body_mismatch", "request body differs from the one the workload renders")
	// ErrFormulaMismatch: one metric name carries two formula ids (or units, aggregations,
	// directions); a request-window throughput is never compared with a decode rate.
	ErrFormulaMismatch = define("formula_mismatch", "metric identity differs")
	// ErrUnlikeRows: compared rows differ in their shape (loop, offered rate, missing row).
	ErrUnlikeRows = define("unlike_rows", "rows are not like for like")
	// ErrEnvironmentMismatch: the environment differs where the mode needs it identical.
	ErrEnvironmentMismatch = define("environment_mismatch", "environment differs")
	// ErrDeviceMismatch: the receipts' devices differ in model, driver or another identity field
	// the mode needs equal (by position in environment.devices; provenance-only ids never count).
	ErrDeviceMismatch = define("device_mismatch", "device differs")
	// ErrSourceMismatch: the source tree hash differs.
	ErrSourceMismatch = define("source_mismatch", "source tree differs")
	// ErrArtifactMismatch: a bound input (model, tokenizer, corpus, recipe) differs.
	ErrArtifactMismatch = define("artifact_mismatch", "bound artifact differs")
	// ErrModeRefused: the comparison policy does not allow this comparison.
	ErrModeRefused = define("mode_refused", "comparison not allowed by the policy")
	// ErrRuleFailed: a metric rule's tolerance was exceeded.
	ErrRuleFailed = define("rule_failed", "metric rule failed")
	// ErrCacheRegimeMismatch: compared rows declare different prefix-cache regimes, or their
	// servers reported different ones (docs/caching.md).
	ErrCacheRegimeMismatch = define("cache_regime_mismatch", "prefix-cache regimes differ")
	// ErrOutputMismatch: a row's outputs differ in a correctness comparison.
	ErrOutputMismatch = define("output_mismatch", "outputs differ")
	// ErrTooFewSamples: a statistical rule refused: a side has fewer per-request samples than
	// metric.MinSamplesSignificance.
	ErrTooFewSamples = define("too_few_samples", "too few samples for a statistical rule")
)

// Reasons of the scope check.
var (
	// ErrScopeBackend: the receipt's backend is not the variant's backend.
	ErrScopeBackend = define("backend_mismatch", "backend differs from the variant")
	// ErrScopeDevice: an accelerator backend with no identified device driver.
	ErrScopeDevice = define("device_unidentified", "device not identified")
)

// ErrLinkMismatch: the campaign's in-toto link does not match the receipt (its materials are not
// exactly the bound inputs, or its products not exactly the receipt and its evidence files, by
// digest), or it is malformed, or no signature verifies with a pinned key.
var ErrLinkMismatch = define("intoto_link_mismatch", "in-toto link does not match the receipt")

// ErrFindingsTruncated marks the last finding of a check that had more than MaxFindingsPerCheck.
var ErrFindingsTruncated = define("findings_truncated", "more findings omitted")

// Reasons lists every Reason, grouped by check in protocol order (then Compare's, then the
// truncation marker).
func Reasons() []*Reason {
	return []*Reason{
		ErrInvalidJSON, ErrSchemaViolation, ErrSemanticViolation, ErrHistoricalEvidence, ErrUnknownContract, ErrWrongContract, ErrSelfHash,
		ErrSourceFormat, ErrDirtySource, ErrUnpublished, ErrNotOriginMain, ErrTreeHashMismatch, ErrInputNotInCommit,
		ErrMissingFile, ErrUnreadableFile, ErrDigestMismatch, ErrSizeMismatch, ErrSubjectMismatch, ErrReferenceMismatch, ErrUnboundFile, ErrMissingInput, ErrIdentityMismatch,
		ErrUnsigned, ErrMalformedAttestation, ErrBadSignature, ErrStatementMismatch, ErrAttestationsDiffer, ErrSignaturePolicy, ErrLinkMismatch,
		ErrUntrustedRoot, ErrInclusionProof, ErrSignedTimestamp, ErrCertificateValidity, ErrCertificateSCT, ErrCertificateIssuer, ErrCertificateIdentity,
		ErrNoLifecycle, ErrLifecycleIncomplete, ErrNotReady, ErrReadyLate, ErrPortTaken, ErrListenerNotOwned, ErrForcedShutdown,
		ErrExitNotAcceptable, ErrResidue, ErrLifecycleFailed, ErrLifecycleMismatch, ErrLifecycleImplausible,
		ErrVerdictFailed, ErrInterrupted, ErrRequestFailed, ErrResultMismatch, ErrRowMismatch, ErrCapacityMismatch, ErrParetoMismatch, ErrIntervalMismatch, ErrMetricMismatch, ErrDeclaredMetrics, ErrUnknownTolerance,
		ErrToleranceDeclared, ErrToleranceOutcome, ErrToleranceFailed, ErrDriverVerdict, ErrVerdictMismatch, ErrDegradedRow, ErrLoadNotReached, ErrTimeoutExceeded,
		ErrWorkloadMismatch, ErrConfigMismatch, ErrCorpusMismatch, ErrBodyMismatch, ErrFormulaMismatch, ErrUnlikeRows,
		ErrScopeBackend, ErrScopeDevice,
		ErrEnvironmentMismatch, ErrDeviceMismatch, ErrSourceMismatch, ErrArtifactMismatch, ErrModeRefused, ErrRuleFailed, ErrCacheRegimeMismatch, ErrOutputMismatch, ErrTooFewSamples,
		ErrFindingsTruncated,
	}
}

// CodeOf returns the code of the first Reason in err's chain, or "" when there is none.
func CodeOf(err error) string {
	var r *Reason
	if errors.As(err, &r) {
		return r.code
	}
	return ""
}
