package sim_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/qualkit/qualkit/runner/sim"
)

func TestLoadConfig(t *testing.T) {
	base := sim.DefaultConfig()
	c, err := sim.LoadConfig(strings.NewReader(`{
		"models": ["a", "b"], "seed": 9, "startup_delay": "1s", "ttft": "50ms", "prefill_per_token": "1ms",
		"token_interval": "10ms", "tokens_per_event": 3, "jitter": "2ms", "slots": 2, "default_max_tokens": 32,
		"eos_after": 7, "role_prelude": false, "shutdown_grace": "3s", "faults": ["no-done", "stall=1s@3"]
	}`), base)
	if err != nil {
		t.Fatal(err)
	}
	want := sim.Config{
		Models: []string{"a", "b"}, Seed: 9,
		Timing: sim.Timing{StartupDelay: time.Second, TTFT: 50 * time.Millisecond, PrefillPerToken: time.Millisecond,
			TokenInterval: 10 * time.Millisecond, TokensPerEvent: 3, Jitter: 2 * time.Millisecond},
		Slots: 2, DefaultMaxTokens: 32, EOSAfter: 7, RolePrelude: false, ShutdownGrace: 3 * time.Second,
		Faults: sim.Faults{NoDone: true, Stall: time.Second, StallAt: 3},
	}
	if strings.Join(c.Models, ",") != "a,b" || c.Seed != want.Seed || c.Timing != want.Timing || c.Slots != want.Slots ||
		c.DefaultMaxTokens != want.DefaultMaxTokens || c.EOSAfter != want.EOSAfter || c.RolePrelude || c.ShutdownGrace != want.ShutdownGrace ||
		c.Faults != want.Faults {
		t.Fatalf("got %+v\nwant %+v", c, want)
	}
	if c, err := sim.LoadConfig(strings.NewReader(`{"tool_calls": {"enabled": true, "accuracy": 0.9}}`), base); err != nil || c.ToolCalls != (sim.ToolCalls{Enabled: true, Accuracy: 0.9}) {
		t.Fatalf("tool_calls: %+v, %v", c.ToolCalls, err)
	}
	c, err = sim.LoadConfig(strings.NewReader(`{"reasoning": {"tokens": 8, "field": "reasoning"}, "spec_decode": {"draft_tokens": 4, "acceptance": 0.7}}`), base)
	if err != nil || c.Reasoning != (sim.Reasoning{Tokens: 8, Field: sim.ReasoningField}) || c.SpecDecode != (sim.SpecDecode{DraftTokens: 4, Acceptance: 0.7}) {
		t.Fatalf("reasoning and spec_decode: %+v %+v, %v", c.Reasoning, c.SpecDecode, err)
	}
	// Absent fields keep the base.
	c, err = sim.LoadConfig(strings.NewReader(`{"slots": 3}`), base)
	if err != nil || c.Slots != 3 || c.Timing != base.Timing || c.Models[0] != base.Models[0] {
		t.Fatalf("overlay: %+v, %v", c, err)
	}

	for _, bad := range []string{
		`{"slot": 3}`, `{"ttft": "fast"}`, `{"ttft": "-1s"}`, `{"slots": 0}`, `{} {}`, `{"models": []}`,
		`{"models": ["a", "a"]}`, `{"models": ["has space"]}`, `{"faults": ["bogus"]}`, `{"tokens_per_event": 0}`,
		`[]`, `{"seed": -1}`, `{"default_max_tokens": 1000000000}`, `{"faults": ["exit-before-ready", "never-ready"]}`,
		`{"reasoning": {"tokens": -1}}`, `{"reasoning": {"field": "thoughts"}}`, `{"spec_decode": {"draft_tokens": 65}}`,
		`{"spec_decode": {"acceptance": 1.5}}`, `{"tool_calls": {"accuracy": 2}}`, `{"image_tokens": -1}`, `{"image_tokens": 16385}`, `{"spec_decode": {"acceptance": -0.1}}`,
		strings.Repeat(" ", sim.MaxConfigBytes+1),
	} {
		if _, err := sim.LoadConfig(strings.NewReader(bad), base); !errors.Is(err, sim.ErrConfig) {
			t.Errorf("LoadConfig(%.40q) = %v, want ErrConfig", bad, err)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:18080": true, "127.1.2.3:0": true, "[::1]:80": true, "localhost:8000": true,
		"0.0.0.0:8080": false, ":8080": false, "[::]:80": false, "10.0.0.1:80": false, "example.com:80": false,
		"127.0.0.1": false, "[::ffff:127.0.0.1]:80": true,
	} {
		err := sim.CheckLoopback(addr)
		if (err == nil) != ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", addr, err, ok)
		}
		if err != nil && strings.Contains(addr, ":80") && addr != "127.0.0.1" && !errors.Is(err, sim.ErrNotLoopback) {
			t.Errorf("CheckLoopback(%q) = %v, want ErrNotLoopback", addr, err)
		}
	}
}
