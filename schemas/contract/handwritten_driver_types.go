package contract

// Hand-written Go types of the driver worker output and the three version-2 evidence results
// (their CUE definitions carry @go(handwritten); tools/schemagen generates the rest, including
// the driver spec and the driver request): the results embed DriverResultHeader and their
// contract's body, and DriverBody is the union of the three bodies with accessors, shapes the
// generator does not derive. The conventions are those of zz_generated_types.go.

// DriverWorkerOutputDoc is a worker's output (qualkit.driver-worker-output.v1).
type DriverWorkerOutputDoc struct {
	Schema              string `json:"schema"`
	Contract            string `json:"contract"`
	RequestID           string `json:"request_id"`
	InputTokenIDsSHA256 string `json:"input_token_ids_sha256"`
	// Body is the contract's section: Oracle for a next-token result; ReferencePath,
	// ReferenceArgmax and Paths for a path attribution; Boundaries and LargestRelativeErrorGrowth
	// for a layer attribution.
	Body DriverBody `json:"body"`
}

// DriverBody is the union of the three bodies of a worker output; only the members of its
// contract are set.
type DriverBody struct {
	Oracle                     *Oracle          `json:"oracle,omitempty"`
	ReferencePath              string           `json:"reference_path,omitempty"`
	ReferenceArgmax            *int64           `json:"reference_argmax,omitempty"`
	Paths                      []PathComparison `json:"paths,omitempty"`
	Boundaries                 []Boundary       `json:"boundaries,omitempty"`
	LargestRelativeErrorGrowth *Growth          `json:"largest_relative_error_growth,omitempty"`
}

// NextToken returns the body as a next-token body; false when the oracle is absent.
func (b DriverBody) NextToken() (NextTokenBody, bool) {
	if b.Oracle == nil {
		return NextTokenBody{}, false
	}
	return NextTokenBody{Oracle: *b.Oracle}, true
}

// PathBody returns the body as a path attribution body; false when a member is absent.
func (b DriverBody) PathBody() (PathBody, bool) {
	if b.ReferenceArgmax == nil || b.ReferencePath == "" || len(b.Paths) == 0 {
		return PathBody{}, false
	}
	return PathBody{ReferencePath: b.ReferencePath, ReferenceArgmax: *b.ReferenceArgmax, Paths: b.Paths}, true
}

// LayerBody returns the body as a layer attribution body; false when a member is absent.
func (b DriverBody) LayerBody() (LayerBody, bool) {
	if b.LargestRelativeErrorGrowth == nil || len(b.Boundaries) == 0 {
		return LayerBody{}, false
	}
	return LayerBody{Boundaries: b.Boundaries, LargestRelativeErrorGrowth: *b.LargestRelativeErrorGrowth}, true
}

// NextTokenBody is the contract-specific section of a next-token result.
type NextTokenBody struct {
	Oracle Oracle `json:"oracle"`
}

// Oracle is the reference implementation's next-token logits, summarised.
type Oracle struct {
	Dtype string `json:"dtype"`
	Vocab int64  `json:"vocab"`
	// TopTokens are the min(10, vocab) highest logits: non-increasing, ties by ascending token id.
	TopTokens []TopToken `json:"top_tokens"`
	// ArgmaxTokenID is TopTokens[0].TokenID.
	ArgmaxTokenID int64 `json:"argmax_token_id"`
	// TopLogitMargin is TopTokens[0].Logit - TopTokens[1].Logit (0 when vocab is 1).
	TopLogitMargin  float64          `json:"top_logit_margin"`
	CandidateTokens []CandidateToken `json:"candidate_tokens"`
	LogitsSHA256    string           `json:"logits_sha256"`
	LogitsBytes     int64            `json:"logits_bytes"`
}

// TopToken is one of the highest logits.
type TopToken struct {
	TokenID int64   `json:"token_id"`
	Logit   float64 `json:"logit"`
}

// CandidateToken is a candidate's token with its logit and one-based rank (1 + the number of
// larger logits in the vocabulary).
type CandidateToken struct {
	Label   string  `json:"label"`
	TokenID int64   `json:"token_id"`
	Logit   float64 `json:"logit"`
	Rank    int64   `json:"rank"`
}

// PathBody is the contract-specific section of a path attribution.
type PathBody struct {
	ReferencePath   string           `json:"reference_path"`
	ReferenceArgmax int64            `json:"reference_argmax"`
	Paths           []PathComparison `json:"paths"`
}

// PathComparison is one compared path's numbers against the reference path.
type PathComparison struct {
	ID                    string  `json:"id"`
	Argmax                int64   `json:"argmax"`
	ArgmaxEqual           bool    `json:"argmax_equal"`
	CosineSimilarity      float64 `json:"cosine_similarity"`
	MaxAbsError           float64 `json:"max_abs_error"`
	MeanAbsError          float64 `json:"mean_abs_error"`
	Top10Overlap          int64   `json:"top10_overlap"`
	LogitsSHA256          string  `json:"logits_sha256"`
	ReferenceLogitsSHA256 string  `json:"reference_logits_sha256"`
}

// LayerBody is the contract-specific section of a layer attribution.
type LayerBody struct {
	Boundaries                 []Boundary `json:"boundaries"`
	LargestRelativeErrorGrowth Growth     `json:"largest_relative_error_growth"`
}

// Boundary is one layer boundary's numbers against the reference.
type Boundary struct {
	Index                       int64   `json:"index"`
	Name                        string  `json:"name"`
	CosineSimilarity            float64 `json:"cosine_similarity"`
	MaxAbsError                 float64 `json:"max_abs_error"`
	MeanAbsError                float64 `json:"mean_abs_error"`
	RootMeanSquareError         float64 `json:"root_mean_square_error"`
	ReferenceRootMeanSquare     float64 `json:"reference_root_mean_square"`
	RelativeRootMeanSquareError float64 `json:"relative_root_mean_square_error"`
	ReferenceSHA256             string  `json:"reference_sha256"`
	CandidateSHA256             string  `json:"candidate_sha256"`
}

// Growth names the boundary where the relative error grows most.
type Growth struct {
	Index int64  `json:"index"`
	Name  string `json:"name"`
	// RelativeRootMeanSquareErrorDelta is rel[Index] - rel[Index-1] (rel[0] for index 0).
	RelativeRootMeanSquareErrorDelta float64 `json:"relative_root_mean_square_error_delta"`
}

// DriverResultHeader holds the members every version-2 evidence result has.
type DriverResultHeader struct {
	Schema string `json:"schema"`
	// ResultSHA256 is the RFC 8785 self-hash of the document without this member (SelfHash).
	ResultSHA256    string               `json:"result_sha256"`
	CreatedAt       string               `json:"created_at"`
	DurationSeconds float64              `json:"duration_seconds"`
	CaseID          string               `json:"case_id"`
	Source          DriverSource         `json:"source"`
	Implementation  DriverImplementation `json:"implementation"`
	Request         DriverRequestRef     `json:"request"`
	Model           DriverModel          `json:"model"`
	Containment     Containment          `json:"containment"`
	// Tolerances are the declared tolerances evaluated against the body (EvaluateTolerances).
	Tolerances []ToleranceOutcome `json:"tolerances"`
}

// DriverSource is the identity of the source tree a driver ran from.
type DriverSource struct {
	Repository string  `json:"repository"`
	Commit     string  `json:"commit"`
	OriginMain *string `json:"origin_main"`
	Tree       string  `json:"tree"`
	TreeHash   string  `json:"tree_hash"`
	Clean      bool    `json:"clean"`
}

// DriverImplementation binds the code that produced a result.
type DriverImplementation struct {
	Executable FileRef    `json:"executable"`
	Script     FileRef    `json:"script"`
	Qualrun    BinaryInfo `json:"qualrun"`
}

// DriverRequestRef identifies the request a worker evaluated.
type DriverRequestRef struct {
	Path                string `json:"path"`
	Digest              string `json:"digest"`
	ID                  string `json:"id"`
	InputTokenCount     int64  `json:"input_token_count"`
	InputTokenIDsSHA256 string `json:"input_token_ids_sha256"`
}

// DriverModel identifies the model a worker loaded.
type DriverModel struct {
	ID     string `json:"id"`
	Path   string `json:"path"`
	Digest string `json:"digest"`
}

// Containment records how a worker was contained and how it ended.
type Containment struct {
	Network          string   `json:"network"`
	Mechanism        string   `json:"mechanism"`
	Probe            Probe    `json:"probe"`
	StartGate        string   `json:"start_gate"`
	HashBoundExec    bool     `json:"hash_bound_exec"`
	EnvironmentNames []string `json:"environment_names"`
	TimeoutSeconds   int64    `json:"timeout_seconds"`
	ElapsedSeconds   float64  `json:"elapsed_seconds"`
	// ExitCode is nil when the worker ended by a signal.
	ExitCode *int64   `json:"exit_code"`
	TimedOut bool     `json:"timed_out"`
	Forced   bool     `json:"forced"`
	Residue  []string `json:"residue"`
}

// Probe is what the isolation probe observed inside the namespace before the gate opened.
type Probe struct {
	Interfaces              []string `json:"interfaces"`
	OutsideUnreachable      bool     `json:"outside_unreachable"`
	LoopbackBind            bool     `json:"loopback_bind"`
	HostLoopbackUnreachable bool     `json:"host_loopback_unreachable"`
}

// ToleranceOutcome is one declared tolerance applied to one subject.
type ToleranceOutcome struct {
	Metric  string  `json:"metric"`
	Op      string  `json:"op"`
	Limit   float64 `json:"limit"`
	Subject string  `json:"subject"`
	// Observed is nil when the result has no number for the metric and subject (a failure).
	Observed *float64 `json:"observed"`
	Passed   bool     `json:"passed"`
}

// DriverVerdict is the verdict every driver result has; Reasons is empty exactly when Status is
// "passed".
type DriverVerdict struct {
	Status  DriverStatus `json:"status"`
	Reasons []string     `json:"reasons"`
}

// NextTokenVerdict is a next-token result's verdict.
type NextTokenVerdict struct {
	Status  DriverStatus `json:"status"`
	Reasons []string     `json:"reasons"`
	// ArgmaxCandidate is the single candidate whose token is the argmax, else "neither".
	ArgmaxCandidate              string `json:"argmax_candidate"`
	CandidateAttributionComplete bool   `json:"candidate_attribution_complete"`
}

// PathVerdict is a path attribution's verdict.
type PathVerdict struct {
	Status  DriverStatus `json:"status"`
	Reasons []string     `json:"reasons"`
	// Attribution is the first path failing argmax_equal or a tolerance, else "not_reproduced".
	Attribution string `json:"attribution"`
}

// NextTokenResultDoc is a next-token result (qualkit.next-token-result.v2).
type NextTokenResultDoc struct {
	DriverResultHeader
	NextTokenBody
	Verdict NextTokenVerdict `json:"verdict"`
}

// PathAttributionDoc is a path attribution (qualkit.path-attribution.v2).
type PathAttributionDoc struct {
	DriverResultHeader
	PathBody
	Verdict PathVerdict `json:"verdict"`
}

// LayerAttributionDoc is a layer attribution (qualkit.layer-attribution.v2).
type LayerAttributionDoc struct {
	DriverResultHeader
	LayerBody
	Verdict DriverVerdict `json:"verdict"`
}
