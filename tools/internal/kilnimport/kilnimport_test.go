package kilnimport

import (
	"errors"
	"os"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The real Kiln workload converts into a valid qualkit workload (Convert checks it against the
// contract), field by field.
func TestWorkloadFixture(t *testing.T) {
	res, err := Convert(read(t, "workload-kiln-serving-cuda-performance-c1-v1.json"), "workload", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Kind != KindWorkload || res.Contract != "workload.v1" {
		t.Fatalf("kind %s contract %s", res.Kind, res.Contract)
	}
	doc := string(res.Doc)
	for _, want := range []string{`"schema": "qualkit.workload.v1"`, `"id": "serving-cuda-performance-c1-v1"`, `"kind": "command"`,
		`"path_environment_variable": "QUALKIT_CASE_RESULT"`, `"direction": "higher_is_better"`, `"formula": "kiln.paired_profile_pass_count.v1"`,
		`"memory_limit_bytes": 16500000000`, `"timeout_seconds": 1800,`} {
		if !strings.Contains(doc, want) {
			t.Errorf("converted workload lacks %s", want)
		}
	}
	if len(res.Mappings) < 10 {
		t.Errorf("%d mappings", len(res.Mappings))
	}
}

func TestLaunchFixture(t *testing.T) {
	raw := read(t, "server-launch-kiln-rocm-strix-halo-serving-comparison-v2.json")
	if _, err := Convert(raw, "launch", Options{}); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "--base-url") {
		t.Fatalf("without --base-url: %v", err)
	}
	res, err := Convert(raw, "launch", Options{BaseURL: "http://127.0.0.1:8420", ModelID: "Qwen3.5-4B"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.Doc), `"poll_interval_ms": 250`) || !strings.Contains(string(res.Doc), `"startup_timeout_seconds": 600`) {
		t.Errorf("converted recipe:\n%s", res.Doc)
	}
}

// The version-1 oracle result is refused: it is evidence, and it carries a host temperature
// policy, each field named.
func TestOracleResultRefused(t *testing.T) {
	_, err := Convert(read(t, "oracle-result-v1-rocm-hf-next-token-guarded-fingerprint.json"), "oracle", Options{})
	if !errors.Is(err, ErrRefused) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"a Kiln evidence result", "/containment/service: host temperature policy (kiln.hf-thermal-containment.v1)",
		"/model_fingerprint/thermal: host temperature policy", "/implementation/supervisor_sha256: version-1 machine-specific policy"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// A workload that pins an architecture target or a thermal guard is refused, the field named.
func TestNotCarriedRefused(t *testing.T) {
	raw := string(read(t, "workload-kiln-serving-cuda-performance-c1-v1.json"))
	for _, c := range []struct{ edit, want string }{
		{`"features": "cuda",`, `/variants/0/effective_config/build/rocm_archs: machine-specific architecture target`},
		{`"features": "gfx1151",`, `/variants/0/effective_config/build/features: machine-specific architecture target ("gfx1151")`},
		{`"features": "cuda", "host_safety": {"limit": 1},`, `/variants/0/effective_config/build/host_safety: host temperature policy`},
	} {
		doc := raw
		if strings.Contains(c.want, "rocm_archs") {
			doc = strings.Replace(doc, `"features": "cuda",`, `"features": "cuda", "rocm_archs": ["gfx1151"],`, 1)
		} else {
			doc = strings.Replace(doc, `"features": "cuda",`, c.edit, 1)
		}
		_, err := Convert([]byte(doc), "w", Options{})
		if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", c.edit, err)
		}
	}
}

// TestTemperaturePolicyRefusedByMeaning: a host temperature policy is refused whatever it is
// called, at any depth of a workload or a launch document (the corpus of names is
// schemas.TestTemperaturePolicyName's; these are the ones a Kiln document has been seen to use or
// could), and the sampling temperature is not.
func TestTemperaturePolicyRefusedByMeaning(t *testing.T) {
	raw := string(read(t, "workload-kiln-serving-cuda-performance-c1-v1.json"))
	for _, name := range []string{"temperature_policy", "pacing", "cool_down_seconds", "coolDownSeconds", "thermal_guard",
		"gpu_temp_limit_c", "max_temperature", "fan_curve", "throttle_guard", "cooldown", "pace_seconds", "hwmon_path",
		"host_safety", "prelaunch_cooldown", "TemperaturePolicy"} {
		t.Run(name, func(t *testing.T) {
			doc := strings.Replace(raw, `"features": "cuda",`, `"features": "cuda", "`+name+`": {"seconds": 30},`, 1)
			_, err := Convert([]byte(doc), "w", Options{})
			want := `/variants/0/effective_config/build/` + name + `: host temperature policy`
			if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), want) {
				t.Fatalf("%s: want refusal %q, got %v", name, want, err)
			}
		})
	}
	doc := strings.Replace(raw, `"features": "cuda",`, `"features": "cuda", "temperature": 0,`, 1)
	if _, err := Convert([]byte(doc), "w", Options{}); err != nil && strings.Contains(err.Error(), "temperature policy") {
		t.Fatalf("the sampling temperature was refused as a policy: %v", err)
	}
}
