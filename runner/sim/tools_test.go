package sim_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/qualkit/qualkit/runner/sim"
)

var weatherTools = []map[string]any{
	{"type": "function", "function": map[string]any{"name": "get_time", "parameters": map[string]any{"type": "object", "properties": map[string]any{}}}},
	{"type": "function", "function": map[string]any{"name": "get_weather", "parameters": map[string]any{
		"type": "object",
		"properties": map[string]any{
			"city":  map[string]any{"type": "string"},
			"days":  map[string]any{"type": "integer"},
			"units": map[string]any{"type": "string", "enum": []any{"c", "f"}},
		},
		"required": []any{"city", "units"},
	}}},
}

// streamedCall reassembles a streamed tool call: its id, name, arguments and finish reason.
func streamedCall(t *testing.T, evs []event) (id, name, args, finish string) {
	t.Helper()
	var b strings.Builder
	for _, e := range evs {
		if e.data == "" || e.data == "[DONE]" {
			continue
		}
		for _, c := range e.json(t)["choices"].([]any) {
			c := c.(map[string]any)
			if f, ok := c["finish_reason"].(string); ok {
				finish = f
			}
			d, _ := c["delta"].(map[string]any)
			if s, _ := d["content"].(string); s != "" {
				t.Fatalf("content in a tool-call answer: %s", e.data)
			}
			calls, _ := d["tool_calls"].([]any)
			for _, call := range calls {
				call := call.(map[string]any)
				if v, ok := call["id"].(string); ok {
					if id != "" {
						t.Fatalf("a second call id in %s", e.data)
					}
					id = v
					name = call["function"].(map[string]any)["name"].(string)
				} else if id == "" {
					t.Fatalf("a fragment before the call's id: %s", e.data)
				}
				b.WriteString(call["function"].(map[string]any)["arguments"].(string))
			}
		}
	}
	return id, name, b.String(), finish
}

// TestToolCalls: a tool-calling model answers a request offering tools with one streamed call
// whose fragments reassemble into arguments valid for the chosen function (accuracy 1) or missing
// its first required property (accuracy 0); tool_choice "none" and a tool result get text; a cut
// at max_tokens finishes "length"; malformed tools are refused.
func TestToolCalls(t *testing.T) {
	cfg := fastConfig()
	cfg.Timing.TokensPerEvent = 3
	cfg.ToolCalls = sim.ToolCalls{Enabled: true, Accuracy: 1}
	ts := start(t, cfg, true)
	body := func(choice any, maxTokens int) map[string]any {
		b := chatBody("qualsim-tiny", "weather in Lisbon?", maxTokens)
		b["tools"] = weatherTools
		if choice != nil {
			b["tool_choice"] = choice
		}
		return b
	}
	_, evs, err := ts.stream("/v1/chat/completions", body(map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, 64))
	if err != nil {
		t.Fatal(err)
	}
	id, name, args, finish := streamedCall(t, evs)
	var got map[string]any
	if err := json.Unmarshal([]byte(args), &got); err != nil || id == "" || name != "get_weather" || finish != sim.FinishToolCalls {
		t.Fatalf("call %q %q(%s) finish %q: %v", id, name, args, finish, err)
	}
	if _, ok := got["city"].(string); !ok || (got["units"] != "c" && got["units"] != "f") || got["days"] == nil {
		t.Fatalf("arguments %s do not fit get_weather's parameters", args)
	}
	// Non-streamed, the same call.
	resp, b, err := ts.post("/v1/chat/completions", body(map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, 64))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("post: %v %v %s", resp, err, b)
	}
	var r struct {
		Choices []struct {
			Message struct {
				Content   *string
				ToolCalls []struct {
					Function struct{ Name, Arguments string }
				} `json:"tool_calls"`
			}
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if m := r.Choices[0].Message; m.Content != nil || len(m.ToolCalls) != 1 || m.ToolCalls[0].Function.Arguments != args || r.Choices[0].FinishReason != sim.FinishToolCalls {
		t.Fatalf("non-streamed answer %s; want the streamed call %s", b, args)
	}
	// auto: the first tool.
	if _, evs, _ = ts.stream("/v1/chat/completions", body("auto", 64)); true {
		if _, name, args, _ := streamedCall(t, evs); name != "get_time" || args != "{}" {
			t.Fatalf("auto: %s(%s); want get_time({})", name, args)
		}
	}
	// Cut at max_tokens.
	_, evs, _ = ts.stream("/v1/chat/completions", body(map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, 2))
	if _, _, cut, finish := streamedCall(t, evs); finish != sim.FinishLength || cut != args[:2*sim.TokenWidth] {
		t.Fatalf("cut call %q finish %q; want %q and length", cut, finish, args[:2*sim.TokenWidth])
	}
	// none, and after a tool result: text.
	for _, b := range []map[string]any{body("none", 4), body(nil, 4)} {
		if b["tool_choice"] == nil {
			b["messages"] = []map[string]any{{"role": "user", "content": "weather?"}, assistantCall("c1"), {"role": "tool", "tool_call_id": "c1", "content": "sunny"}}
		}
		_, evs, _ := ts.stream("/v1/chat/completions", b)
		if c := content(t, evs); len(c) != 4*sim.TokenWidth {
			t.Fatalf("tool_choice %v: text %q, want 4 tokens", b["tool_choice"], c)
		}
	}
	// Invalid arguments at accuracy 0: the first required property is missing.
	cfg.ToolCalls.Accuracy = 0
	bad := start(t, cfg, true)
	_, evs, _ = bad.stream("/v1/chat/completions", body(map[string]any{"type": "function", "function": map[string]any{"name": "get_weather"}}, 64))
	_, _, args, _ = streamedCall(t, evs)
	got = nil
	if err := json.Unmarshal([]byte(args), &got); err != nil || got["city"] != nil || got["units"] == nil {
		t.Fatalf("accuracy 0: arguments %s, want units without city", args)
	}
	for _, tc := range []struct {
		tools, choice any
	}{
		{[]any{map[string]any{"type": "code_interpreter"}}, nil},
		{[]any{map[string]any{"type": "function", "function": map[string]any{"name": "has space"}}}, nil},
		{append(weatherTools, weatherTools[0]), nil},
		{weatherTools, map[string]any{"type": "function", "function": map[string]any{"name": "not_offered"}}},
		{weatherTools, "sometimes"},
		{nil, "required"},
	} {
		b := chatBody("qualsim-tiny", "x", 4)
		if tc.tools != nil {
			b["tools"] = tc.tools
		}
		if tc.choice != nil {
			b["tool_choice"] = tc.choice
		}
		if resp, body, err := ts.post("/v1/chat/completions", b); err != nil || resp.StatusCode != 400 {
			t.Errorf("tools %v choice %v: %v %s; want 400", tc.tools, tc.choice, resp, body)
		}
	}
}

// assistantCall is an assistant message calling get_weather with id.
func assistantCall(id string) map[string]any {
	return map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": id, "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"city":"Lisbon"}`}}}}
}

// TestToolRounds: a model of Rounds 2 calls again after the first tool result of a user turn and
// answers in text after the second; a new user message starts the count again; tool messages
// that answer no open call, or lack tool_call_id, and misplaced tool fields are refused.
func TestToolRounds(t *testing.T) {
	cfg := fastConfig()
	cfg.ToolCalls = sim.ToolCalls{Enabled: true, Accuracy: 1, Rounds: 2}
	ts := start(t, cfg, true)
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	tool := func(id string) map[string]any {
		return map[string]any{"role": "tool", "tool_call_id": id, "content": "sunny"}
	}
	ask := func(msgs ...map[string]any) (calls bool, text string) {
		t.Helper()
		b := chatBody("qualsim-tiny", "x", 64)
		b["tools"], b["tool_choice"], b["messages"] = weatherTools, "required", msgs
		resp, body, err := ts.stream("/v1/chat/completions", b)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%v: %v %v", msgs, resp, err)
		}
		for _, e := range body {
			calls = calls || strings.Contains(e.data, `"tool_calls"`)
		}
		return calls, content(t, body)
	}
	if calls, _ := ask(user("weather?")); !calls {
		t.Fatal("turn start: no call")
	}
	if calls, _ := ask(user("weather?"), assistantCall("a"), tool("a")); !calls {
		t.Fatal("after one tool result of 2 rounds: no call")
	}
	if calls, text := ask(user("weather?"), assistantCall("a"), tool("a"), assistantCall("b"), tool("b")); calls || text == "" {
		t.Fatalf("after two tool results: calls %v, text %q; want text", calls, text)
	}
	if calls, _ := ask(user("weather?"), assistantCall("a"), tool("a"), assistantCall("b"), tool("b"), map[string]any{"role": "assistant", "content": "ok"}, user("and tomorrow?"), assistantCall("c"), tool("c")); !calls {
		t.Fatal("a new user turn's first tool result: no call")
	}
	for name, msgs := range map[string][]map[string]any{
		"no tool_call_id":  {user("x"), assistantCall("a"), {"role": "tool", "content": "sunny"}},
		"unknown id":       {user("x"), assistantCall("a"), tool("b")},
		"answered twice":   {user("x"), assistantCall("a"), tool("a"), tool("a")},
		"no call before":   {user("x"), tool("a")},
		"id on a user":     {{"role": "user", "content": "x", "tool_call_id": "a"}},
		"calls on a user":  {{"role": "user", "content": "x", "tool_calls": []any{}}},
		"call without id":  {user("x"), {"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}}, tool("a")},
		"empty tool_calls": {user("x"), {"role": "assistant", "content": "", "tool_calls": []any{}}},
	} {
		b := chatBody("qualsim-tiny", "x", 4)
		b["tools"], b["messages"] = weatherTools, msgs
		if resp, body, err := ts.post("/v1/chat/completions", b); err != nil || resp.StatusCode != 400 {
			t.Errorf("%s: %v %s; want 400", name, resp, body)
		}
	}
}
