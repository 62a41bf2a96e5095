package contract

// Go types of the report view (qualkit.report-view.v1): what `qualverify report --format json`
// prints. The conventions are those of types.go; an empty string stands for "none" where the
// contract says so. Package verify/report builds the view: its View embeds ReportViewDoc (a test
// there checks that it adds no other JSON member), and its other types are these, by alias.

// ReportViewDoc is a report view (qualkit.report-view.v1).
type ReportViewDoc struct {
	Schema string `json:"schema"`
	// Verifier is the qualverify version that built the view.
	Verifier string `json:"verifier"`
	// Verified is true when every receipt verified.
	Verified bool `json:"verified"`
	// Unverified is true when the view was rendered from evidence that did not verify.
	Unverified  bool             `json:"unverified"`
	Receipts    []ViewReceipt    `json:"receipts"`
	Comparisons []ViewComparison `json:"comparisons"`
}

// ViewReceipt is one receipt's page.
type ViewReceipt struct {
	// Path is the receipt's path relative to its evidence root.
	Path         string           `json:"path"`
	ReceiptID    string           `json:"receipt_id"`
	Digest       string           `json:"digest"`
	Verification ViewVerification `json:"verification"`
	Scope        string           `json:"scope"`
	Source       *ViewSource      `json:"source"`
	Workload     *ViewWorkload    `json:"workload"`
	Run          *ViewRun         `json:"run"`
	Environment  *ViewEnvironment `json:"environment"`
	Artifacts    []Artifact       `json:"artifacts"`
	Cases        []ViewCase       `json:"cases"`
	Lifecycle    *ViewLifecycle   `json:"lifecycle"`
	Notes        []string         `json:"notes"`
	Publishable  bool             `json:"publishable"`
	Unsupported  []string         `json:"unsupported"`
}

// ViewVerification is the outcome of verifying a receipt.
type ViewVerification struct {
	Verdict string `json:"verdict"`
	Summary string `json:"summary"`
	// Signer is the fingerprint of the pinned key that verified the attestation; "" when none did.
	Signer   string        `json:"signer"`
	Weakened []string      `json:"weakened"`
	Checks   []ViewCheck   `json:"checks"`
	Findings []ViewFinding `json:"findings"`
	Warnings []string      `json:"warnings"`
}

// ViewCheck is one publication check.
type ViewCheck struct {
	Check  string `json:"check"`
	Status string `json:"status"`
	Note   string `json:"note"`
}

// ViewFinding is one reason the evidence was rejected.
type ViewFinding struct {
	Check   string `json:"check"`
	File    string `json:"file"`
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ViewSource is the source identity a receipt binds.
type ViewSource struct {
	Repository     string `json:"repository"`
	Commit         string `json:"commit"`
	Tree           string `json:"tree"`
	TreeHashFormat string `json:"tree_hash_format"`
	TreeHash       string `json:"tree_hash"`
	OriginMain     string `json:"origin_main"`
	Clean          bool   `json:"clean"`
}

// ViewWorkload is a receipt's workload binding.
type ViewWorkload struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Digest  string `json:"digest"`
	Variant string `json:"variant"`
	Seed    *int64 `json:"seed"`
}

// ViewRun summarizes a campaign.
type ViewRun struct {
	Kind            string  `json:"kind"`
	Backend         string  `json:"backend"`
	Verdict         string  `json:"verdict"`
	StartedAt       string  `json:"started_at"`
	FinishedAt      string  `json:"finished_at"`
	DurationSeconds float64 `json:"duration_seconds"`
	QualrunVersion  string  `json:"qualrun_version"`
	QualrunDigest   string  `json:"qualrun_digest"`
}

// ViewEnvironment is the host's provenance (never policy).
type ViewEnvironment struct {
	HostID string `json:"host_id"`
	OS     string `json:"os"`
	Kernel string `json:"kernel"`
	Arch   string `json:"architecture"`
	Device string `json:"device"`
	Driver string `json:"driver"`
}

// ViewCase is one result of a receipt.
type ViewCase struct {
	ID         string `json:"id"`
	Repetition int64  `json:"repetition"`
	Required   bool   `json:"required"`
	Status     string `json:"status"`
	// Kind is the workload's kind of the case (serving, command, driver); "" when unknown.
	Kind string `json:"kind"`
	// Details is the receipt's summary of the case ("" when it has none).
	Details string `json:"details"`
	// SLO is the declared SLO gates in ms ("" when the workload is unavailable).
	SLO  string    `json:"slo"`
	Rows []ViewRow `json:"rows"`
	// Driver is a driver case's evidence result; nil for other cases and when the receipt binds
	// no readable driver result (Details then says why).
	Driver *ViewDriver `json:"driver"`
}

// ViewRow is one serving row (one concurrency at one repetition, Name
// "c<concurrency>-r<repetition>"), recomputed from its request records. When Readable is false
// the records could not be read and nothing below Records is set. WindowSeconds is the request
// window W (request_window.v1). Distributions are TTFT, TPOT, E2E, inter-event latency (ICL) and
// schedule lag, in that order, each present when it has samples. Mismatches lists the row
// metrics whose receipt value differs from the recomputed one (a verified receipt agrees within
// the policy's recompute tolerance).
type ViewRow struct {
	Name           string             `json:"name"`
	Concurrency    int64              `json:"concurrency"`
	Repetition     int64              `json:"repetition"`
	Loop           string             `json:"loop"`
	Readable       bool               `json:"readable"`
	Records        string             `json:"records"`
	RecordsDigest  string             `json:"records_digest"`
	RecordsRead    int                `json:"records_read"`
	InvalidRecords int                `json:"invalid_records"`
	Requests       int64              `json:"requests"`
	Successes      int64              `json:"successes"`
	Failures       int64              `json:"failures"`
	WindowSeconds  float64            `json:"window_seconds"`
	Distributions  []ViewDistribution `json:"distributions"`
	Throughput     ViewThroughput     `json:"throughput"`
	Fidelity       ViewFidelity       `json:"fidelity"`
	Mismatches     []string           `json:"mismatches"`
}

// ViewDistribution is one latency distribution of a row. Its statistics are the recomputed row
// metrics <metric>.p50, .p90, ... (Hyndman-Fan type 7 percentiles, docs/metrics.md); ReceiptP50
// and ReceiptP99 are the values the case result records, for cross-checking.
type ViewDistribution struct {
	Metric     string   `json:"metric"`
	Label      string   `json:"label"`
	Formula    string   `json:"formula"`
	Unit       string   `json:"unit"`
	Count      int64    `json:"count"`
	Min        float64  `json:"min"`
	Max        float64  `json:"max"`
	Mean       float64  `json:"mean"`
	P50        float64  `json:"p50"`
	P90        float64  `json:"p90"`
	P95        float64  `json:"p95"`
	P99        float64  `json:"p99"`
	P999       *float64 `json:"p99_9"`
	ReceiptP50 *float64 `json:"receipt_p50"`
	ReceiptP99 *float64 `json:"receipt_p99"`
}

// ViewThroughput is a row's request-window rates (docs/metrics.md); nil where undefined.
type ViewThroughput struct {
	RequestsPerSecond     *float64 `json:"request_throughput"`
	OutputTokensPerSecond *float64 `json:"output_throughput_window"`
	TotalTokensPerSecond  *float64 `json:"total_throughput_window"`
	GoodputPerSecond      *float64 `json:"slo_goodput"`
	GoodputTokens         *float64 `json:"slo_goodput_tokens"`
	GoodFraction          *float64 `json:"slo_good_fraction"`
	OutputTokens          *float64 `json:"output_tokens"`
}

// ViewFidelity is the client's own fidelity in a row, recomputed from its records.
type ViewFidelity struct {
	ScheduleLagP50Ms float64  `json:"schedule_lag_p50_ms"`
	ScheduleLagP99Ms float64  `json:"schedule_lag_p99_ms"`
	ScheduleLagMaxMs float64  `json:"schedule_lag_max_ms"`
	OfferedRate      *float64 `json:"offered_rate"`
	AchievedRate     float64  `json:"achieved_rate"`
	Degraded         bool     `json:"degraded"`
	Reasons          []string `json:"reasons"`
	// DispatchSpreadMs is dispatch_spread.v1 (closed loop); nil when undefined.
	DispatchSpreadMs *float64 `json:"dispatch_spread_ms"`
}

// ViewLifecycle is the owned server's life, from the lifecycle record and the request records.
type ViewLifecycle struct {
	Path    string `json:"path"`
	Digest  string `json:"digest"`
	Verdict string `json:"verdict"`
	// Events are launch, ready, first request, last response, SIGTERM and exit, those that
	// happened, in that order; offsets are from the launch.
	Events               []ViewEvent `json:"events"`
	PortFreeBeforeLaunch bool        `json:"port_free_before_launch"`
	Port                 int64       `json:"port"`
	Ready                bool        `json:"ready"`
	Probes               int64       `json:"probes"`
	ReadyElapsedMs       float64     `json:"ready_elapsed_ms"`
	ReadyDeadlineMs      float64     `json:"ready_deadline_ms"`
	ListenerOwned        *bool       `json:"listener_owned"`
	OwnerPIDs            []int64     `json:"owner_pids"`
	Ownership            string      `json:"ownership"`
	Signal               string      `json:"signal"`
	Forced               bool        `json:"forced"`
	ShutdownMs           *float64    `json:"shutdown_ms"`
	ExitCode             *int64      `json:"exit_code"`
	ExitSignal           string      `json:"exit_signal"`
	ExitAcceptable       bool        `json:"exit_acceptable"`
	ResidueProcesses     []string    `json:"residue_processes"`
	ResidueListeners     []string    `json:"residue_listeners"`
	Killed               bool        `json:"killed"`
	Residue              string      `json:"residue"`
	Unsupported          []string    `json:"unsupported"`
	Failures             []string    `json:"failures"`
}

// ViewEvent is one moment of the server's life.
type ViewEvent struct {
	Name string `json:"name"`
	// TNs is the monotonic offset of the campaign's epoch; OffsetMs is from the launch.
	TNs      int64   `json:"t_ns"`
	OffsetMs float64 `json:"offset_ms"`
}

// ViewComparison is a later receipt compared with the first under their workload's policy.
type ViewComparison struct {
	Baseline   string `json:"baseline"`
	Candidate  string `json:"candidate"`
	Mode       string `json:"mode"`
	Compatible bool   `json:"compatible"`
	OK         bool   `json:"ok"`
	// Error says why the comparison could not be carried out ("" when it was).
	Error    string           `json:"error"`
	Rejected []ViewDifference `json:"rejected"`
	Allowed  []ViewDifference `json:"allowed"`
	Rows     []ViewRowDelta   `json:"rows"`
	Rules    []ViewRule       `json:"rules"`
	Warnings []string         `json:"warnings"`
}

// ViewDifference is one difference between the compared receipts.
type ViewDifference struct {
	Path    string `json:"path"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// ViewRowDelta is one like-for-like row, baseline beside candidate.
type ViewRowDelta struct {
	Case       string      `json:"case"`
	Repetition int64       `json:"repetition"`
	Row        string      `json:"row"`
	Metrics    []ViewDelta `json:"metrics"`
}

// ViewDelta is one metric of a compared row.
type ViewDelta struct {
	Metric        string   `json:"metric"`
	Unit          string   `json:"unit"`
	Direction     string   `json:"direction"`
	Baseline      float64  `json:"baseline"`
	Candidate     float64  `json:"candidate"`
	Change        float64  `json:"change"`
	ChangePercent *float64 `json:"change_percent"`
	// Rule is the status of the workload's metric rule on this metric and row ("" when none).
	Rule string `json:"rule"`
}

// ViewRule is one metric rule evaluation of a comparison.
type ViewRule struct {
	Scope     string   `json:"scope"`
	Operator  string   `json:"operator"`
	Baseline  *float64 `json:"baseline"`
	Candidate *float64 `json:"candidate"`
	Tolerance *float64 `json:"tolerance"`
	Status    string   `json:"status"`
	Reason    string   `json:"reason"`
}

// ViewDriver is a driver case's evidence result. Exactly one of NextToken, PathAttribution and
// LayerAttribution is set.
type ViewDriver struct {
	Contract         string                `json:"contract"`
	Title            string                `json:"title"`
	Result           string                `json:"result"`
	ResultDigest     string                `json:"result_digest"`
	ResultSHA256     string                `json:"result_sha256"`
	WorkerOutput     string                `json:"worker_output"`
	WorkerLog        string                `json:"worker_log"`
	CreatedAt        string                `json:"created_at"`
	DurationSeconds  float64               `json:"duration_seconds"`
	Verdict          ViewDriverVerdict     `json:"verdict"`
	Containment      ViewContainment       `json:"containment"`
	Implementation   ViewImplementation    `json:"implementation"`
	Request          ViewDriverRequest     `json:"request"`
	Model            ViewDriverModel       `json:"model"`
	Tolerances       []ViewTolerance       `json:"tolerances"`
	Mismatches       []string              `json:"mismatches"`
	NextToken        *ViewNextToken        `json:"next_token"`
	PathAttribution  *ViewPathAttribution  `json:"path_attribution"`
	LayerAttribution *ViewLayerAttribution `json:"layer_attribution"`
}

// ViewDriverVerdict is a driver result's verdict with its contract's members (nil for the others).
type ViewDriverVerdict struct {
	Status  string   `json:"status"`
	Reasons []string `json:"reasons"`
	// ArgmaxCandidate and CandidateAttributionComplete: next-token results.
	ArgmaxCandidate              *string `json:"argmax_candidate"`
	CandidateAttributionComplete *bool   `json:"candidate_attribution_complete"`
	// Attribution: path attributions (the first failing path, or not_reproduced).
	Attribution *string `json:"attribution"`
	// LargestGrowth: layer attributions.
	LargestGrowth *ViewGrowth `json:"largest_relative_error_growth"`
}

// ViewGrowth is the boundary where the relative RMS error grows most.
type ViewGrowth struct {
	Index int64   `json:"index"`
	Name  string  `json:"name"`
	Delta float64 `json:"relative_root_mean_square_error_delta"`
}

// ViewContainment is how a driver's worker was contained and how it ended.
type ViewContainment struct {
	Network   string `json:"network"`
	Mechanism string `json:"mechanism"`
	// The isolation probe's observations inside the namespace, before the start gate opened.
	Interfaces              []string `json:"interfaces"`
	OutsideUnreachable      bool     `json:"outside_unreachable"`
	LoopbackBind            bool     `json:"loopback_bind"`
	HostLoopbackUnreachable bool     `json:"host_loopback_unreachable"`
	StartGate               string   `json:"start_gate"`
	HashBoundExec           bool     `json:"hash_bound_exec"`
	EnvironmentNames        []string `json:"environment_names"`
	TimeoutSeconds          int64    `json:"timeout_seconds"`
	ElapsedSeconds          float64  `json:"elapsed_seconds"`
	// ExitCode is nil when the worker ended by a signal.
	ExitCode *int64   `json:"exit_code"`
	TimedOut bool     `json:"timed_out"`
	Forced   bool     `json:"forced"`
	Residue  []string `json:"residue"`
}

// ViewImplementation is the code that produced a driver result, by digest.
type ViewImplementation struct {
	Executable       string `json:"executable"`
	ExecutableDigest string `json:"executable_digest"`
	Script           string `json:"script"`
	ScriptDigest     string `json:"script_digest"`
	QualrunVersion   string `json:"qualrun_version"`
	QualrunDigest    string `json:"qualrun_digest"`
}

// ViewDriverRequest is the request a worker evaluated.
type ViewDriverRequest struct {
	ID                  string `json:"id"`
	Path                string `json:"path"`
	Digest              string `json:"digest"`
	InputTokenCount     int64  `json:"input_token_count"`
	InputTokenIDsSHA256 string `json:"input_token_ids_sha256"`
}

// ViewDriverModel is the model a worker loaded.
type ViewDriverModel struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// ViewTolerance is one declared tolerance applied to one subject, as the result records it.
type ViewTolerance struct {
	Metric  string  `json:"metric"`
	Subject string  `json:"subject"`
	Op      string  `json:"op"`
	Limit   float64 `json:"limit"`
	// Observed is nil when the result has no number for the metric and subject.
	Observed *float64 `json:"observed"`
	Passed   bool     `json:"passed"`
}

// ViewNextToken is a next-token result's oracle: the reference's top logits and the candidates'.
type ViewNextToken struct {
	Dtype           string               `json:"dtype"`
	Vocab           int64                `json:"vocab"`
	ArgmaxTokenID   int64                `json:"argmax_token_id"`
	TopLogitMargin  float64              `json:"top_logit_margin"`
	TopTokens       []ViewTopToken       `json:"top_tokens"`
	CandidateTokens []ViewCandidateToken `json:"candidate_tokens"`
	LogitsSHA256    string               `json:"logits_sha256"`
	LogitsBytes     int64                `json:"logits_bytes"`
}

// ViewTopToken is one of the highest logits with its rank (1 + the number of larger logits) and
// the labels of the candidates that chose it.
type ViewTopToken struct {
	Rank       int64    `json:"rank"`
	TokenID    int64    `json:"token_id"`
	Logit      float64  `json:"logit"`
	Candidates []string `json:"candidates"`
}

// ViewCandidateToken is a candidate's token with its logit and rank; Argmax when it is the argmax.
type ViewCandidateToken struct {
	Label   string  `json:"label"`
	TokenID int64   `json:"token_id"`
	Logit   float64 `json:"logit"`
	Rank    int64   `json:"rank"`
	Argmax  bool    `json:"argmax"`
}

// ViewPathAttribution is a path attribution: every compared path against the reference path.
type ViewPathAttribution struct {
	ReferencePath   string        `json:"reference_path"`
	ReferenceArgmax int64         `json:"reference_argmax"`
	Paths           []ViewPathRow `json:"paths"`
}

// ViewPathRow is one compared path. Failed names the metrics whose tolerance it failed;
// Attributed is true for the path the verdict attributes the difference to.
type ViewPathRow struct {
	ID                    string   `json:"id"`
	Argmax                int64    `json:"argmax"`
	ArgmaxEqual           bool     `json:"argmax_equal"`
	CosineSimilarity      float64  `json:"cosine_similarity"`
	MaxAbsError           float64  `json:"max_abs_error"`
	MeanAbsError          float64  `json:"mean_abs_error"`
	Top10Overlap          int64    `json:"top10_overlap"`
	LogitsSHA256          string   `json:"logits_sha256"`
	ReferenceLogitsSHA256 string   `json:"reference_logits_sha256"`
	Failed                []string `json:"failed"`
	Attributed            bool     `json:"attributed"`
}

// ViewLayerAttribution is a layer attribution: one row per layer boundary.
type ViewLayerAttribution struct {
	Boundaries    []ViewBoundaryRow `json:"boundaries"`
	LargestGrowth ViewGrowth        `json:"largest_relative_error_growth"`
}

// ViewBoundaryRow is one layer boundary. Growth is its relative RMS error minus the previous
// boundary's (its own for the first); Largest marks the largest growth; Limit is the relative RMS
// error tolerance that applies to it (nil when none); Failed names the metrics whose tolerance it
// failed.
type ViewBoundaryRow struct {
	Index                       int64    `json:"index"`
	Name                        string   `json:"name"`
	CosineSimilarity            float64  `json:"cosine_similarity"`
	MaxAbsError                 float64  `json:"max_abs_error"`
	MeanAbsError                float64  `json:"mean_abs_error"`
	RootMeanSquareError         float64  `json:"root_mean_square_error"`
	ReferenceRootMeanSquare     float64  `json:"reference_root_mean_square"`
	RelativeRootMeanSquareError float64  `json:"relative_root_mean_square_error"`
	ReferenceSHA256             string   `json:"reference_sha256"`
	CandidateSHA256             string   `json:"candidate_sha256"`
	Growth                      float64  `json:"growth"`
	Largest                     bool     `json:"largest"`
	Limit                       *float64 `json:"limit"`
	Failed                      []string `json:"failed"`
}
