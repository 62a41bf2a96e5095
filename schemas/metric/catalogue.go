package metric

import (
	"strings"

	"github.com/qualkit/qualkit/schemas/contract"
)

// DistributionAggregations are the statistics a distribution is emitted as, in emission order
// (P999 only with at least MinSamplesP999 samples).
var DistributionAggregations = []contract.Aggregation{contract.AggregationP50, contract.AggregationP90, contract.AggregationP95, contract.AggregationP99, contract.AggregationP99_9, contract.AggregationMin, contract.AggregationMax, contract.AggregationMean}

// Scope says where a formula's metric is reported.
type Scope string

// Scopes.
const (
	RowScope     Scope = "row"
	CaseScope    Scope = "case"
	ReceiptScope Scope = "receipt"
)

// Identity is what makes two metrics of one name comparable: the same unit, aggregation,
// direction and formula id.
type Identity struct {
	// Unit is the metric's unit ("ms", "tokens/s", ...): free text in the contract.
	Unit        string
	Aggregation contract.Aggregation
	Direction   contract.Direction
	Formula     string
}

// Formula is one catalogue entry: a formula id and the metric it defines.
type Formula struct {
	ID        string
	Scope     Scope
	Unit      string
	Direction contract.Direction
	// Name is the metric name; for a distribution the family, emitted as Name + "." + each of
	// DistributionAggregations; for a per-class formula the prefix before the class.
	Name string
	// Aggregation is the metric's aggregation; empty for a distribution.
	Aggregation contract.Aggregation
	// Distribution: a per-request (or per-gap) distribution summarized by Summarize.
	Distribution bool
	// PerClass: one metric Name + class for each error class that occurred.
	PerClass bool
	// Diagnostic: evidence for diagnosis, never a verdict (not recomputed from records).
	Diagnostic bool
	// CaseName and CaseAggregation: the case metric the formula also defines, if any.
	CaseName        string
	CaseAggregation contract.Aggregation
}

// Identity is the identity of the formula's metric (for a distribution, Aggregation is empty:
// see IdentityOf).
func (f Formula) Identity() Identity {
	return Identity{Unit: f.Unit, Aggregation: f.Aggregation, Direction: f.Direction, Formula: f.ID}
}

// Formula ids, as a receipt's metrics name them.
const (
	TTFT                       = "ttft.v1"
	TTFTSched                  = "ttft_sched.v1"
	TTFTContent                = "ttft_content.v1"
	ReasoningTokens            = "reasoning_tokens.v1"
	ContentTokens              = "content_tokens.v1"
	ContentThroughputWindow    = "content_throughput_window.v1"
	TTFTToolCall               = "ttft_tool_call.v1"
	ToolCallValidity           = "tool_call_validity.v1"
	TTFB                       = "ttfb.v1"
	E2E                        = "e2e.v1"
	E2ESched                   = "e2e_sched.v1"
	TPOT                       = "tpot.v1"
	DecodeRate                 = "decode_rate.v1"
	ICL                        = "icl.v1"
	ICLMax                     = "icl_max.v1"
	ChunkingFactor             = "chunking_factor.v1"
	ScheduleLag                = "schedule_lag.v1"
	RequestFailures            = "request_failures.v1"
	RequestFailuresByClass     = "request_failures_by_class.v1"
	OutputTokens               = "output_tokens.v1"
	PromptTokens               = "prompt_tokens.v1"
	RequestWindow              = "request_window.v1"
	RequestThroughput          = "request_throughput.v1"
	OutputThroughputWindow     = "output_throughput_window.v1"
	TotalThroughputWindow      = "total_throughput_window.v1"
	SLOGoodput                 = "slo_goodput.v1"
	SLOGoodputTokens           = "slo_goodput_tokens.v1"
	SLOGoodFraction            = "slo_good_fraction.v1"
	DispatchSpread             = "dispatch_spread.v1"
	AchievedRate               = "achieved_rate.v1"
	PrefixCacheHitFraction     = "prefix_cache_hit_fraction.v1"
	TTFTByTurn                 = "ttft_by_turn.v1"
	SessionDuration            = "session_duration.v1"
	SessionTokens              = "session_tokens.v1"
	TelemetryDelta             = "telemetry_delta.v1"
	ServerPrefixCacheHitRate   = "server_prefix_cache_hit_rate.v1"
	ServerSpecAcceptanceRate   = "server_spec_decode_acceptance_rate.v1"
	DeviceEnergy               = "device_energy.v1"
	DeviceEnergyPerOutputToken = "device_energy_per_output_token.v1"
	DevicePowerMean            = "device_power_mean.v1"
	DeviceThrottledSeconds     = "device_throttled_seconds.v1"
	DegradedRows               = "degraded_rows.v1"
	RequestCount               = "campaign.request_count.v1"
	RowCount                   = "campaign.row_count.v1"
	ResultsPassed              = "campaign.results_passed.v1"
	ResultsFailed              = "campaign.results_failed.v1"
)

// Catalogue lists every formula of a serving row and case, in the order a row emits them.
var Catalogue = []Formula{
	{ID: TTFT, Scope: RowScope, Name: "ttft_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: TTFTSched, Scope: RowScope, Name: "ttft_sched_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: TTFB, Scope: RowScope, Name: "ttfb_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: E2E, Scope: RowScope, Name: "e2e_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: E2ESched, Scope: RowScope, Name: "e2e_sched_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: TPOT, Scope: RowScope, Name: "tpot_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: DecodeRate, Scope: RowScope, Name: "decode_rate", Unit: "tokens/s", Direction: contract.DirectionHigherIsBetter, Distribution: true},
	{ID: ICL, Scope: RowScope, Name: "icl_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: ICLMax, Scope: RowScope, Name: "icl_max_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	// Reasoning rows (docs/metrics.md, "Reasoning tokens"): TTFT to the first content token, when
	// a success had a reasoning event; the output split by usage's reasoning_tokens, when every
	// success's usage states it.
	{ID: TTFTContent, Scope: RowScope, Name: "ttft_content_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	// Tool-call rows (docs/metrics.md, "Tool calls"): TTFT to the first tool-call delta, over the
	// successes that had one; the fraction of answered requests that called a tool whose every
	// call validates against the case's tools.
	{ID: TTFTToolCall, Scope: RowScope, Name: "ttft_tool_call_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: ToolCallValidity, Scope: RowScope, Name: "tool_call_validity", Unit: "fraction", Aggregation: contract.AggregationMean, Direction: contract.DirectionHigherIsBetter},
	{ID: ChunkingFactor, Scope: RowScope, Name: "chunking_factor.mean", Unit: "tokens/event", Aggregation: contract.AggregationMean, Direction: contract.DirectionNone},
	{ID: RequestFailures, Scope: RowScope, Name: "request_failures", Unit: "requests", Aggregation: contract.AggregationCount, Direction: contract.DirectionLowerIsBetter,
		CaseName: "request_failures.sum", CaseAggregation: contract.AggregationSum},
	{ID: RequestFailuresByClass, Scope: RowScope, Name: "request_failures.", PerClass: true, Unit: "requests", Aggregation: contract.AggregationCount, Direction: contract.DirectionLowerIsBetter},
	{ID: OutputTokens, Scope: RowScope, Name: "output_tokens.sum", Unit: "tokens", Aggregation: contract.AggregationSum, Direction: contract.DirectionNone},
	{ID: ReasoningTokens, Scope: RowScope, Name: "reasoning_tokens.sum", Unit: "tokens", Aggregation: contract.AggregationSum, Direction: contract.DirectionNone},
	{ID: ContentTokens, Scope: RowScope, Name: "content_tokens.sum", Unit: "tokens", Aggregation: contract.AggregationSum, Direction: contract.DirectionNone},
	{ID: PromptTokens, Scope: RowScope, Name: "prompt_tokens.sum", Unit: "tokens", Aggregation: contract.AggregationSum, Direction: contract.DirectionNone},
	{ID: RequestWindow, Scope: RowScope, Name: "window_s", Unit: "s", Aggregation: contract.AggregationExact, Direction: contract.DirectionNone},
	{ID: RequestThroughput, Scope: RowScope, Name: "request_throughput", Unit: "requests/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionHigherIsBetter},
	{ID: OutputThroughputWindow, Scope: RowScope, Name: "output_throughput_window", Unit: "tokens/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionHigherIsBetter},
	{ID: ContentThroughputWindow, Scope: RowScope, Name: "content_throughput_window", Unit: "tokens/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionHigherIsBetter},
	{ID: TotalThroughputWindow, Scope: RowScope, Name: "total_throughput_window", Unit: "tokens/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionHigherIsBetter},
	{ID: SLOGoodput, Scope: RowScope, Name: "slo_goodput", Unit: "requests/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionHigherIsBetter},
	{ID: SLOGoodputTokens, Scope: RowScope, Name: "slo_goodput_tokens", Unit: "tokens/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionHigherIsBetter},
	{ID: SLOGoodFraction, Scope: RowScope, Name: "slo_good_fraction", Unit: "fraction", Aggregation: contract.AggregationMean, Direction: contract.DirectionHigherIsBetter},
	{ID: ScheduleLag, Scope: RowScope, Name: "schedule_lag_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: DispatchSpread, Scope: RowScope, Name: "dispatch_spread_ms", Unit: "ms", Aggregation: contract.AggregationExact, Direction: contract.DirectionLowerIsBetter},
	{ID: AchievedRate, Scope: RowScope, Name: "achieved_rate", Unit: "requests/s", Aggregation: contract.AggregationRate, Direction: contract.DirectionNone},
	{ID: PrefixCacheHitFraction, Scope: RowScope, Name: "prefix_cache_hit_fraction", Unit: "fraction", Aggregation: contract.AggregationMean, Direction: contract.DirectionNone},
	// Multi-turn sessions (session.go): the p50 TTFT of each turn position, "ttft_p50_ms.turn<k>";
	// the duration and the tokens of each complete session.
	{ID: TTFTByTurn, Scope: RowScope, Name: "ttft_p50_ms.", PerClass: true, Unit: "ms", Aggregation: contract.AggregationP50, Direction: contract.DirectionLowerIsBetter},
	{ID: SessionDuration, Scope: RowScope, Name: "session_duration_ms", Unit: "ms", Direction: contract.DirectionLowerIsBetter, Distribution: true},
	{ID: SessionTokens, Scope: RowScope, Name: "session_tokens", Unit: "tokens", Direction: contract.DirectionNone, Distribution: true},
	// A server counter family's delta between two /metrics scrapes: "server.<family>.delta", in
	// the family's own unit (count, s or bytes).
	{ID: TelemetryDelta, Scope: RowScope, Name: "server.", PerClass: true, Aggregation: contract.AggregationSum, Direction: contract.DirectionNone, Diagnostic: true},
	// Ratios of two server counter families' deltas over the same scrapes (ServerRatios).
	{ID: ServerPrefixCacheHitRate, Scope: RowScope, Name: "server_prefix_cache_hit_rate", Unit: "fraction", Aggregation: contract.AggregationExact, Direction: contract.DirectionNone, Diagnostic: true},
	{ID: ServerSpecAcceptanceRate, Scope: RowScope, Name: "server_spec_decode_acceptance_rate", Unit: "fraction", Aggregation: contract.AggregationExact, Direction: contract.DirectionNone, Diagnostic: true},
	{ID: DeviceEnergy, Scope: RowScope, Name: "device_energy_j", Unit: "J", Aggregation: contract.AggregationSum, Direction: contract.DirectionLowerIsBetter, Diagnostic: true},
	{ID: DeviceEnergyPerOutputToken, Scope: RowScope, Name: "device_energy_per_output_token_j", Unit: "J/token", Aggregation: contract.AggregationExact, Direction: contract.DirectionLowerIsBetter, Diagnostic: true},
	{ID: DevicePowerMean, Scope: RowScope, Name: "device_power_mean_w", Unit: "W", Aggregation: contract.AggregationMean, Direction: contract.DirectionLowerIsBetter, Diagnostic: true},
	{ID: DeviceThrottledSeconds, Scope: RowScope, Name: "device_throttled_seconds", Unit: "s", Aggregation: contract.AggregationMax, Direction: contract.DirectionLowerIsBetter, Diagnostic: true},
	{ID: RequestCount, Scope: CaseScope, Name: "request_count", Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionNone},
	{ID: RowCount, Scope: CaseScope, Name: "row_count", Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionNone},
	{ID: DegradedRows, Scope: CaseScope, Name: "degraded_rows", Unit: "rows", Aggregation: contract.AggregationCount, Direction: contract.DirectionLowerIsBetter},
	{ID: ResultsPassed, Scope: ReceiptScope, Name: "results_passed", Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionHigherIsBetter},
	{ID: ResultsFailed, Scope: ReceiptScope, Name: "results_failed", Unit: "count", Aggregation: contract.AggregationCount, Direction: contract.DirectionLowerIsBetter},
}

// SLOMetrics are the row metrics that need the serving case's SLO (with no SLO known they are
// not computed).
var SLOMetrics = []string{"slo_goodput", "slo_goodput_tokens", "slo_good_fraction"}

// Lookup returns the catalogue entry of a formula id.
func Lookup(id string) (Formula, bool) {
	for _, f := range Catalogue {
		if f.ID == id {
			return f, true
		}
	}
	return Formula{}, false
}

func mustLookup(id string) Formula {
	f, ok := Lookup(id)
	if !ok {
		panic("metric: formula " + id + " is not in the catalogue")
	}
	return f
}

// RowIdentity returns the identity the catalogue defines for a row metric name (diagnostic
// metrics excepted); false for a name no row formula defines.
func RowIdentity(name string) (Identity, bool) {
	for _, f := range Catalogue {
		if f.Scope != RowScope || f.Diagnostic {
			continue
		}
		switch {
		case f.Distribution:
			fam, agg, ok := strings.Cut(name, ".")
			if ok && fam == f.Name && isDistributionAggregation(contract.Aggregation(agg)) {
				id := f.Identity()
				id.Aggregation = contract.Aggregation(agg)
				return id, true
			}
		case f.PerClass:
			if class, ok := strings.CutPrefix(name, f.Name); ok && class != "" && !definedRowName(name) {
				return f.Identity(), true
			}
		case name == f.Name:
			return f.Identity(), true
		}
	}
	return Identity{}, false
}

// definedRowName reports whether a plain (not per-class) row formula defines name.
func definedRowName(name string) bool {
	for _, f := range Catalogue {
		if f.Scope == RowScope && !f.Distribution && !f.PerClass && f.Name == name {
			return true
		}
	}
	return false
}

func isDistributionAggregation(a contract.Aggregation) bool {
	for _, d := range DistributionAggregations {
		if a == d {
			return true
		}
	}
	return false
}

// CaseIdentity returns the identity the catalogue defines for a serving case metric name: the
// case counters, the row formulas' case totals and the headline summaries (worst or best row of
// a row metric, with that metric's unit, direction and formula); false for any other name.
func CaseIdentity(name string) (Identity, bool) {
	for _, f := range Catalogue {
		switch {
		case f.Scope == CaseScope && f.Name == name:
			return f.Identity(), true
		case f.CaseName != "" && f.CaseName == name:
			id := f.Identity()
			id.Aggregation = f.CaseAggregation
			return id, true
		}
	}
	for _, h := range Headline {
		if name == h.Name+h.Suffix() {
			id, _ := RowIdentity(h.Name)
			id.Aggregation = h.Aggregation(id.Direction)
			return id, true
		}
	}
	return Identity{}, false
}

// ServerRatio is a built-in mapping from two server counter families to a per-row ratio of their
// deltas between the scrapes around the row: Σ numerator deltas / Σ denominator deltas. Families
// are named as engines export them, with or without the _total suffix.
type ServerRatio struct {
	Formula                string
	Numerator, Denominator []string
}

// ServerRatios are the built-in mappings: vLLM's and qualsim's prefix-cache hits over queries (in
// tokens), and their speculative-decoding accepted over draft tokens. SGLang exports both as
// gauges (sglang:cache_hit_rate, sglang:spec_accept_length), which have no delta.
var ServerRatios = []ServerRatio{
	{Formula: ServerPrefixCacheHitRate,
		Numerator:   []string{"vllm:prefix_cache_hits", "qualsim_prefix_cache_hits"},
		Denominator: []string{"vllm:prefix_cache_queries", "qualsim_prefix_cache_queries"}},
	{Formula: ServerSpecAcceptanceRate,
		Numerator:   []string{"vllm:spec_decode_num_accepted_tokens", "qualsim_spec_decode_num_accepted_tokens"},
		Denominator: []string{"vllm:spec_decode_num_draft_tokens", "qualsim_spec_decode_num_draft_tokens"}},
}
