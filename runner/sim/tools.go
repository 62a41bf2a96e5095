package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
)

// FinishToolCalls is the finish reason of an answer that calls a tool.
const FinishToolCalls = "tool_calls"

// toolChoiceNone is the tool_choice that offers no call.
const toolChoiceNone = "none" // not a contract value: OpenAI's tool_choice

// ToolCalls declares a tool-calling model. A chat request that offers tools, does not set
// tool_choice "none", and whose last message is not a tool result is answered with one call: to
// the function tool_choice names, else to the first tool offered. Its arguments are a JSON object
// with one value per property of the function's parameters (sorted by name; a value of the
// property's type or its first enum value, derived from the completion's tokens), so a request
// always gets the same call. With probability 1 - Accuracy (drawn from the prompt hash) the
// arguments are invalid: they lack the first required property, or, with none required, are cut
// in half. The arguments stream as TokenWidth-byte fragments, one per output token on the timing
// model (the first with the call's id and name), up to max_tokens (finish "length" when cut,
// else "tool_calls"); usage counts the fragments. After a tool result (a last message of role
// "tool") the model answers in text, unless the messages after the last user message hold fewer
// than Rounds assistant messages with tool calls: it then calls again (so a client that answers
// calls sees Rounds calling replies per user turn; 0 and 1 mean one).
//
// A chat request's tool messages are checked as a server checks them: each needs a tool_call_id
// naming a call of the assistant message before it (after its earlier tool messages) and
// content; an assistant message's tool_calls are function calls with an id, a name and
// arguments.
type ToolCalls struct {
	Enabled  bool
	Accuracy float64
	Rounds   int
}

// tool is one function a request offers.
type tool struct {
	name   string
	params toolParams
}

// toolParams is the part of a JSON Schema object qualsim reads to fill arguments.
type toolParams struct {
	Properties map[string]struct {
		Type any   `json:"type"`
		Enum []any `json:"enum"`
	} `json:"properties"`
	Required []string `json:"required"`
}

// toolCall is the call an answer makes.
type toolCall struct {
	id, name string
	valid    bool
}

var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// decodeTools reads a request's tools and tool_choice: at most MaxTools function tools with
// distinct valid names; tool_choice "none", "auto", "required" or a named function among them.
// It returns the tools and the chosen function's name ("" for auto or required, "none" for none).
func decodeTools(rawTools, rawChoice json.RawMessage) ([]tool, string, error) {
	rawTools, rawChoice = bytes.TrimSpace(rawTools), bytes.TrimSpace(rawChoice)
	if len(rawTools) == 0 || string(rawTools) == "null" {
		if len(rawChoice) != 0 && string(rawChoice) != "null" && string(rawChoice) != `"`+toolChoiceNone+`"` {
			return nil, "", badRequest("tool_choice", "tool_choice needs tools")
		}
		return nil, toolChoiceNone, nil
	}
	var wire []struct {
		Type     string `json:"type"`
		Function *struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	if err := json.Unmarshal(rawTools, &wire); err != nil {
		return nil, "", badRequest("tools", "tools: want an array of function tools: %v", err)
	}
	if len(wire) == 0 || len(wire) > MaxTools {
		return nil, "", badRequest("tools", "tools: want 1 to %d tools, have %d", MaxTools, len(wire))
	}
	tools := make([]tool, 0, len(wire))
	for i, w := range wire {
		if w.Type != "function" || w.Function == nil {
			return nil, "", badRequest(fmt.Sprintf("tools[%d]", i), "tools[%d]: only function tools are supported", i)
		}
		if !toolName.MatchString(w.Function.Name) {
			return nil, "", badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d]: function name %.80q: want 1 to 64 of A-Z a-z 0-9 _ -", i, w.Function.Name)
		}
		if slices.ContainsFunc(tools, func(t tool) bool { return t.name == w.Function.Name }) {
			return nil, "", badRequest(fmt.Sprintf("tools[%d].function.name", i), "tools[%d]: function %q offered twice", i, w.Function.Name)
		}
		t := tool{name: w.Function.Name}
		if p := bytes.TrimSpace(w.Function.Parameters); len(p) > 0 && string(p) != "null" {
			if err := json.Unmarshal(p, &t.params); err != nil {
				return nil, "", badRequest(fmt.Sprintf("tools[%d].function.parameters", i), "tools[%d]: parameters: want a JSON Schema object: %v", i, err)
			}
		}
		tools = append(tools, t)
	}
	if len(rawChoice) == 0 || string(rawChoice) == "null" {
		return tools, "", nil
	}
	if rawChoice[0] == '"' {
		var s string
		if err := json.Unmarshal(rawChoice, &s); err != nil || (s != toolChoiceNone && s != "auto" && s != "required") {
			return nil, "", badRequest("tool_choice", `tool_choice: want "none", "auto", "required" or a named function`)
		}
		if s != toolChoiceNone {
			s = ""
		}
		return tools, s, nil
	}
	var named struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if err := json.Unmarshal(rawChoice, &named); err != nil || named.Type != "function" {
		return nil, "", badRequest("tool_choice", `tool_choice: want "none", "auto", "required" or {"type":"function","function":{"name":...}}`)
	}
	if !slices.ContainsFunc(tools, func(t tool) bool { return t.name == named.Function.Name }) {
		return nil, "", badRequest("tool_choice", "tool_choice names function %.80q, which tools does not offer", named.Function.Name)
	}
	return tools, named.Function.Name, nil
}

// wireToolCall is an assistant message's function call as a request re-sends it.
type wireToolCall struct {
	ID       *string `json:"id"`
	Type     string  `json:"type"`
	Function *struct {
		Name      *string `json:"name"`
		Arguments *string `json:"arguments"`
	} `json:"function"`
}

// checkToolMessages checks the tool messages of a chat request's messages against the calls of
// the assistant messages before them (see ToolCalls) and returns the number of assistant
// messages with tool calls after the last user message (the rounds of the current turn).
func checkToolMessages(msgs []wireMessage) (int, error) {
	var open []string // the ids of the last assistant message's calls not yet answered
	rounds := 0
	for i, m := range msgs {
		at := fmt.Sprintf("messages[%d]", i)
		if m.Role != "tool" && m.ToolCallID != nil {
			return 0, badRequest(at+".tool_call_id", "%s: tool_call_id goes with role tool only", at)
		}
		if m.Role != "assistant" && m.ToolCalls != nil {
			return 0, badRequest(at+".tool_calls", "%s: tool_calls goes with role assistant only", at)
		}
		switch m.Role {
		case "user":
			open, rounds = nil, 0
		case "assistant":
			open = nil
			if len(bytes.TrimSpace(m.ToolCalls)) == 0 || string(bytes.TrimSpace(m.ToolCalls)) == "null" {
				continue
			}
			var calls []wireToolCall
			if err := json.Unmarshal(m.ToolCalls, &calls); err != nil || len(calls) == 0 || len(calls) > MaxToolCalls {
				return 0, badRequest(at+".tool_calls", "%s.tool_calls: want 1 to %d function calls", at, MaxToolCalls)
			}
			for k, c := range calls {
				if c.ID == nil || c.Type != "function" || c.Function == nil || c.Function.Name == nil || c.Function.Arguments == nil {
					return 0, badRequest(fmt.Sprintf("%s.tool_calls[%d]", at, k), "%s.tool_calls[%d]: want {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", at, k)
				}
				open = append(open, *c.ID)
			}
			rounds++
		case "tool":
			if m.ToolCallID == nil {
				return 0, badRequest(at+".tool_call_id", "%s: a tool message needs tool_call_id", at)
			}
			k := slices.Index(open, *m.ToolCallID)
			if k < 0 {
				return 0, badRequest(at+".tool_call_id", "%s: tool_call_id %.80q answers no open call of the assistant message before it", at, *m.ToolCallID)
			}
			open = slices.Delete(open, k, k+1)
		default:
			open = nil
		}
	}
	return rounds, nil
}

// callTool turns j's generation into a tool call when the model calls one (see ToolCalls).
func (j *job) callTool(seq uint64) {
	tc, q := j.s.cfg.ToolCalls, j.q
	if !tc.Enabled || !q.chat || q.toolChoice == toolChoiceNone || len(q.tools) == 0 {
		return
	}
	if msgs := q.prompt.Messages; len(msgs) > 0 && msgs[len(msgs)-1].Role == "tool" && q.toolRounds >= max(tc.Rounds, 1) {
		return
	}
	t := q.tools[0]
	for _, c := range q.tools {
		if c.name == q.toolChoice {
			t = c
		}
	}
	call := &toolCall{id: "call_qs_" + strconv.FormatUint(seq, 10), name: t.name, valid: unitFloat(splitmix64(j.gen.hash^0x7f4a7c15)) < tc.Accuracy}
	args := toolArguments(t.params, j.gen.Start, call.valid)
	n := (len(args) + TokenWidth - 1) / TokenWidth
	finish := FinishToolCalls
	if n > q.maxTokens {
		n, finish = q.maxTokens, FinishLength
		args = args[:n*TokenWidth]
	}
	j.call = call
	j.gen.Text, j.gen.Tokens, j.gen.Finish = args, n, finish
}

// toolArguments renders the arguments of a call to a function with parameters p: one value per
// property, derived from start; invalid ones lack the first required property, or are cut in
// half when none is required.
func toolArguments(p toolParams, start int, valid bool) string {
	names := make([]string, 0, len(p.Properties))
	for name := range p.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	drop := ""
	if !valid && len(p.Required) > 0 {
		drop = p.Required[0]
	}
	args := map[string]any{}
	for i, name := range names {
		if name == drop {
			continue
		}
		prop, v := p.Properties[name], (start+i)%tokenModulus
		typ, _ := prop.Type.(string)
		switch {
		case len(prop.Enum) > 0:
			args[name] = prop.Enum[v%len(prop.Enum)]
		case typ == "integer":
			args[name] = v
		case typ == "number":
			args[name] = float64(v) / 100
		case typ == "boolean":
			args[name] = v%2 == 0
		case typ == "array":
			args[name] = []any{}
		case typ == "object":
			args[name] = map[string]any{}
		default:
			args[name] = fmt.Sprintf("v%05d", v)
		}
	}
	b, _ := json.Marshal(args)
	if !valid && drop == "" {
		b = b[:len(b)/2]
	}
	return string(b)
}
