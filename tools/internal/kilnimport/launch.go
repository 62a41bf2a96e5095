package kilnimport

import (
	"fmt"

	"github.com/qualkit/qualkit/schemas/contract"
)

// Kiln's owned-server launch document (serving-benchmark-server-launch-v1.schema.json): closed,
// content_sha256 optional.
type kilnLaunch struct {
	Schema                  string   `json:"schema"`
	ID                      string   `json:"id"`
	Command                 []string `json:"command"`
	WorkingDirectory        string   `json:"working_directory"`
	LogDirectory            string   `json:"log_directory"`
	ReadinessPollIntervalMs int64    `json:"readiness_poll_interval_ms"`
	StartupTimeoutSeconds   float64  `json:"startup_timeout_seconds"`
	ShutdownTimeoutSeconds  float64  `json:"shutdown_timeout_seconds"`
	AcceptableExitCodes     []int64  `json:"acceptable_exit_codes"`
	ContentSHA256           *string  `json:"content_sha256"`
}

func convertLaunch(raw []byte, opts Options) (*Result, error) {
	var k kilnLaunch
	if err := strictDecode(raw, &k); err != nil {
		return nil, err
	}
	var missing []string
	if opts.BaseURL == "" {
		missing = append(missing, "--base-url (the server's loopback address, e.g. http://127.0.0.1:8420)")
	}
	if opts.ModelID == "" {
		missing = append(missing, "--model-id (the id GET /v1/models lists)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("a Kiln launch document has no base_url or model_id (they live in the server's TOML config); give %v", missing)
	}
	out := contract.LaunchRecipeDoc{
		Schema: contract.LaunchRecipeSchema, ID: k.ID, Command: k.Command, WorkingDirectory: k.WorkingDirectory,
		Environment: map[string]string{}, EnvironmentPassthrough: []string{}, BaseURL: opts.BaseURL, ModelID: opts.ModelID,
		Readiness:             contract.Readiness{Path: "/v1/models", PollIntervalMs: k.ReadinessPollIntervalMs, ProbeTimeoutMs: DefaultProbeTimeoutMs},
		StartupTimeoutSeconds: k.StartupTimeoutSeconds, ShutdownTimeoutSeconds: k.ShutdownTimeoutSeconds,
		AcceptableExitCodes: k.AcceptableExitCodes, Isolation: contract.Isolation{CgroupAccounting: DefaultCgroupAccounting},
	}
	m := []Mapping{
		{"/schema", "/schema", `"` + LaunchSchema + `" becomes "qualkit.launch-recipe.v1"`},
		{"/id", "/id", "same value"},
		{"/command", "/command", "same argv (never a shell string)"},
		{"/working_directory", "/working_directory", "same value, relative to the document's directory in both"},
		{"/log_directory", "", "not carried: qualrun keeps the server log in the run's evidence directory"},
		{"/readiness_poll_interval_ms", "/readiness/poll_interval_ms", "same value; readiness.path is /v1/models"},
		{"", "/readiness/probe_timeout_ms", fmt.Sprintf("Kiln has none: %d ms (the default)", DefaultProbeTimeoutMs)},
		{"/startup_timeout_seconds", "/startup_timeout_seconds", "same value"},
		{"/shutdown_timeout_seconds", "/shutdown_timeout_seconds", "same value"},
		{"/acceptable_exit_codes", "/acceptable_exit_codes", "same value"},
		{"", "/base_url", "from --base-url (Kiln's server TOML holds it)"},
		{"", "/model_id", "from --model-id (Kiln's server TOML holds it)"},
		{"", "/environment", "empty: Kiln launch documents have no environment, by design, and neither does the import"},
		{"", "/isolation", `pid_limit null, cgroup_accounting "` + string(DefaultCgroupAccounting) + `" (the defaults)`},
	}
	if k.ContentSHA256 != nil {
		m = append(m, Mapping{"/content_sha256", "", "not carried: qualrun binds the recipe by the digest of its bytes"})
	}
	doc, err := encode(out)
	if err != nil {
		return nil, err
	}
	return &Result{Kind: KindLaunch, Contract: contract.LaunchRecipe, Doc: doc, Mappings: m}, nil
}
