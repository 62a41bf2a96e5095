package schemas

// Go types of every contract, hand-written beside the CUE source (cue's Go type generator is not
// ready for these contracts). TestTypesMatchSchemas walks each type against its exported JSON
// Schema, so a field added on one side and not the other fails the build's tests.
//
// Conventions: a required field has no omitempty; a required field that may be null is a pointer
// (or an interface); an optional field has omitempty. Numbers the contract types as int are int64,
// other numbers float64. Open maps (configuration trees, variables) are map[string]any.

// Config is an effective configuration tree: lower-case keys, scalar leaves, no arrays.
type Config map[string]any

// Metric is one measured number with its unit, aggregation, direction and formula id.
type Metric struct {
	Name        string  `json:"name"`
	Value       float64 `json:"value"`
	Unit        string  `json:"unit"`
	Aggregation string  `json:"aggregation"`
	Direction   string  `json:"direction"`
	Formula     string  `json:"formula"`
	Samples     *int64  `json:"samples,omitempty"`
	Diagnostic  bool    `json:"diagnostic,omitempty"`
}

// Tolerance bounds the acceptable difference for a metric.
type Tolerance struct {
	Metric            string  `json:"metric"`
	AbsoluteTolerance float64 `json:"absolute_tolerance"`
	RelativeTolerance float64 `json:"relative_tolerance"`
}

// Artifact binds one file by content digest.
type Artifact struct {
	Kind   string `json:"kind"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}

// FileRef points at another evidence file by path and digest.
type FileRef struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// WorkloadDoc is a workload (qualkit.workload.v1).
type WorkloadDoc struct {
	Schema           string            `json:"schema"`
	ID               string            `json:"id"`
	Kind             string            `json:"kind"`
	Description      string            `json:"description"`
	Determinism      Determinism       `json:"determinism"`
	Variables        []Variable        `json:"variables"`
	Variants         []Variant         `json:"variants"`
	ComparisonPolicy *ComparisonPolicy `json:"comparison_policy"`
}

// Determinism fixes seed, order and repetitions.
type Determinism struct {
	Seed             *int64 `json:"seed"`
	SeedDelivery     string `json:"seed_delivery"`
	Repetitions      int64  `json:"repetitions"`
	CaseOrder        string `json:"case_order"`
	MaxParallelCases int64  `json:"max_parallel_cases"`
	NetworkAccess    string `json:"network_access"`
}

// Variable is a typed workload input.
type Variable struct {
	Name        string              `json:"name"`
	Description string              `json:"description"`
	Type        string              `json:"type"`
	Required    bool                `json:"required"`
	Default     any                 `json:"default"`
	Constraints VariableConstraints `json:"constraints"`
}

// VariableConstraints restrict a variable's value.
type VariableConstraints struct {
	AllowedValues []any    `json:"allowed_values"`
	Minimum       *float64 `json:"minimum"`
	Maximum       *float64 `json:"maximum"`
	Pattern       *string  `json:"pattern"`
}

// Variant is one configuration of the system under test.
type Variant struct {
	ID                string `json:"id"`
	Description       string `json:"description"`
	Backend           string `json:"backend"`
	DeviceRequirement string `json:"device_requirement"`
	SkipPolicy        string `json:"skip_policy"`
	EffectiveConfig   Config `json:"effective_config"`
	Cases             []Case `json:"cases"`
}

// Case is a command case (Kind "command"), a serving case (Kind "serving") or a driver case
// (Kind "driver"); the fields of the other kinds are zero. Environment and TimeoutSeconds belong
// to command and driver cases.
type Case struct {
	Kind        string `json:"kind"`
	ID          string `json:"id"`
	Description string `json:"description"`
	Required    bool   `json:"required"`

	// Command case.
	Command           []string          `json:"command,omitempty"`
	WorkingDirectory  string            `json:"working_directory,omitempty"`
	Environment       map[string]string `json:"environment,omitempty"`
	TimeoutSeconds    int64             `json:"timeout_seconds,omitempty"`
	ExpectedExitCodes []int64           `json:"expected_exit_codes,omitempty"`
	OutputAssertions  []OutputAssertion `json:"output_assertions"`
	ResultProtocol    *ResultProtocol   `json:"result_protocol,omitempty"`

	// Serving case.
	Launch      string  `json:"launch,omitempty"`
	API         string  `json:"api,omitempty"`
	Stream      bool    `json:"stream,omitempty"`
	Corpus      *Corpus `json:"corpus,omitempty"`
	Concurrency []int64 `json:"concurrency,omitempty"`
	Repetitions int64   `json:"repetitions,omitempty"`
	// Requests is the measured requests per row (nil: the corpus size), cycling the corpus.
	Requests              *int64    `json:"requests,omitempty"`
	WarmupRequests        int64     `json:"warmup_requests,omitempty"`
	MaxTokens             int64     `json:"max_tokens,omitempty"`
	Sampling              *Sampling `json:"sampling,omitempty"`
	RequestTimeoutSeconds float64   `json:"request_timeout_seconds,omitempty"`
	SLO                   *SLO      `json:"slo,omitempty"`
	Rate                  *Rate     `json:"rate,omitempty"`
	// MeasuresSaturation: a degraded row does not fail the case (nil or false: it does).
	MeasuresSaturation *bool `json:"measures_saturation,omitempty"`
	// DeviceTelemetry, when set, turns on the device telemetry sampler for every row.
	DeviceTelemetry *DeviceTelemetry `json:"device_telemetry,omitempty"`

	// Driver case (see DriverSpecDoc for the meaning of each field).
	Contract   string            `json:"contract,omitempty"`
	Worker     *DriverWorker     `json:"worker,omitempty"`
	Request    *FileRef          `json:"request,omitempty"`
	Model      *FileRef          `json:"model,omitempty"`
	Isolation  *DriverIsolation  `json:"isolation,omitempty"`
	Tolerances []DriverTolerance `json:"tolerances,omitempty"`
}

// OutputAssertion is a stream assertion of a command case (Stream set) or a response assertion of
// a serving case (Kind set).
type OutputAssertion struct {
	// Command case stream assertion.
	Stream string `json:"stream,omitempty"`
	// Match is "required" or "forbidden" (stream and regex assertions).
	Match   string `json:"match,omitempty"`
	Pattern string `json:"pattern,omitempty"`

	// Serving case response assertion.
	Kind     string  `json:"kind,omitempty"`
	Equals   string  `json:"equals,omitempty"`
	PromptID string  `json:"prompt_id,omitempty"`
	Text     *string `json:"text,omitempty"`
}

// ResultProtocol says who produces a case result and which metrics it declares.
type ResultProtocol struct {
	Format                  string   `json:"format"`
	Producer                string   `json:"producer"`
	PathEnvironmentVariable string   `json:"path_environment_variable"`
	DeclaredMetrics         []string `json:"declared_metrics"`
}

// Corpus is a serving case's request corpus: inline prompts, a JSONL file or a synthetic generator.
type Corpus struct {
	Source string `json:"source"`
	// Inline.
	Prompts []Prompt `json:"prompts,omitempty"`
	// File.
	Path   string `json:"path,omitempty"`
	Digest string `json:"digest,omitempty"`
	// Synthetic.
	Generator   string      `json:"generator,omitempty"`
	Seed        *int64      `json:"seed,omitempty"`
	Count       int64       `json:"count,omitempty"`
	PromptWords *WordsRange `json:"prompt_words,omitempty"`
}

// Prompt is one inline prompt.
type Prompt struct {
	ID     string `json:"id"`
	Text   string `json:"text"`
	System string `json:"system,omitempty"`
}

// WordsRange bounds the length of synthetic prompts.
type WordsRange struct {
	Min int64 `json:"min"`
	Max int64 `json:"max"`
}

// Sampling parameters sent with every request.
type Sampling struct {
	Temperature float64  `json:"temperature"`
	TopP        *float64 `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	IgnoreEOS   bool     `json:"ignore_eos,omitempty"`
	Stop        []string `json:"stop,omitempty"`
}

// SLO gates; zero means not declared.
type SLO struct {
	TTFTMs float64 `json:"ttft_ms,omitempty"`
	ICLMs  float64 `json:"icl_ms,omitempty"`
	E2EMs  float64 `json:"e2e_ms,omitempty"`
}

// Rate is an open-loop schedule.
type Rate struct {
	Mode              string  `json:"mode"`
	RequestsPerSecond float64 `json:"requests_per_second"`
}

// ComparisonPolicy says which results may be compared, and by which rules.
type ComparisonPolicy struct {
	Mode         string        `json:"mode"`
	VariantPairs []VariantPair `json:"variant_pairs"`
	BackendPairs []BackendPair `json:"backend_pairs"`
	MetricRules  []MetricRule  `json:"metric_rules"`
}

// VariantPair is a declared A/B pair of variants.
type VariantPair struct {
	BaselineVariantID                 string   `json:"baseline_variant_id"`
	CandidateVariantID                string   `json:"candidate_variant_id"`
	AllowedEffectiveConfigDifferences []string `json:"allowed_effective_config_differences"`
}

// BackendPair is a declared cross-backend pair of variants.
type BackendPair struct {
	BackendA                      string   `json:"backend_a"`
	VariantAID                    string   `json:"variant_a_id"`
	BackendB                      string   `json:"backend_b"`
	VariantBID                    string   `json:"variant_b_id"`
	AllowedEnvironmentDifferences []string `json:"allowed_environment_differences"`
}

// MetricRule compares one metric between two results.
type MetricRule struct {
	Scope             string  `json:"scope"`
	ResultID          string  `json:"result_id"`
	Metric            string  `json:"metric"`
	MetricClass       string  `json:"metric_class"`
	Unit              string  `json:"unit"`
	Aggregation       string  `json:"aggregation"`
	Direction         string  `json:"direction"`
	Formula           string  `json:"formula"`
	Operator          string  `json:"operator"`
	AbsoluteTolerance float64 `json:"absolute_tolerance"`
	RelativeTolerance float64 `json:"relative_tolerance"`
	Required          bool    `json:"required"`
}

// LaunchRecipeDoc is a launch recipe (qualkit.launch-recipe.v1).
type LaunchRecipeDoc struct {
	Schema                 string            `json:"schema"`
	ID                     string            `json:"id"`
	Description            string            `json:"description,omitempty"`
	Command                []string          `json:"command"`
	WorkingDirectory       string            `json:"working_directory"`
	Environment            map[string]string `json:"environment"`
	EnvironmentPassthrough []string          `json:"environment_passthrough"`
	BaseURL                string            `json:"base_url"`
	ModelID                string            `json:"model_id"`
	Readiness              Readiness         `json:"readiness"`
	StartupTimeoutSeconds  float64           `json:"startup_timeout_seconds"`
	ShutdownTimeoutSeconds float64           `json:"shutdown_timeout_seconds"`
	AcceptableExitCodes    []int64           `json:"acceptable_exit_codes"`
	Isolation              Isolation         `json:"isolation"`
	// SecretEnvironment names passthrough variables whose values are secrets whatever their names.
	SecretEnvironment []string `json:"secret_environment,omitempty"`
	// Auth, when set, makes qualrun authenticate to the server (see RedactsEnv).
	Auth *Auth `json:"auth,omitempty"`
}

// Auth declares how qualrun authenticates to the server: a bearer token read from the variable
// TokenEnv of qualrun's own environment, sent and never recorded.
type Auth struct {
	Scheme   string `json:"scheme"`
	TokenEnv string `json:"token_env"`
}

// Readiness says how readiness is probed.
type Readiness struct {
	Path           string `json:"path"`
	PollIntervalMs int64  `json:"poll_interval_ms"`
	ProbeTimeoutMs int64  `json:"probe_timeout_ms"`
}

// Isolation lists what the runner is asked to enforce or account.
type Isolation struct {
	PIDLimit         *int64 `json:"pid_limit"`
	CgroupAccounting string `json:"cgroup_accounting"`
}

// RuntimeManifestDoc is a runtime manifest (qualkit.runtime-manifest.v1).
type RuntimeManifestDoc struct {
	Schema               string          `json:"schema"`
	ID                   string          `json:"id"`
	CreatedAt            string          `json:"created_at"`
	Interpreter          Interpreter     `json:"interpreter"`
	Packages             []Package       `json:"packages"`
	LaunchImplementation *Implementation `json:"launch_implementation"`
}

// Interpreter identifies a runtime's interpreter.
type Interpreter struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// Package is one installed package of a runtime.
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Digest  string `json:"digest,omitempty"`
}

// Implementation binds code by path and digest.
type Implementation struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// CaseResultDoc is a case result (qualkit.case-result.v1).
type CaseResultDoc struct {
	Schema          string      `json:"schema"`
	CaseID          string      `json:"case_id"`
	Status          string      `json:"status"`
	DurationSeconds float64     `json:"duration_seconds"`
	EffectiveConfig Config      `json:"effective_config"`
	Metrics         []Metric    `json:"metrics"`
	Tolerances      []Tolerance `json:"tolerances"`
	Rows            []Row       `json:"rows"`
	Details         *string     `json:"details"`
	// Stopped is set when the case did not run to its end.
	Stopped *Stopped `json:"stopped,omitempty"`
}

// Stopped says why and when a case stopped before its end.
type Stopped struct {
	// Reason is "timeout" (the case's timeout_seconds) or "interrupted" (qualrun was).
	Reason       string  `json:"reason"`
	AfterSeconds float64 `json:"after_seconds"`
}

// Row is one serving row: a concurrency level at one repetition.
type Row struct {
	Concurrency     int64    `json:"concurrency"`
	Repetition      int64    `json:"repetition"`
	Loop            string   `json:"loop"`
	Requests        int64    `json:"requests"`
	Successes       int64    `json:"successes"`
	Failures        int64    `json:"failures"`
	WindowSeconds   float64  `json:"window_seconds"`
	PromptSetSHA256 string   `json:"prompt_set_sha256"`
	OutputSetSHA256 *string  `json:"output_set_sha256"`
	Records         FileRef  `json:"records"`
	Metrics         []Metric `json:"metrics"`
	Fidelity        Fidelity `json:"fidelity"`
	// DeviceTelemetry is absent unless the case declared a sampler.
	DeviceTelemetry *RowDeviceTelemetry `json:"device_telemetry,omitempty"`
}

// Fidelity measures the client itself.
type Fidelity struct {
	ScheduleLagP50Ms float64  `json:"schedule_lag_p50_ms"`
	ScheduleLagP99Ms float64  `json:"schedule_lag_p99_ms"`
	ScheduleLagMaxMs float64  `json:"schedule_lag_max_ms"`
	OfferedRate      *float64 `json:"offered_rate"`
	AchievedRate     float64  `json:"achieved_rate"`
	Degraded         bool     `json:"degraded"`
	Reasons          []string `json:"reasons"`
	// InFlightPeak and InFlightMean are the achieved concurrency: the most measured requests in
	// flight at once and the time average over the row's window (nil in evidence that predates
	// them).
	InFlightPeak *int64   `json:"in_flight_peak,omitempty"`
	InFlightMean *float64 `json:"in_flight_mean,omitempty"`
}

// RequestRecordDoc is a request record (qualkit.request-record.v1).
type RequestRecordDoc struct {
	Schema   string `json:"schema"`
	CaseID   string `json:"case_id"`
	Row      RowKey `json:"row"`
	Index    int64  `json:"index"`
	Warmup   bool   `json:"warmup"`
	PromptID string `json:"prompt_id"`
	// CorpusIndex and Cycle place a measured request in the cycled corpus (nil for warmups and
	// in evidence that predates them).
	CorpusIndex  *int64             `json:"corpus_index,omitempty"`
	Cycle        *int64             `json:"cycle,omitempty"`
	Seed         *int64             `json:"seed"`
	BodyDigest   string             `json:"body_digest"`
	TSchedNs     int64              `json:"t_sched_ns"`
	TSendNs      *int64             `json:"t_send_ns"`
	THdrNs       *int64             `json:"t_hdr_ns"`
	Events       []Event            `json:"events"`
	TEndNs       *int64             `json:"t_end_ns"`
	TCloseNs     *int64             `json:"t_close_ns"`
	StatusCode   *int64             `json:"status_code"`
	Usage        *Usage             `json:"usage"`
	FinishReason *string            `json:"finish_reason"`
	OutputDigest *string            `json:"output_digest"`
	Assertions   []AssertionOutcome `json:"assertions"`
	Error        *RequestError      `json:"error"`
}

// RowKey names a serving row.
type RowKey struct {
	Concurrency int64 `json:"concurrency"`
	Repetition  int64 `json:"repetition"`
}

// Event is one SSE event, stamped when its bytes were read.
type Event struct {
	TNs   int64  `json:"t_ns"`
	Kind  string `json:"kind"`
	Bytes int64  `json:"bytes"`
}

// Usage is a stream's single usage record.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// AssertionOutcome is the outcome of one response assertion.
type AssertionOutcome struct {
	Kind   string  `json:"kind"`
	Passed bool    `json:"passed"`
	Detail *string `json:"detail"`
}

// RequestError classifies a failed request.
type RequestError struct {
	Class   string `json:"class"`
	Message string `json:"message"`
}

// LifecycleRecordDoc is a lifecycle record (qualkit.lifecycle-record.v1).
type LifecycleRecordDoc struct {
	Schema      string             `json:"schema"`
	Recipe      RecipeRef          `json:"recipe"`
	Launch      *Launch            `json:"launch"`
	Port        PortCheck          `json:"port"`
	Readiness   *ReadinessEvidence `json:"readiness"`
	Listener    *Listener          `json:"listener"`
	Shutdown    *Shutdown          `json:"shutdown"`
	Residue     Residue            `json:"residue"`
	Unsupported []string           `json:"unsupported"`
	Failures    []string           `json:"failures"`
	Verdict     string             `json:"verdict"`
}

// RecipeRef binds a launch recipe.
type RecipeRef struct {
	ID     string `json:"id"`
	Digest string `json:"digest"`
}

// Launch binds the identity of the launched process.
type Launch struct {
	StartedAt        string     `json:"started_at"`
	TStartNs         int64      `json:"t_start_ns"`
	ArgvDigest       string     `json:"argv_digest"`
	Executable       Executable `json:"executable"`
	WorkingDirectory string     `json:"working_directory"`
	Environment      []EnvEntry `json:"environment"`
	PID              int64      `json:"pid"`
	PGID             int64      `json:"pgid"`
	StartTimeTicks   int64      `json:"start_time_ticks"`
	BootID           string     `json:"boot_id"`
	CmdlineDigest    string     `json:"cmdline_digest"`
	Log              Log        `json:"log"`
	Cgroup           *string    `json:"cgroup"`
}

// Executable is the launched program by path and digest.
type Executable struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// EnvEntry records one environment variable given to the server.
type EnvEntry struct {
	Name     string  `json:"name"`
	Redacted bool    `json:"redacted"`
	Value    *string `json:"value"`
	Digest   string  `json:"digest"`
}

// Log is the server's output log.
type Log struct {
	Path   string `json:"path"`
	Digest string `json:"digest"`
	Bytes  int64  `json:"bytes"`
}

// PortCheck is the pre-launch check of the port.
type PortCheck struct {
	Host             string `json:"host"`
	Port             int64  `json:"port"`
	FreeBeforeLaunch bool   `json:"free_before_launch"`
}

// ReadinessEvidence records the readiness wait.
type ReadinessEvidence struct {
	Path       string  `json:"path"`
	ModelID    string  `json:"model_id"`
	Ready      bool    `json:"ready"`
	Probes     int64   `json:"probes"`
	DeadlineMs float64 `json:"deadline_ms"`
	ElapsedMs  float64 `json:"elapsed_ms"`
	TReadyNs   *int64  `json:"t_ready_ns"`
	ChildExit  *string `json:"child_exit"`
}

// Listener is the ownership check of the LISTEN socket.
type Listener struct {
	Owned     bool    `json:"owned"`
	Inodes    []int64 `json:"inodes"`
	OwnerPIDs []int64 `json:"owner_pids"`
}

// Shutdown records the graceful (or forced) stop.
type Shutdown struct {
	Signal     string  `json:"signal"`
	SentAt     string  `json:"sent_at"`
	TSentNs    int64   `json:"t_sent_ns"`
	ElapsedMs  float64 `json:"elapsed_ms"`
	Forced     bool    `json:"forced"`
	ExitCode   *int64  `json:"exit_code"`
	ExitSignal *string `json:"exit_signal"`
	Acceptable bool    `json:"acceptable"`
	// ProcessesAtSignal are the owned tree's processes when SIGTERM was sent.
	ProcessesAtSignal []GroupProcess `json:"processes_at_signal,omitempty"`
}

// GroupProcess is one process of the owned tree at a point in time.
type GroupProcess struct {
	PID     int64  `json:"pid"`
	PPID    int64  `json:"ppid"`
	Comm    string `json:"comm"`
	Escaped bool   `json:"escaped"`
}

// Residue is what remained after shutdown.
type Residue struct {
	Processes []ResidueProcess  `json:"processes"`
	Listeners []ResidueListener `json:"listeners"`
	Killed    bool              `json:"killed"`
}

// ResidueProcess is a process still alive after shutdown.
type ResidueProcess struct {
	PID     int64  `json:"pid"`
	Comm    string `json:"comm"`
	Escaped bool   `json:"escaped"`
}

// ResidueListener is a listener still open after shutdown.
type ResidueListener struct {
	Port  int64 `json:"port"`
	Inode int64 `json:"inode"`
}

// ReceiptDoc is a receipt (qualkit.receipt.v1).
type ReceiptDoc struct {
	Schema               string        `json:"schema"`
	ReceiptID            string        `json:"receipt_id"`
	CreatedAt            string        `json:"created_at"`
	Source               Source        `json:"source"`
	Artifacts            []Artifact    `json:"artifacts"`
	Environment          Environment   `json:"environment"`
	Workload             WorkloadRef   `json:"workload"`
	Qualification        Qualification `json:"qualification"`
	Results              []Result      `json:"results"`
	Metrics              []Metric      `json:"metrics"`
	Lifecycle            *LifecycleRef `json:"lifecycle"`
	Unsupported          []string      `json:"unsupported"`
	Notes                []string      `json:"notes"`
	Publishable          bool          `json:"publishable"`
	UnpublishableReasons []string      `json:"unpublishable_reasons"`
}

// Source is the identity of the source tree.
type Source struct {
	Repository     string  `json:"repository"`
	Commit         string  `json:"commit"`
	Tree           string  `json:"tree"`
	TreeHashFormat string  `json:"tree_hash_format"`
	TreeHash       string  `json:"tree_hash"`
	OriginMain     *string `json:"origin_main"`
	Clean          bool    `json:"clean"`
}

// Environment describes the host: provenance, never policy.
type Environment struct {
	HostID string `json:"host_id"`
	OS     OSInfo `json:"os"`
	Device Device `json:"device"`
	// Devices and DeviceProbes are absent in receipts written before qualrun probed devices.
	Devices      []ProbedDevice    `json:"devices,omitempty"`
	DeviceProbes []DeviceProbe     `json:"device_probes,omitempty"`
	Runtime      map[string]string `json:"runtime"`
}

// ProbedDevice is one device as a probe identified it (provenance, never policy).
type ProbedDevice struct {
	Kind              string             `json:"kind"`
	Vendor            string             `json:"vendor"`
	Model             string             `json:"model"`
	APIFamilies       []string           `json:"api_families"`
	PCI               *PCIIdentity       `json:"pci,omitempty"`
	Driver            DeviceDriver       `json:"driver"`
	MemoryBytes       *int64             `json:"memory_bytes"`
	Count             *int64             `json:"count,omitempty"`
	ComputeCapability string             `json:"compute_capability,omitempty"`
	MIGMode           string             `json:"mig_mode,omitempty"`
	ProvenanceOnly    *DeviceIdentifiers `json:"provenance_only,omitempty"`
	Probe             string             `json:"probe"`
	Fixture           bool               `json:"fixture"`
}

// PCIIdentity is a GPU's PCI vendor, device and revision ids (lower-case 0x hex).
type PCIIdentity struct {
	VendorID string `json:"vendor_id"`
	DeviceID string `json:"device_id"`
	Revision string `json:"revision,omitempty"`
}

// DeviceDriver names a device's kernel driver and its version (nil when not exposed).
type DeviceDriver struct {
	Name    string  `json:"name"`
	Version *string `json:"version"`
}

// DeviceIdentifiers name one physical unit: provenance only, never compared or required.
type DeviceIdentifiers struct {
	UUID     string `json:"uuid,omitempty"`
	Serial   string `json:"serial,omitempty"`
	PCIBusID string `json:"pci_bus_id,omitempty"`
}

// DeviceProbe is the outcome of one device probe.
type DeviceProbe struct {
	Probe   string `json:"probe"`
	Status  string `json:"status"`
	Detail  string `json:"detail"`
	Fixture bool   `json:"fixture"`
}

// OSInfo identifies the operating system.
type OSInfo struct {
	Name         string `json:"name"`
	Version      string `json:"version"`
	Kernel       string `json:"kernel"`
	Architecture string `json:"architecture"`
}

// Device identifies the compute device.
type Device struct {
	Name         string `json:"name"`
	Architecture string `json:"architecture"`
	MemoryBytes  *int64 `json:"memory_bytes"`
	Driver       string `json:"driver"`
}

// WorkloadRef binds the workload, variant and variables of a campaign.
type WorkloadRef struct {
	ID        string         `json:"id"`
	Path      string         `json:"path"`
	Digest    string         `json:"digest"`
	Variant   string         `json:"variant"`
	Variables map[string]any `json:"variables"`
	Seed      *int64         `json:"seed"`
}

// Qualification summarises the campaign.
type Qualification struct {
	Kind    string `json:"kind"`
	Backend string `json:"backend"`
	Verdict string `json:"verdict"`
	// Interruption is set exactly when Verdict is "interrupted".
	Interruption    *Interruption `json:"interruption,omitempty"`
	StartedAt       string        `json:"started_at"`
	FinishedAt      string        `json:"finished_at"`
	DurationSeconds float64       `json:"duration_seconds"`
	Command         []string      `json:"command"`
	Qualrun         BinaryInfo    `json:"qualrun"`
}

// Interruption names the signal that interrupted a campaign and the phase it arrived in.
type Interruption struct {
	Signal string `json:"signal"`
	Phase  string `json:"phase"`
}

// BinaryInfo identifies a binary by version and digest.
type BinaryInfo struct {
	Version string `json:"version"`
	Digest  string `json:"digest"`
}

// Result summarises one case execution.
type Result struct {
	ID              string   `json:"id"`
	Repetition      int64    `json:"repetition"`
	Required        bool     `json:"required"`
	Status          string   `json:"status"`
	DurationSeconds float64  `json:"duration_seconds"`
	Metrics         []Metric `json:"metrics"`
	CaseResult      *FileRef `json:"case_result"`
	Details         *string  `json:"details"`
}

// LifecycleRef binds the lifecycle record.
type LifecycleRef struct {
	Path    string `json:"path"`
	Digest  string `json:"digest"`
	Verdict string `json:"verdict"`
}

// VerificationReportDoc is a verification report (qualkit.verification-report.v1).
type VerificationReportDoc struct {
	Schema    string       `json:"schema"`
	CreatedAt string       `json:"created_at"`
	Verifier  VerifierInfo `json:"verifier"`
	Subjects  []Subject    `json:"subjects"`
	// Signatures is absent in reports written before it existed.
	Signatures []SignatureReport `json:"signatures,omitempty"`
	Checks     []Check           `json:"checks"`
	Weakened   []string          `json:"weakened"`
	Scope      *string           `json:"scope"`
	Verdict    string            `json:"verdict"`
}

// VerifierInfo identifies the verifier.
type VerifierInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// Subject is one verified file.
type Subject struct {
	Path string `json:"path"`
	// Digest is nil for a file refused before it was read.
	Digest   *string `json:"digest"`
	Contract *string `json:"contract"`
}

// SignatureReport is one signature of an attestation file and what it came to.
type SignatureReport struct {
	File     string  `json:"file"`
	Index    int64   `json:"index"`
	KeyID    string  `json:"keyid"`
	Key      *string `json:"key"`
	Verified bool    `json:"verified"`
	Problem  *string `json:"problem"`
}

// Check is one publication check and its findings.
type Check struct {
	Name     string    `json:"name"`
	Status   string    `json:"status"`
	Findings []Finding `json:"findings"`
}

// Finding is one rejection.
type Finding struct {
	Check   string `json:"check"`
	File    string `json:"file"`
	Pointer string `json:"pointer"`
	Code    string `json:"code"`
	Message string `json:"message"`
}
