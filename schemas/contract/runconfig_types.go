package contract

// EffectiveRunConfigDoc is a campaign's effective run configuration
// (qualkit.effective-run-config.v1): what qualrun run resolved before anything ran, written to
// .qualification/runs/<receipt id>/effective-run-config.json and bound in the receipt as a
// config_file artifact. Conventions as in types.go.
type EffectiveRunConfigDoc struct {
	Schema   string               `json:"schema"`
	Workload EffectiveRunWorkload `json:"workload"`
	// Variables are the resolved typed values, defaults included.
	Variables map[string]any `json:"variables"`
	// Seed is the workload's seed; nil when it declares none.
	Seed            *int64 `json:"seed"`
	EffectiveConfig Config `json:"effective_config"`
	// ModelDir is qualrun run --model-dir as given and ModelID --model-id; nil when not given.
	ModelDir *string             `json:"model_dir"`
	ModelID  *string             `json:"model_id"`
	Qualrun  EffectiveRunQualrun `json:"qualrun"`
}

// EffectiveRunWorkload is the workload file and the variant that ran.
type EffectiveRunWorkload struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Variant string `json:"variant"`
}

// EffectiveRunQualrun is the qualrun that ran the campaign: its argv and version.
type EffectiveRunQualrun struct {
	Command []string `json:"command"`
	Version string   `json:"version"`
}
