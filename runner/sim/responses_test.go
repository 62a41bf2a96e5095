package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/runner/sim"
)

// responsesEvents checks a Responses API stream's framing (every event named, its data's type the
// same, sequence numbers 0, 1, 2, ..., no [DONE]) and returns the event types, the text and
// reasoning deltas joined, and the final response object.
func responsesEvents(t *testing.T, evs []event) (types []string, text, reasoning string, final map[string]any) {
	t.Helper()
	var tb, rb strings.Builder
	for i, e := range evs {
		name, data, ok := strings.Cut(e.raw, "\n")
		if !ok || !strings.HasPrefix(name, "event: ") || !strings.HasPrefix(data, "data: ") {
			t.Fatalf("event %d is not a named event: %q", i, e.raw)
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &m); err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
		typ := strings.TrimPrefix(name, "event: ")
		if m["type"] != typ || m["sequence_number"] != float64(i) {
			t.Fatalf("event %d: type %v sequence %v; want %s and %d", i, m["type"], m["sequence_number"], typ, i)
		}
		types = append(types, typ)
		switch typ {
		case "response.output_text.delta":
			tb.WriteString(m["delta"].(string))
		case "response.reasoning_text.delta":
			rb.WriteString(m["delta"].(string))
		case "response.completed", "response.incomplete":
			final = m["response"].(map[string]any)
		}
	}
	return types, tb.String(), rb.String(), final
}

// TestResponsesAPI: /v1/responses streams the same completion the chat endpoint gives the same
// messages, as named events in the documented order with usage in response.completed; a
// reasoning model adds a reasoning item before the message; max_output_tokens ends in
// response.incomplete; a non-streamed answer is the final response object; bad input is refused.
func TestResponsesAPI(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.TokensPerEvent = 2
	ts := start(t, cfg, true)
	chat := chatBody("qualsim-tiny", "hello there", 6)
	chat["messages"] = []map[string]any{{"role": "system", "content": "be brief"}, {"role": "user", "content": "hello there"}}
	_, evs, err := ts.stream("/v1/chat/completions", chat)
	if err != nil {
		t.Fatal(err)
	}
	want := content(t, evs)
	body := map[string]any{"model": "qualsim-tiny", "instructions": "be brief", "input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hello there"}}}}, "max_output_tokens": 6, "ignore_eos": true}
	_, evs, err = ts.stream("/v1/responses", body)
	if err != nil {
		t.Fatal(err)
	}
	types, text, reasoning, final := responsesEvents(t, evs)
	order := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
		"response.output_text.delta", "response.output_text.delta", "response.output_text.delta", "response.output_text.delta",
		"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.incomplete"}
	if strings.Join(types, " ") != strings.Join(order, " ") {
		t.Fatalf("events %v\nwant %v", types, order)
	}
	if text != want || reasoning != "" {
		t.Fatalf("text %q reasoning %q; want the chat completion %q", text, reasoning, want)
	}
	u := final["usage"].(map[string]any)
	if final["status"] != "incomplete" || u["output_tokens"] != 6.0 || u["input_tokens"].(float64) < 1 || u["total_tokens"] != u["input_tokens"].(float64)+6 {
		t.Fatalf("final response %v", final)
	}

	cfg.Reasoning = sim.Reasoning{Tokens: 3}
	cfg.EOSAfter = 5
	rs := start(t, cfg, true)
	body["ignore_eos"] = false
	_, evs, err = rs.stream("/v1/responses", body)
	if err != nil {
		t.Fatal(err)
	}
	types, text, reasoning, final = responsesEvents(t, evs)
	if types[2] != "response.output_item.added" || types[3] != "response.reasoning_text.delta" || types[len(types)-1] != "response.completed" {
		t.Fatalf("reasoning stream events %v", types)
	}
	if reasoning+text != want[:5*sim.TokenWidth] || len(strings.Fields(reasoning)) != 3 {
		t.Fatalf("reasoning %q text %q; want 3 reasoning tokens then 2 of %q", reasoning, text, want)
	}
	u = final["usage"].(map[string]any)
	if final["status"] != "completed" || u["output_tokens"] != 5.0 || u["output_tokens_details"].(map[string]any)["reasoning_tokens"] != 3.0 {
		t.Fatalf("final response %v", final)
	}
	out := final["output"].([]any)
	if len(out) != 2 || out[0].(map[string]any)["type"] != "reasoning" || out[1].(map[string]any)["type"] != "message" {
		t.Fatalf("output items %v", out)
	}

	body["stream"] = false
	resp, b, err := rs.post("/v1/responses", body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("non-streamed: %v %v %s", resp, err, b)
	}
	var whole map[string]any
	if err := json.Unmarshal(b, &whole); err != nil || whole["object"] != "response" || whole["status"] != "completed" {
		t.Fatalf("non-streamed answer %s: %v", b, err)
	}
	if msg := whole["output"].([]any)[1].(map[string]any); msg["content"].([]any)[0].(map[string]any)["text"] != text {
		t.Fatalf("non-streamed message %v; want text %q", msg, text)
	}

	for _, bad := range []map[string]any{
		{"model": "qualsim-tiny"},
		{"model": "qualsim-tiny", "input": 7},
		{"model": "qualsim-tiny", "input": []any{map[string]any{"type": "function_call_output", "output": "x"}}},
		{"model": "qualsim-tiny", "input": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_image", "image_url": "x"}}}}},
		{"model": "qualsim-tiny", "input": "x", "max_output_tokens": 0},
		{"model": "qualsim-tiny", "input": "x", "tools": []any{map[string]any{"type": "function", "name": "f"}}},
	} {
		if resp, b, err := ts.post("/v1/responses", bad); err != nil || resp.StatusCode != 400 {
			t.Errorf("%v: %v %s; want 400", bad, resp, b)
		}
	}
}
