package contract

import "strings"

// The contracts this module knows, by name. Each has an exported schema under json/.
const (
	Workload           = "workload.v1"
	LaunchRecipe       = "launch-recipe.v1"
	RuntimeManifest    = "runtime-manifest.v1"
	CaseResult         = "case-result.v1"
	RequestRecord      = "request-record.v1"
	LifecycleRecord    = "lifecycle-record.v1"
	Receipt            = "receipt.v1"
	VerificationReport = "verification-report.v1"
	DriverSpec         = "driver-spec.v1"
	DriverRequest      = "driver-request.v1"
	DriverWorkerOutput = "driver-worker-output.v1"
	NextTokenResult    = "next-token-result.v2"
	PathAttribution    = "path-attribution.v2"
	LayerAttribution   = "layer-attribution.v2"
	ReportView         = "report-view.v1"
	Comparison         = "comparison.v1"
	EffectiveRunConfig = "effective-run-config.v1"
	TelemetrySample    = "telemetry-sample.v1"
)

// DriverResults lists the version-2 evidence results a driver writes, by contract name.
var DriverResults = []string{NextTokenResult, PathAttribution, LayerAttribution}

// IsDriverResult reports whether name (a contract name such as "next-token-result.v2", or a
// schema id such as "qualkit.next-token-result.v2") is a driver's evidence result.
func IsDriverResult(name string) bool {
	name = strings.TrimPrefix(name, "qualkit.")
	for _, n := range DriverResults {
		if n == name {
			return true
		}
	}
	return false
}
