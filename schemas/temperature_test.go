package schemas

import (
	"strings"
	"testing"
)

// TestTemperaturePolicyName is the corpus of member names: the host temperature policies a Kiln
// document (or anything else) may carry under any name, and the names that are not one, the
// sampling temperature first among them.
func TestTemperaturePolicyName(t *testing.T) {
	policy := []string{
		"thermal", "thermal_policy", "host_thermal", "temperature_policy", "TemperaturePolicy", "temperaturePolicy",
		"pacing", "pace_seconds", "request_pacing", "paced_start", "cool_down_seconds", "coolDownSeconds", "cool-down",
		"cool_off_seconds", "cooldown", "cooldown_s", "prelaunch_cooldown", "idle_boundary_cooldowns", "cooling_wait",
		"max_temperature_c", "temperature_limit", "gpu_temp_limit", "gpu-temp-max", "temp_threshold", "host_temperature_end_millicelsius",
		"temperature_start_millicelsius", "millicelsius", "max_celsius", "limit_fahrenheit", "hwmon_path", "hwmon",
		"tjmax", "tctl_limit", "fan_curve", "fan_speed_percent", "throttle", "throttling_guard", "thermally_sustainable_output_token_throughput_per_s",
		"host_safety", "hostSafety", "overheat_guard", "hotspot_limit", "heat_soak_seconds", "THERMAL_GUARD", "Temperature.Policy",
		"host_thermal_pacing_seconds", "host_thermal_cooldown_seconds", "temps_max",
	}
	notPolicy := []string{
		"temperature", "Temperature", "sampling_temperature", "default_temperature", "temperatures", "model_temperature",
		"top_p", "max_tokens", "seed", "concurrency", "arrival_rate", "timeout_seconds", "startup_deadline_seconds",
		"poll_interval_ms", "memory_max_gib", "supervisor_sha256", "rocm_archs", "spacing", "namespace", "template",
		"chat_template_hash", "prompt_template_version", "tempo", "attempts", "contemporary", "package", "workspace",
		"fanout", "cool", "down", "host", "safety_margin",
	}
	for _, n := range policy {
		if !TemperaturePolicyName(n) {
			t.Errorf("%q is a host temperature policy, not recognised", n)
		}
	}
	for _, n := range notPolicy {
		if TemperaturePolicyName(n) {
			t.Errorf("%q is not a host temperature policy, refused", n)
		}
	}
}

// TestHistoricalTemperatureKeysAreTemperaturePolicy: the version-1 markers that are temperature
// policy are names TemperaturePolicyName accepts (one meaning, not two lists); the others are
// machine-specific policy of another kind.
func TestHistoricalTemperatureKeysAreTemperaturePolicy(t *testing.T) {
	other := map[string]bool{"supervisor_sha256": true, "memory_max_gib": true, "swap_max_bytes": true, "rocm_archs": true}
	for k := range historicalKeys {
		if other[k] {
			continue
		}
		if !TemperaturePolicyName(k) {
			t.Errorf("historical marker %q is not recognised as a temperature policy", k)
		}
	}
	for s := range historicalSchemas {
		if strings.Contains(s, "thermal") && !TemperaturePolicyName(s) {
			t.Errorf("historical schema %q is not recognised as a temperature policy", s)
		}
	}
}
