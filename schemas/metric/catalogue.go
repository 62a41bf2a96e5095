package metric

import "strings"

// Unit is a metric's unit ("ms", "tokens/s", ...).
type Unit string

// Aggregation says how a metric's samples became its value ("p50", "mean", "rate", ...).
type Aggregation string

// Direction says which way a metric is better.
type Direction string

// Directions.
const (
	LowerIsBetter  Direction = "lower_is_better"
	HigherIsBetter Direction = "higher_is_better"
	NoDirection    Direction = "none"
)

// Aggregations.
const (
	P50   Aggregation = "p50"
	P90   Aggregation = "p90"
	P95   Aggregation = "p95"
	P99   Aggregation = "p99"
	P999  Aggregation = "p99.9"
	Min   Aggregation = "min"
	Max   Aggregation = "max"
	Mean  Aggregation = "mean"
	Count Aggregation = "count"
	Sum   Aggregation = "sum"
	Rate  Aggregation = "rate"
	Exact Aggregation = "exact"
)

// DistributionAggregations are the statistics a distribution is emitted as, in emission order
// (P999 only with at least MinSamplesP999 samples).
var DistributionAggregations = []Aggregation{P50, P90, P95, P99, P999, Min, Max, Mean}

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
	Unit        Unit
	Aggregation Aggregation
	Direction   Direction
	Formula     string
}

// Formula is one catalogue entry: a formula id and the metric it defines.
type Formula struct {
	ID        string
	Scope     Scope
	Unit      Unit
	Direction Direction
	// Name is the metric name; for a distribution the family, emitted as Name + "." + each of
	// DistributionAggregations; for a per-class formula the prefix before the class.
	Name string
	// Aggregation is the metric's aggregation; empty for a distribution.
	Aggregation Aggregation
	// Distribution: a per-request (or per-gap) distribution summarized by Summarize.
	Distribution bool
	// PerClass: one metric Name + class for each error class that occurred.
	PerClass bool
	// Diagnostic: evidence for diagnosis, never a verdict (not recomputed from records).
	Diagnostic bool
	// CaseName and CaseAggregation: the case metric the formula also defines, if any.
	CaseName        string
	CaseAggregation Aggregation
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
	TelemetryDelta             = "telemetry_delta.v1"
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
	{ID: TTFT, Scope: RowScope, Name: "ttft_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: TTFTSched, Scope: RowScope, Name: "ttft_sched_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: TTFB, Scope: RowScope, Name: "ttfb_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: E2E, Scope: RowScope, Name: "e2e_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: E2ESched, Scope: RowScope, Name: "e2e_sched_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: TPOT, Scope: RowScope, Name: "tpot_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: DecodeRate, Scope: RowScope, Name: "decode_rate", Unit: "tokens/s", Direction: HigherIsBetter, Distribution: true},
	{ID: ICL, Scope: RowScope, Name: "icl_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: ICLMax, Scope: RowScope, Name: "icl_max_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: ChunkingFactor, Scope: RowScope, Name: "chunking_factor.mean", Unit: "tokens/event", Aggregation: Mean, Direction: NoDirection},
	{ID: RequestFailures, Scope: RowScope, Name: "request_failures", Unit: "requests", Aggregation: Count, Direction: LowerIsBetter,
		CaseName: "request_failures.sum", CaseAggregation: Sum},
	{ID: RequestFailuresByClass, Scope: RowScope, Name: "request_failures.", PerClass: true, Unit: "requests", Aggregation: Count, Direction: LowerIsBetter},
	{ID: OutputTokens, Scope: RowScope, Name: "output_tokens.sum", Unit: "tokens", Aggregation: Sum, Direction: NoDirection},
	{ID: PromptTokens, Scope: RowScope, Name: "prompt_tokens.sum", Unit: "tokens", Aggregation: Sum, Direction: NoDirection},
	{ID: RequestWindow, Scope: RowScope, Name: "window_s", Unit: "s", Aggregation: Exact, Direction: NoDirection},
	{ID: RequestThroughput, Scope: RowScope, Name: "request_throughput", Unit: "requests/s", Aggregation: Rate, Direction: HigherIsBetter},
	{ID: OutputThroughputWindow, Scope: RowScope, Name: "output_throughput_window", Unit: "tokens/s", Aggregation: Rate, Direction: HigherIsBetter},
	{ID: TotalThroughputWindow, Scope: RowScope, Name: "total_throughput_window", Unit: "tokens/s", Aggregation: Rate, Direction: HigherIsBetter},
	{ID: SLOGoodput, Scope: RowScope, Name: "slo_goodput", Unit: "requests/s", Aggregation: Rate, Direction: HigherIsBetter},
	{ID: SLOGoodputTokens, Scope: RowScope, Name: "slo_goodput_tokens", Unit: "tokens/s", Aggregation: Rate, Direction: HigherIsBetter},
	{ID: SLOGoodFraction, Scope: RowScope, Name: "slo_good_fraction", Unit: "fraction", Aggregation: Mean, Direction: HigherIsBetter},
	{ID: ScheduleLag, Scope: RowScope, Name: "schedule_lag_ms", Unit: "ms", Direction: LowerIsBetter, Distribution: true},
	{ID: DispatchSpread, Scope: RowScope, Name: "dispatch_spread_ms", Unit: "ms", Aggregation: Exact, Direction: LowerIsBetter},
	{ID: AchievedRate, Scope: RowScope, Name: "achieved_rate", Unit: "requests/s", Aggregation: Rate, Direction: NoDirection},
	{ID: PrefixCacheHitFraction, Scope: RowScope, Name: "prefix_cache_hit_fraction", Unit: "fraction", Aggregation: Mean, Direction: NoDirection},
	// A server counter family's delta between two /metrics scrapes: "server.<family>.delta", in
	// the family's own unit (count, s or bytes).
	{ID: TelemetryDelta, Scope: RowScope, Name: "server.", PerClass: true, Aggregation: Sum, Direction: NoDirection, Diagnostic: true},
	{ID: DeviceEnergy, Scope: RowScope, Name: "device_energy_j", Unit: "J", Aggregation: Sum, Direction: LowerIsBetter, Diagnostic: true},
	{ID: DeviceEnergyPerOutputToken, Scope: RowScope, Name: "device_energy_per_output_token_j", Unit: "J/token", Aggregation: Exact, Direction: LowerIsBetter, Diagnostic: true},
	{ID: DevicePowerMean, Scope: RowScope, Name: "device_power_mean_w", Unit: "W", Aggregation: Mean, Direction: LowerIsBetter, Diagnostic: true},
	{ID: DeviceThrottledSeconds, Scope: RowScope, Name: "device_throttled_seconds", Unit: "s", Aggregation: Max, Direction: LowerIsBetter, Diagnostic: true},
	{ID: RequestCount, Scope: CaseScope, Name: "request_count", Unit: "count", Aggregation: Count, Direction: NoDirection},
	{ID: RowCount, Scope: CaseScope, Name: "row_count", Unit: "count", Aggregation: Count, Direction: NoDirection},
	{ID: DegradedRows, Scope: CaseScope, Name: "degraded_rows", Unit: "rows", Aggregation: Count, Direction: LowerIsBetter},
	{ID: ResultsPassed, Scope: ReceiptScope, Name: "results_passed", Unit: "count", Aggregation: Count, Direction: HigherIsBetter},
	{ID: ResultsFailed, Scope: ReceiptScope, Name: "results_failed", Unit: "count", Aggregation: Count, Direction: LowerIsBetter},
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
			if ok && fam == f.Name && isDistributionAggregation(Aggregation(agg)) {
				id := f.Identity()
				id.Aggregation = Aggregation(agg)
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

func isDistributionAggregation(a Aggregation) bool {
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
