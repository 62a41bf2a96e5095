package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/runner/sim"
)

// TestReasoningStream: a reasoning model streams its first Tokens tokens as deltas of the declared
// field, every one before the first content delta and none mixed with content; the reasoning and
// the content together are the completion a non-reasoning model returns; usage counts the
// reasoning tokens inside completion_tokens. A completions request carries no reasoning.
func TestReasoningStream(t *testing.T) {
	plain := start(t, fastConfig(), true)
	_, evs, err := plain.stream("/v1/chat/completions", chatBody("qualsim-tiny", "think first", 12))
	if err != nil {
		t.Fatal(err)
	}
	want := content(t, evs)
	for _, field := range []string{sim.ReasoningContent, sim.ReasoningField} {
		t.Run(field, func(t *testing.T) {
			cfg := fastConfig()
			cfg.Timing.TokensPerEvent = 4 // an event boundary that does not fall on the 5th token
			cfg.Reasoning = sim.Reasoning{Tokens: 5, Field: field}
			ts := start(t, cfg, true)
			body := chatBody("qualsim-tiny", "think first", 12)
			body["stream_options"] = map[string]any{"include_usage": true}
			_, evs, err := ts.stream("/v1/chat/completions", body)
			if err != nil {
				t.Fatal(err)
			}
			var reasoning, text strings.Builder
			var usage map[string]any
			for _, e := range evs {
				if e.data == "" || e.data == "[DONE]" {
					continue
				}
				m := e.json(t)
				if u, ok := m["usage"].(map[string]any); ok {
					usage = u
				}
				for _, c := range m["choices"].([]any) {
					d, _ := c.(map[string]any)["delta"].(map[string]any)
					r, hasR := d[field].(string)
					s, _ := d["content"].(string)
					if hasR && s != "" {
						t.Fatalf("an event mixes reasoning and content: %s", e.data)
					}
					if hasR && text.Len() > 0 {
						t.Fatalf("reasoning after content: %s", e.data)
					}
					reasoning.WriteString(r)
					text.WriteString(s)
				}
			}
			if got := reasoning.String() + text.String(); got != want {
				t.Fatalf("reasoning+content %q; want the plain completion %q", got, want)
			}
			if n := len(strings.Fields(reasoning.String())); n != 5 {
				t.Errorf("reasoning %q has %d tokens, want 5", reasoning.String(), n)
			}
			details, _ := usage["completion_tokens_details"].(map[string]any)
			if usage["completion_tokens"] != 12.0 || details["reasoning_tokens"] != 5.0 {
				t.Errorf("usage %v: want 12 completion tokens of which 5 reasoning", usage)
			}

			resp, b, err := ts.post("/v1/chat/completions", chatBody("qualsim-tiny", "think first", 12))
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("non-streamed: %v %v %s", resp, err, b)
			}
			var r struct {
				Choices []struct{ Message map[string]any }
			}
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			if m := r.Choices[0].Message; m[field] != reasoning.String() || m["content"] != text.String() {
				t.Errorf("non-streamed message %v; want %s %q and content %q", m, field, reasoning.String(), text.String())
			}

			_, cevs, err := ts.stream("/v1/completions", completionBody("qualsim-tiny", "think first", 12))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range cevs {
				if strings.Contains(e.data, field) {
					t.Fatalf("a completions event carries reasoning: %s", e.data)
				}
			}
		})
	}
}

// TestSpecDecodeCounters: the declared acceptance model's counters are exact at acceptance 0
// (every step emits one token and accepts nothing) and 1 (every step accepts its whole draft),
// and lie between at 0.6; without the model the families are absent.
func TestSpecDecodeCounters(t *testing.T) {
	for _, tc := range []struct {
		acceptance float64
		drafts     float64 // steps for 3 requests of 16 tokens, exact at 0 and 1
	}{{0, 48}, {1, 12}, {0.6, -1}} {
		cfg := fastConfig()
		cfg.SpecDecode = sim.SpecDecode{DraftTokens: 3, Acceptance: tc.acceptance}
		ts := start(t, cfg, true)
		for i := range 3 {
			if resp, b, err := ts.post("/v1/chat/completions", chatBody("qualsim-tiny", strings.Repeat("x ", i+1), 16)); err != nil || resp.StatusCode != 200 {
				t.Fatalf("post: %v %v %s", resp, err, b)
			}
		}
		steps := metric(t, ts, "qualsim_spec_decode_num_drafts_total")
		draft := metric(t, ts, "qualsim_spec_decode_num_draft_tokens_total")
		acc := metric(t, ts, "qualsim_spec_decode_num_accepted_tokens_total")
		if draft != 3*steps || steps+acc != 48 {
			t.Fatalf("acceptance %g: steps %v draft %v accepted %v: want draft = 3 steps and steps + accepted = 48 tokens", tc.acceptance, steps, draft, acc)
		}
		if tc.drafts >= 0 && steps != tc.drafts {
			t.Errorf("acceptance %g: %v steps, want %v", tc.acceptance, steps, tc.drafts)
		}
		if tc.drafts < 0 && (steps <= 12 || steps >= 48) {
			t.Errorf("acceptance %g: %v steps, want between 12 and 48", tc.acceptance, steps)
		}
	}
	ts := start(t, fastConfig(), true)
	if _, body := ts.get("/metrics"); strings.Contains(string(body), "spec_decode") {
		t.Error("spec_decode families exposed without a speculative-decoding model")
	}
}
